"""Saved conversations on the real database: asking in one, follow-ups answered as standalone
questions, what each user may see of them (their own only; an admin neither), history after a
role change or a deleted document, the caps, the retention job, and the export of a stored
conversation.

The corpus is small and built here: a labour-law document two roles may read (an article whose
second chunk does not repeat its heading, so the heading is looked up) and a document only
`ik` may read, whose every sentence carries the marker GIZLIKOD.
"""

from __future__ import annotations

import io
import time
from datetime import timedelta

import pypdf
import pytest

from ragcore import jobs
from ragcore.access import users
from ragcore.answer import AnswerService, ExtractiveGenerator, QuestionError
from ragcore.conversations import (
    HIDDEN_ANSWER,
    MAX_TITLE_CHARS,
    METHOD_NONE,
    METHOD_RULES,
    ConversationError,
    ConversationFull,
    ConversationNotFound,
    InvalidTitle,
    Resolution,
    ask_in_conversation,
    delete_conversation,
    export_conversation,
    get_conversation,
    list_conversations,
    prepare_turn,
    record_turn,
    rename_conversation,
    turn_of,
)
from ragcore.documents import delete_document
from ragcore.jobs import worker as job_worker
from tests.questions_support import logged_questions
from tests.retrieval_support import DocSpec, clean, insert_document, make_test_embedder

MARK = "GIZLIKOD"
LEAVE_FIRST = ("Analık halinde çalışma ve süt izni\nMADDE 74 – (1) Kadın işçilerin doğumdan önce sekiz ve doğumdan "
               "sonra sekiz hafta olmak üzere toplam on altı haftalık süre için çalıştırılmamaları esastır. Çoğul "
               "gebelik halinde doğumdan önce çalıştırılmayacak sekiz haftalık süreye iki hafta süre eklenir.")
LEAVE_NEXT = ("(2) Kadın işçilere bir yaşından küçük çocuklarını emzirmeleri için günde toplam bir buçuk saat süt "
              "izni verilir. Bu sürenin hangi saatler arasında kullanılacağını işçi kendisi belirler.")
ANNUAL = ("Yıllık ücretli izin hakkı ve izin süreleri\nMADDE 53 – İşyerinde işe başladığı günden itibaren, deneme "
          "süresi de içinde olmak üzere, en az bir yıl çalışmış olan işçilere yıllık ücretli izin verilir. Hizmet "
          "süresi beş yıla kadar olanlara on dört günden az olamaz.")
SECRET = (f"Doğum izni ikramiyesi {MARK}\nMADDE 5 – Doğum izni kullanan işçiye {MARK} iki maaş tutarında doğum "
          f"ikramiyesi ödenir. İkramiyeyi {MARK} insan kaynakları öder.")
FIRST_QUESTION = "Hamileyim, doğum izni kaç hafta?"


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


@pytest.fixture(scope="module")
def corpus(session_db, embedder):
    clean(session_db)
    law = insert_document(session_db, embedder, DocSpec("İş Kanunu", ("ik", "personel"), (
        (LEAVE_FIRST, 31, "Madde 74"), (LEAVE_NEXT, 32, "Madde 74"), (ANNUAL, 20, "Madde 53"))))
    secret = insert_document(session_db, embedder, DocSpec(f"Yönetmelik {MARK}", ("ik",), ((SECRET, 2, "Madde 5"),)))
    for name, role in (("ayse", "ik"), ("zeynep", "ik"), ("mehmet", "personel"), ("admin", "admin")):
        users.create_user(session_db, name, role, "parola-1234")
    return {"law": law, "secret": secret}


@pytest.fixture()
def db(session_db, corpus):
    """The corpus as the module built it, without any conversation, question or job of an earlier test."""
    with session_db.connection() as conn:
        conn.execute("TRUNCATE conversations, questions, jobs, procrastinate_jobs CASCADE")
    for name, role in (("ayse", "ik"), ("zeynep", "ik"), ("mehmet", "personel"), ("admin", "admin")):
        users.set_role(session_db, name, role)
    return session_db


