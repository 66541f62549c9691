import pytest

from ragcore.access import create_user
from ragcore.answer import (
    QuestionLogError,
    mark_resolved,
    question_record,
    review_queue,
    set_feedback,
)
from ragcore.answer.questions import insert_question
from ragcore.core import Source
from tests.questions_support import logged_questions

SOURCE = Source(1, 5, 2, "Kanun", "kanun.pdf", 7, 8, "Madde 10", 0.5, "metin")


@pytest.fixture()
def people(db):
    return create_user(db, "mehmet", "isg", "parola-123"), create_user(db, "ayse", "ik", "parola-123")


def _log(db, user, status="answered", **kw) -> str:
    """One row written as the answer service writes it; its public id."""
    return insert_question(db, question_record(user, "soru?", answer="cevap", status=status, generator="extractive",
                                               llm_called=False, **kw))


def test_a_logged_question_keeps_its_outcome(db, people) -> None:
    mehmet, ayse = people
    first = _log(db, mehmet, sources=[SOURCE], retrieval_ms=12.5, first_token_ms=30.0, total_ms=40.0)
    second = _log(db, mehmet, status="needs_review")
    _log(db, ayse)
    recent = logged_questions(db, "mehmet")
    assert [q.public_id for q in recent] == [second, first]
    logged = recent[1]
    assert logged.role == "isg" and logged.retrieval_ms == 12.5 and logged.total_ms == 40.0
    assert logged.sources[0]["chunk_id"] == 5 and logged.sources[0]["article"] == "Madde 10"
    with pytest.raises(ValueError):
        _log(db, mehmet, status="weird")


def test_only_the_asker_can_rate(db, people) -> None:
    mehmet, ayse = people
    qid = _log(db, mehmet)
    with pytest.raises(QuestionLogError, match="size ait değil"):
        set_feedback(db, qid, "ayse", -1, "yanlış")
    with pytest.raises(QuestionLogError):
        set_feedback(db, qid, "mehmet", 0)
    set_feedback(db, qid, "mehmet", -1, "  eksik  ")
    logged = logged_questions(db, "mehmet")[0]
    assert logged.feedback == -1 and logged.feedback_comment == "eksik"


def test_review_queue_and_resolve(db, people) -> None:
    mehmet, _ = people
    answered_ok = _log(db, mehmet)
    set_feedback(db, answered_ok, "mehmet", 1)
    refused = _log(db, mehmet, status="needs_review")
    disliked = _log(db, mehmet)
    set_feedback(db, disliked, "mehmet", -1)
    _log(db, mehmet, status="fallback")
    queue = review_queue(db)
    assert [q.public_id for q in queue] == [disliked, refused]
    mark_resolved(db, queue[1].id, "admin")  # the admin's page, by the row's key
    assert [q.public_id for q in review_queue(db)] == [disliked]
    with pytest.raises(QuestionLogError):
        mark_resolved(db, queue[1].id, "admin")
    assert logged_questions(db, "mehmet")[2].resolved_by == "admin"


# ----------------------------------------------------------------------------- the grouped queue (issue 41)


def _ask(db, user, question: str, outcome: str, status: str = "needs_review") -> str:
    return insert_question(db, question_record(user, question, answer=None, status=status, generator=None,
                                               llm_called=False, outcome=outcome))


def test_the_same_question_asked_three_times_is_one_group_and_off_topic_ones_sit_apart(db, people) -> None:
    """Case, Turkish letters, suffixes and punctuation do not split a question; the group counts
    its askings, its first and last time and the roles that asked, and ranks first; questions the
    gate refused with nothing related are listed apart."""
    from ragcore.answer import question_key, review_groups

    mehmet, ayse = people
    _ask(db, mehmet, "Maaşım yatmadı mı?", "refused")
    _ask(db, ayse, "maasim yatmadi", "closest")
    _ask(db, mehmet, "MAAŞIM YATMADI!", "refused")
    _ask(db, ayse, "Maaş ne zaman yatar?", "closest")  # another question
    _ask(db, mehmet, "Yarın İstanbul'da hava nasıl olacak?", "refused")
    _ask(db, ayse, "Bu hafta yemekhanede ne var?", "refused")
    _ask(db, ayse, "Bu hafta yemekhanede ne var", "refused")
    queue = review_groups(db)
    assert [(g.question, g.count) for g in queue.groups] == [("MAAŞIM YATMADI!", 3), ("Maaş ne zaman yatar?", 1)]
    salary = queue.groups[0]
    assert salary.roles == ("isg", "ik") and salary.first_at < salary.last_at and salary.rated_down == 0
    assert [(g.question, g.count) for g in queue.off_topic] == [("Bu hafta yemekhanede ne var", 2),
                                                                ("Yarın İstanbul'da hava nasıl olacak?", 1)]
    assert queue.open_items == 7
    assert question_key("Maaşım yatmadı mı?") == question_key("maasim yatmadi") != question_key("Maaş ne zaman yatar?")


def test_a_rated_down_answer_is_never_off_topic_and_ranks_before_an_equally_asked_gap(db, people) -> None:
    from ragcore.answer import review_groups

    mehmet, ayse = people
    _ask(db, mehmet, "Kıdem tazminatı nasıl hesaplanır?", "closest")
    rated = _ask(db, ayse, "Yıllık izin kaç gün?", "answer", status="answered")
    set_feedback(db, rated, "ayse", -1, "eksik")
    _ask(db, mehmet, "Yıllık izin kaç gün?", "refused")  # refused once, rated down once: not off-topic
    _ask(db, ayse, "Kıdem tazminatı nasıl hesaplanır", "closest")
    queue = review_groups(db)
    # asked as often, the rated-down one first; the refused asking does not make it off-topic
    assert [(g.question, g.count, g.rated_down) for g in queue.groups] == [
        ("Yıllık izin kaç gün?", 2, 1), ("Kıdem tazminatı nasıl hesaplanır", 2, 0)]
    assert queue.off_topic == []


def test_a_group_is_resolved_whole_and_an_upload_for_one_asking_resolves_its_look_alikes(db, people) -> None:
    from ragcore.answer import mark_group_resolved, resolve_alike, review_groups

    mehmet, ayse = people
    for text in ("Kreş yardımı var mı?", "kres yardimi var mi", "Kreş yardımı var mı"):
        _ask(db, mehmet, text, "refused")
    _ask(db, ayse, "Servis saatleri ne?", "refused")
    _ask(db, ayse, "Servis saatleri nedir?", "refused")  # one word apart: another group
    (kres, *_) = [g for g in review_groups(db).off_topic if g.count == 3]
    assert mark_group_resolved(db, kres.ids, "admin") == 3
    with pytest.raises(QuestionLogError):
        mark_group_resolved(db, kres.ids, "admin")  # nothing open any more
    first = [g for g in review_groups(db).off_topic if g.question == "Servis saatleri ne?"][0]
    assert resolve_alike(db, first.newest.id, "admin") == 1  # "nedir" is another question
    assert [g.question for g in review_groups(db).off_topic] == ["Servis saatleri nedir?"]
