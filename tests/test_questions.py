import pytest

from ragcore.access import users
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
    return users.create_user(db, "mehmet", "isg", "parola-123"), users.create_user(db, "ayse", "ik", "parola-123")


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