@pytest.fixture()
def service(db, settings, embedder) -> AnswerService:
    return AnswerService(db, settings.replace(refusal_threshold=0.0), embedder, ExtractiveGenerator(embedder))


def person(db, name: str):
    return users.get_user(db, name)


def everything(conversation) -> str:
    """Every text a conversation shows, for leak scans."""
    parts = [conversation.title]
    for turn in conversation.turns:
        parts += [turn.question, turn.resolved_question, turn.answer_text, turn.shown or ""]
        parts += [f"{c.title} {c.article} {c.heading} {c.locator} {c.filename}" for c in turn.citations]
    return "\n".join(parts)


# ----------------------------------------------------------------------------- asking in a conversation


def test_a_question_and_a_follow_up_in_one_conversation(db, service) -> None:
    ayse = person(db, "ayse")
    conversation, first, answer = ask_in_conversation(service, ayse, None, FIRST_QUESTION)
    assert conversation.title == FIRST_QUESTION and conversation.turn_count == 1
    assert (first.position, first.method, first.resolved_question) == (1, METHOD_NONE, FIRST_QUESTION)
    assert answer.question == FIRST_QUESTION and first.answer_text == answer.text
    assert first.citations and first.citations[0].number == 1
    cited = first.citations[0]
    assert (cited.title, cited.article, cited.heading) == ("İş Kanunu", "Madde 74", "Analık halinde çalışma ve süt izni")
    assert cited.version is not None and len(cited.version.sha256) == 64 and cited.version.uploaded_at is not None

    conversation, second, answer = ask_in_conversation(service, ayse, conversation.id, "Peki doğumdan sonra?")
    assert conversation.turn_count == 2 and second.position == 2 and second.method == METHOD_RULES
    assert second.resolved_question == "Doğumdan sonra? (hamileyim doğum izni hafta)"  # the user's words alone
    assert second.shown == "Şöyle anladım: " + second.resolved_question
    # Retrieval, the gate and the log worked on the resolved question, as on a typed one.
    assert answer.question == second.resolved_question
    logged = logged_questions(db, "ayse")
    assert [row.question for row in logged] == [second.resolved_question, FIRST_QUESTION]
    assert [t.question_id for t in get_conversation(db, service.settings, ayse, conversation.id).turns] == \
        [row.public_id for row in reversed(logged)]  # each turn links its row of the questions log


def test_the_heading_of_a_continuing_chunk_is_looked_up(db, service) -> None:
    """The cited chunk continues Madde 74 without its heading: the turn still knows the article's title."""
    ayse = person(db, "ayse")
    answer = service.ask(ayse, "Emzirme için günde kaç saat süt izni verilir?")
    turn = turn_of(db, "Emzirme için günde kaç saat süt izni verilir?", Resolution.as_typed("x"), answer)
    continuing = [c for c in turn.citations if c.page_start == 32]
    assert continuing and continuing[0].heading == "Analık halinde çalışma ve süt izni"


def test_a_stream_is_recorded_after_it_completes(db, service) -> None:
    """The chat page's way: prepare, stream the resolved question, then record."""
    ayse = person(db, "ayse")
    conversation, _, _ = ask_in_conversation(service, ayse, None, FIRST_QUESTION)
    prepared = prepare_turn(service, ayse, conversation.id, "ikiz olursa?")
    assert prepared.resolution.rewritten and prepared.question == "ikiz olursa?"
    stream = service.stream(ayse, prepared.resolution.question)
    streamed = "".join(stream)
    assert get_conversation(db, service.settings, ayse, conversation.id).turn_count == 1  # nothing stored yet
    conversation, turn = record_turn(service, ayse, prepared, stream.answer)
    assert conversation.turn_count == 2 and turn.answer_text == stream.answer.text and streamed
    assert turn.question == "ikiz olursa?" and turn.resolved_question.startswith("İkiz olursa? (")


