"""The app stays up when the model server or the database misbehaves.

Model server (the local fake from tests/fakes.py, real sockets): the connection dropped
mid-stream, no first token before the read timeout, HTTP 500, a model that is not pulled, or
nothing listening at all. Each time the answer service says what happened in Turkish, quotes the
best permitted passages instead (the extractive fallback), logs the question as `error` with the
message — and the next question still works: retrieval-only search, the extractive quoter, and
the same model service once the server is healthy again.

Database: a second embedded PostgreSQL is stopped and started under a running answer service;
the next question reconnects through the pool.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ragcore import store as dbmod
from ragcore.access import create_user
from ragcore.answer import (
    AnswerService,
    ExtractiveGenerator,
    choose_generator_backend,
    make_generator,
)
from ragcore.core import STATUS_ANSWERED, STATUS_ERROR, Settings, probe_ollama
from ragcore.documents import ingest_pdf, list_documents
from ragcore.embed import USEEmbedder
from ragcore.retrieval import search
from ragcore.store import server as store_server
from tests import pdfs
from tests.app_support import REPO, reset_app, set_app_env
from tests.questions_support import logged_questions

QUESTION = "Bu Yonetmelik butun isyerlerine uygulanir mi?"
MODEL = "qwen2.5:7b-instruct"
GOOD_REPLY = "Evet, Yönetmelik bütün işyerlerine uygulanır [1]."


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


@pytest.fixture()
def mehmet(db, settings, embedder):
    ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    return create_user(db, "mehmet", "isg", "mehmet-parola")


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# (configure the fake server, backend, read timeout, expected fragment of the Turkish message)
FAILURES = {
    "ollama drops the connection mid-stream": ("drop", "ollama", 10.0, "bağlantı cevap sırasında kesildi"),
    "openai drops the connection mid-stream": ("drop", "openai", 10.0, "bağlantı cevap sırasında kesildi"),
    "ollama too slow for the read timeout": ("slow", "ollama", 0.5, "zaman aşımı"),
    "ollama answers HTTP 500": ("500", "ollama", 10.0, "HTTP 500"),
    "openai answers HTTP 500": ("500", "openai", 10.0, "HTTP 500"),
    "ollama model not pulled": ("missing", "ollama", 10.0, "ollama pull"),
    "ollama down (closed port)": ("down", "ollama", 10.0, "çalışmıyor ya da erişilemiyor"),
    "ollama sends a malformed frame": ("malformed", "ollama", 10.0, "anlaşılamayan bir cevap"),
    "openai sends a malformed frame": ("malformed", "openai", 10.0, "anlaşılamayan bir cevap"),
}


def _failing_settings(settings: Settings, fake_llm, how: str, backend: str) -> Settings:
    behaviour = fake_llm.behaviour
    behaviour.reply, behaviour.reply_chunks = GOOD_REPLY, 4
    url = f"http://127.0.0.1:{closed_port()}" if how == "down" else fake_llm.url
    if how == "drop":
        behaviour.fail_after_chunks = 2
    elif how == "slow":
        behaviour.delay_before_first = 3.0
    elif how == "500":
        behaviour.fail_status = 500
    elif how == "malformed":
        behaviour.malformed_after_chunks = 2
    model = "yok-model:1b" if how == "missing" else MODEL
    return settings.replace(llm_backend=backend, llm_model=model, ollama_base_url=url,
                          openai_base_url=f"{url}/v1" if backend == "openai" else None, refusal_threshold=0.0)


def _heal(fake_llm) -> None:
    b = fake_llm.behaviour
    b.fail_after_chunks, b.delay_before_first, b.fail_status, b.malformed_after_chunks = None, 0.0, None, None


@pytest.mark.parametrize("case", FAILURES)
def test_model_failure_gives_a_message_logs_the_question_and_the_app_keeps_working(
        mehmet, db, settings, embedder, fake_llm, case) -> None:
    how, backend, read_timeout, fragment = FAILURES[case]
    failing = _failing_settings(settings, fake_llm, how, backend)
    generator = make_generator(failing, embedder, read_timeout=read_timeout)
    assert generator.kind == backend
    service = AnswerService(db, failing, embedder, generator)

    stream = service.stream(mehmet, QUESTION)
    streamed = "".join(stream)
    answer = stream.answer
    # A clear Turkish message, then the best permitted passages quoted with their sources.
    assert answer.status == STATUS_ERROR and fragment in answer.notice, answer.notice
    message, lead, quotes = answer.text.split("\n\n", 2)  # the message, the quotes' source, the quotes
    assert message == f"⚠️ {answer.notice}" and lead.endswith("göre:") and quotes.startswith("> “"), answer.text
    assert f"⚠️ {answer.notice}" in streamed and stream.replaced
    assert answer.sources and answer.cited and all(1 <= n <= len(answer.sources) for n in answer.cited)
    assert "[1]" in answer.text and answer.llm_called and answer.generator == generator.label
    assert answer.extra.get("fallback_generator") == "reader"  # the default policy quotes the reader's best window
    if how in ("drop", "malformed"):  # the half-streamed model text is not kept as the answer
        assert "".join(fake_llm.pieces()[:2]) in streamed and GOOD_REPLY[:20] not in answer.text
    # The question is logged, as an error, with the message.
    logged = logged_questions(db, "mehmet")[0]
    assert (logged.public_id, logged.status, logged.error) == (answer.question_id, STATUS_ERROR, answer.notice)
    assert logged.answer == answer.text and logged.sources and logged.generator == generator.label

    # The app keeps working: retrieval-only search, the extractive quoter…
    assert search(db, embedder, QUESTION, "isg", k=5, mode="lexical")
    quoted = AnswerService(db, failing, embedder, ExtractiveGenerator(embedder)).ask(mehmet, QUESTION)
    assert quoted.status == STATUS_ANSWERED and quoted.cited
    # …and the same model service once the server is back (unless nothing was listening at all).
    if how not in ("down", "missing"):
        _heal(fake_llm)
        recovered = service.ask(mehmet, QUESTION)
        assert recovered.status == STATUS_ANSWERED and recovered.text == GOOD_REPLY and recovered.notice is None
    statuses = [q.status for q in logged_questions(db, "mehmet")]
    assert statuses.count(STATUS_ERROR) == 1 and len(statuses) == (2 if how in ("down", "missing") else 3)


def test_auto_backend_without_ollama_quotes_instead(mehmet, db, settings, embedder) -> None:
    """Ollama not running at start-up: `auto` chooses the extractive quoter and chat answers."""
    auto = settings.replace(llm_backend="auto", ollama_base_url=f"http://127.0.0.1:{closed_port()}",
                          openai_base_url=None, refusal_threshold=0.0)
    status = probe_ollama(auto.ollama_base_url)
    assert not status.reachable
    assert choose_generator_backend(auto, status).kind == "extractive"
    generator = make_generator(auto, embedder, status)
    answer = AnswerService(db, auto, embedder, generator).ask(mehmet, QUESTION)
    assert answer.status == STATUS_ANSWERED and not answer.llm_called
    lead, quotes = answer.text.split("\n\n", 1)
    assert lead.endswith("göre:") and quotes.startswith("> “"), answer.text


# ----------------------------------------------------------------------------- the app with Ollama down


@pytest.fixture()
def app_with_ollama_down(db, settings, embedder, tmp_path, monkeypatch):
    from ui import context

    ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    set_app_env(monkeypatch, DATABASE_URL=settings.database_url, DATA_DIR=str(settings.data_dir),
                LLM_BACKEND="ollama", OLLAMA_BASE_URL=f"http://127.0.0.1:{closed_port()}",
                ADMIN_PASSWORD="yonetici-parola-1", REFUSAL_THRESHOLD="0")
    monkeypatch.delenv("RETRIEVAL_MODE", raising=False)
    reset_app(db)
    context._generator.clear()  # a generator cached by another test would not be the Ollama one
    yield
    context._generator.clear()
    reset_app(db)


def test_chat_page_with_ollama_down_says_so_and_keeps_answering(app_with_ollama_down, db) -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    at.text_input(key="login_username").input("admin")
    at.text_input(key="login_password").input("yonetici-parola-1")
    next(b for b in at.button if b.label == "Giriş yap").click()
    at.run()
    assert not at.exception, at.exception
    for turn in (1, 2):
        at.chat_input(key="chat_input").set_value(QUESTION).run()
        assert not at.exception, at.exception
        errors = [e.value for e in at.error]
        assert sum("Model sunucusu cevap veremedi" in e and "erişilemiyor" in e for e in errors) == turn, errors
        assert sum("\n> “" in m.value for m in at.markdown) >= turn  # the message, then the quoted passages
    with db.connection() as conn:
        rows = conn.execute("SELECT status, error FROM questions ORDER BY id").fetchall()
    assert [r[0] for r in rows] == [STATUS_ERROR, STATUS_ERROR] and all("erişilemiyor" in r[1] for r in rows)
    at.switch_page("pages/search.py").run()  # retrieval-only search needs no model server
    at.text_input(key="search_question").input("isyerlerine uygulanir")
    next(b for b in at.button if b.label == "Ara").click()
    at.run()
    assert not at.exception, at.exception
    assert at.dataframe and len(at.dataframe[0].value) >= 1


# ----------------------------------------------------------------------------- database restart


def test_answer_service_reconnects_after_a_database_restart(server_root: Path, embedder) -> None:
    url = dbmod.embedded_url(server_root / "restart")
    pgdata = (server_root / "restart" / "pg" / "data").resolve()
    server = store_server._embedded_servers[pgdata]
    database = dbmod.Database(url, max_size=2)
    try:
        dbmod.migrate(database)
        settings = Settings(database_url=url, data_dir=server_root / "data", embed_backend="use",
                            llm_backend="extractive", ollama_base_url="http://127.0.0.1:9", refusal_threshold=0.0)
        ingest_pdf(database, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
        mehmet = create_user(database, "mehmet", "isg", "mehmet-parola")
        service = AnswerService(database, settings, embedder, ExtractiveGenerator(embedder))
        assert service.ask(mehmet, QUESTION).status == STATUS_ANSWERED
        with database.connection() as conn:
            started = conn.execute("SELECT pg_postmaster_start_time()").fetchone()[0]

        server.stop()  # every pooled connection is now dead
        server.start()

        answer = service.ask(mehmet, QUESTION)  # the next request reconnects
        assert answer.status == STATUS_ANSWERED and answer.cited and answer.question_id is not None
        with database.connection() as conn:
            assert conn.execute("SELECT pg_postmaster_start_time()").fetchone()[0] > started
            assert conn.execute("SELECT count(*) FROM questions").fetchone()[0] == 2
        assert search(database, embedder, QUESTION, "isg", k=3, mode="rrf")
        assert [d.title for d in list_documents(database, "isg")] == ["Ornek Yonetmelik"]  # the first heading
    finally:
        database.close()
        dbmod.stop_embedded(server_root / "restart")