def test_an_invalid_question_or_conversation_is_refused_before_anything_is_answered(db, service) -> None:
    ayse = person(db, "ayse")
    with pytest.raises(QuestionError, match="boş soru"):
        prepare_turn(service, ayse, None, "   ")
    for wrong in ("17", "bir-şey", "00000000-0000-4000-8000-000000000000"):
        with pytest.raises(ConversationNotFound, match="Sohbet bulunamadı ya da size ait değil"):
            ask_in_conversation(service, ayse, wrong, FIRST_QUESTION)
    assert logged_questions(db, "ayse") == []


def test_a_long_first_question_makes_a_capped_title(db, service) -> None:
    question = "Doğum izni hakkında " + "çok uzun bir açıklama ile " * 20 + "kaç hafta izin alırım?"
    conversation, _, _ = ask_in_conversation(service, person(db, "ayse"), None, question)
    assert len(conversation.title) <= MAX_TITLE_CHARS and conversation.title.endswith("…")
    assert conversation.title.startswith("Doğum izni hakkında çok uzun")


def test_a_conversation_holds_at_most_its_cap_of_turns(db, service) -> None:
    capped = AnswerService(db, service.settings.replace(conversation_max_turns=2), service.embedder, service.generator)
    ayse = person(db, "ayse")
    conversation, _, _ = ask_in_conversation(capped, ayse, None, FIRST_QUESTION)
    prepared = prepare_turn(capped, ayse, conversation.id, "Peki doğumdan sonra?")  # the 2nd fits
    late = prepare_turn(capped, ayse, conversation.id, "ikiz olursa?")  # checked before the 2nd was stored
    record_turn(capped, ayse, prepared, capped.ask(ayse, prepared.resolution.question))
    with pytest.raises(ConversationFull, match="en fazla 2 soru tutabilir"):
        prepare_turn(capped, ayse, conversation.id, "ikiz olursa?")
    with pytest.raises(ConversationFull):  # the race: the cap holds when the turn is stored too
        record_turn(capped, ayse, late, capped.ask(ayse, late.resolution.question))
    assert get_conversation(db, capped.settings, ayse, conversation.id).turn_count == 2


# ----------------------------------------------------------------------------- whose conversations


def test_a_user_sees_only_their_own_and_an_admin_sees_none(db, service) -> None:
    ayse, zeynep, admin = person(db, "ayse"), person(db, "zeynep"), person(db, "admin")
    mine, _, _ = ask_in_conversation(service, ayse, None, FIRST_QUESTION)
    settings = service.settings
    assert [c.id for c in list_conversations(db, settings, ayse)] == [mine.id]
    for other in (zeynep, admin):
        assert list_conversations(db, settings, other) == []
        for action in (lambda u: get_conversation(db, settings, u, mine.id),
                       lambda u: rename_conversation(db, settings, u, mine.id, "Benim"),
                       lambda u: export_conversation(db, settings, u, mine.id, "md"),
                       lambda u: delete_conversation(db, u, mine.id),
                       lambda u: prepare_turn(service, u, mine.id, "Peki doğumdan sonra?")):
            with pytest.raises(ConversationNotFound) as refused:
                action(other)
            assert str(refused.value) == "Sohbet bulunamadı ya da size ait değil."
    theirs, _, _ = ask_in_conversation(service, admin, None, "Yıllık izin kaç gündür?")
    assert [c.id for c in list_conversations(db, settings, admin)] == [theirs.id]
    assert [c.id for c in list_conversations(db, settings, ayse)] == [mine.id]
    assert get_conversation(db, settings, ayse, mine.id).turns[0].question == FIRST_QUESTION


def test_rename_list_order_and_delete(db, service) -> None:
    ayse, settings = person(db, "ayse"), service.settings
    older, _, _ = ask_in_conversation(service, ayse, None, FIRST_QUESTION)
    newer, _, _ = ask_in_conversation(service, ayse, None, "Yıllık izin kaç gündür?")
    assert [c.id for c in list_conversations(db, settings, ayse)] == [newer.id, older.id]
    ask_in_conversation(service, ayse, older.id, "Peki doğumdan sonra?")  # a new turn moves it up
    assert [c.id for c in list_conversations(db, settings, ayse)] == [older.id, newer.id]
    assert [c.id for c in list_conversations(db, settings, ayse, limit=1)] == [older.id]

    renamed = rename_conversation(db, settings, ayse, older.id, "  Doğum\nizni  ")
    assert renamed.title == "Doğum izni" and get_conversation(db, settings, ayse, older.id).title == "Doğum izni"
    with pytest.raises(InvalidTitle, match="boş olamaz"):
        rename_conversation(db, settings, ayse, older.id, " \n ")
    with pytest.raises(InvalidTitle, match=f"en fazla {MAX_TITLE_CHARS} karakter.*şu an 121"):
        rename_conversation(db, settings, ayse, older.id, "x" * 121)

    delete_conversation(db, ayse, older.id)
    assert [c.id for c in list_conversations(db, settings, ayse)] == [newer.id]
    with pytest.raises(ConversationNotFound):
        delete_conversation(db, ayse, older.id)
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM conversation_turns").fetchone()[0] == 1  # the other's only
    assert len(logged_questions(db, "ayse")) == 3  # the questions log keeps its rows


def test_an_inactive_account_gets_nothing(db, service) -> None:
    ayse = person(db, "ayse")
    mine, _, _ = ask_in_conversation(service, ayse, None, FIRST_QUESTION)
    users.set_active(db, "ayse", False)
    try:
        with pytest.raises(ConversationError, match="devre dışı"):
            get_conversation(db, service.settings, ayse, mine.id)
        with pytest.raises(ConversationError, match="devre dışı"):
            list_conversations(db, service.settings, ayse)
    finally:
        users.set_active(db, "ayse", True)


# ----------------------------------------------------------------------------- history the user can no longer read


def _secret_conversation(db, service):
    ayse = person(db, "ayse")
    conversation, turn, _ = ask_in_conversation(service, ayse, None, f"Doğum izni ikramiyesi {MARK} ne kadar?")
    assert any(c.title == f"Yönetmelik {MARK}" for c in turn.citations), turn.citations
    assert MARK in everything(get_conversation(db, service.settings, ayse, conversation.id))  # the control
    return ayse, conversation


def test_a_role_change_hides_what_the_new_role_cannot_read(db, service) -> None:
    ayse, conversation = _secret_conversation(db, service)
    users.set_role(db, "ayse", "personel")
    reopened = get_conversation(db, service.settings, ayse, conversation.id)
    turn = reopened.turns[0]
    assert turn.hidden and turn.answer_text == HIDDEN_ANSWER
    assert all(c.title != f"Yönetmelik {MARK}" for c in turn.citations)
    assert MARK not in everything(reopened).replace(turn.question, "").replace(reopened.title, "")
    # The follow-up's rewrite carries the user's own words, nothing of that document.
    prepared = prepare_turn(service, ayse, conversation.id, "Peki bunu kim öder?")
    assert "ikramiyesi" in prepared.resolution.question and "Madde 5" not in prepared.resolution.question
    for fmt in ("md", "pdf"):
        file = export_conversation(db, service.settings, ayse, conversation.id, fmt)
        raw = file.data.decode() if fmt == "md" else "".join(
            page.extract_text() for page in pypdf.PdfReader(io.BytesIO(file.data)).pages)
        text = " ".join(raw.split())
        assert " ".join(HIDDEN_ANSWER.split()) in text
        assert MARK not in text.replace(turn.question, ""), fmt  # only where the user typed it
    users.set_role(db, "ayse", "ik")
    assert not get_conversation(db, service.settings, ayse, conversation.id).turns[0].hidden  # readable again


def test_a_deleted_document_leaves_nothing_in_the_history(db, service, settings, embedder, corpus) -> None:
    ayse, conversation = _secret_conversation(db, service)
    follow = ask_in_conversation(service, ayse, conversation.id, "Peki bunu kim öder?")[1]
    assert "ikramiyesi" in follow.resolved_question  # the first question's words, carried
    delete_document(db, settings, corpus["secret"])
    try:
        reopened = get_conversation(db, service.settings, ayse, conversation.id)
        first, second = reopened.turns
        assert first.hidden and first.answer_text == HIDDEN_ANSWER
        # A rewrite after a turn that is hidden now is shown as typed (one stored before round 16
        # carried the cited article's heading; the language model's carried the answer).
        assert second.resolved_question == second.question and second.method == METHOD_NONE
        leaks = everything(reopened)
        for typed in (first.question, second.question, reopened.title):
            leaks = leaks.replace(typed, "")
        assert MARK not in leaks and "Doğum izni ikramiyesi" not in leaks
    finally:
        corpus["secret"] = insert_document(db, embedder, DocSpec(f"Yönetmelik {MARK}", ("ik",),
                                                                 ((SECRET, 2, "Madde 5"),)))


# ----------------------------------------------------------------------------- retention


def _age(db, conversation_id: str, days: int) -> None:
    with db.connection() as conn:
        conn.execute("UPDATE conversations SET updated_at = now() - %s WHERE public_id = %s::uuid",
                     (timedelta(days=days), conversation_id))


def test_retention_hides_then_the_job_deletes_old_conversations(db, service, settings) -> None:
    ayse = person(db, "ayse")
    old, _, _ = ask_in_conversation(service, ayse, None, FIRST_QUESTION)
    kept, _, _ = ask_in_conversation(service, ayse, None, "Yıllık izin kaç gündür?")
    _age(db, old.id, settings.conversation_retention_days + 1)
    _age(db, kept.id, settings.conversation_retention_days - 1)
    assert [c.id for c in list_conversations(db, settings, ayse)] == [kept.id]  # hidden before the job ran
    with pytest.raises(ConversationNotFound):
        get_conversation(db, settings, ayse, old.id)

    job = jobs.queue_conversation_retention(db, settings)
    assert job is not None and job.kind == jobs.RETENTION
    assert jobs.queue_conversation_retention(db, settings) is None  # one queued at a time
    jobs.run_worker(settings, wait=False, embedder_factory=lambda: None)
    done = jobs.get_job(db, job.id)
    assert done.status == "succeeded" and done.result == {"deleted": 1, "days": settings.conversation_retention_days}
    assert jobs.get_kind(jobs.RETENTION).summary(done.result) == "1 sohbet silindi (180 günden uzun süredir kullanılmayanlar)"
    with db.connection() as conn:
        left = conn.execute("SELECT public_id::text FROM conversations").fetchall()
        turns = conn.execute("SELECT count(*) FROM conversation_turns").fetchone()[0]
    assert left == [(kept.id,)] and turns == 1


def test_the_retention_period_is_a_setting(db, service, settings) -> None:
    ayse = person(db, "ayse")
    conversation, _, _ = ask_in_conversation(service, ayse, None, FIRST_QUESTION)
    _age(db, conversation.id, 8)
    week = settings.replace(conversation_retention_days=7)
    assert list_conversations(db, week, ayse) == [] and len(list_conversations(db, settings, ayse)) == 1
    assert jobs.queue_conversation_retention(db, settings) is None  # nothing is 180 days old
    job = jobs.queue_conversation_retention(db, week)
    jobs.run_worker(week, wait=False, embedder_factory=lambda: None)
    assert jobs.get_job(db, job.id).result == {"deleted": 1, "days": 7}


def test_a_starting_worker_queues_the_retention_when_a_conversation_is_past_it(db, service, settings) -> None:
    job_worker._queue_start_up_work(db, settings)
    assert jobs.list_jobs(db, kind=jobs.RETENTION) == []  # nothing to delete: no job in anybody's list
    conversation, _, _ = ask_in_conversation(service, person(db, "ayse"), None, FIRST_QUESTION)
    _age(db, conversation.id, settings.conversation_retention_days + 1)
    job_worker._queue_start_up_work(db, settings)
    assert [j.status for j in jobs.list_jobs(db, kind=jobs.RETENTION)] == ["queued"]
    job_worker._queue_start_up_work(db, settings)  # a second worker starting: still one
    assert len(jobs.list_jobs(db, kind=jobs.RETENTION)) == 1


def _count(db) -> int:
    with db.connection() as conn:
        return conn.execute("SELECT count(*) FROM conversations").fetchone()[0]


def _wait_for(what: str, probe, deadline_s: float = 60.0) -> None:
    """Poll until `probe()` is true (bounded); fail naming `what`."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if probe():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {deadline_s} s")


def test_a_running_worker_enforces_the_retention_again_and_again(db, service, settings, monkeypatch) -> None:
    """At its start, and then every RETENTION_EVERY_S (here: every heartbeat) while it runs."""
    monkeypatch.setattr(job_worker, "RETENTION_EVERY_S", 0.0)
    ayse = person(db, "ayse")
    first, _, _ = ask_in_conversation(service, ayse, None, FIRST_QUESTION)
    _age(db, first.id, settings.conversation_retention_days + 1)
    running = jobs.BackgroundWorker(settings.replace(job_heartbeat_seconds=0.2), label="test",
                                    embedder_factory=lambda: service.embedder).start()
    try:
        _wait_for("the start's deletion", lambda: _count(db) == 0)
        second, _, _ = ask_in_conversation(service, ayse, None, "Yıllık izin kaç gündür?")
        _age(db, second.id, settings.conversation_retention_days + 1)
        _wait_for("a later round's deletion", lambda: _count(db) == 0)
    finally:
        running.stop()
    done = jobs.list_jobs(db, kind=jobs.RETENTION)
    # A round may queue one more while the last one runs (the queue's lock holds only while one waits).
    assert {j.status for j in done} == {"succeeded"} and sum(j.result["deleted"] for j in done) == 2


# ----------------------------------------------------------------------------- export of a stored conversation


def test_a_stored_conversation_exports_with_its_citations_and_versions(db, service) -> None:
    ayse = person(db, "ayse")
    conversation, _, _ = ask_in_conversation(service, ayse, None, FIRST_QUESTION)
    conversation, second, _ = ask_in_conversation(service, ayse, conversation.id, "Peki doğumdan sonra?")
    markdown = export_conversation(db, service.settings, ayse, conversation.id, "md")
    assert markdown.filename == f"sohbet-{conversation.id[:8]}.md" and markdown.media_type.startswith("text/markdown")
    text = markdown.data.decode("utf-8")
    assert text.startswith(f"# {FIRST_QUESTION}\n") and "## 2. Peki doğumdan sonra?" in text
    assert f"*Şöyle anladım: {second.resolved_question.split(' (')[0]}" in text
    assert "[1] İş Kanunu — Madde 74 – Analık halinde çalışma ve süt izni — s. 31" in text
    assert "— s. 31 — sürüm 1 · " in text and "sürüm: sha256" not in text and "Belge sürümleri" in text
    document = export_conversation(db, service.settings, ayse, conversation.id, "pdf")
    assert document.data.startswith(b"%PDF") and document.media_type == "application/pdf"
    pdf_text = " ".join("".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(document.data)).pages).split())
    assert FIRST_QUESTION in pdf_text and "sürüm 1 · " in pdf_text and "Madde 74" in pdf_text
