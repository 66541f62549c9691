"""The embedded PostgreSQL dies (SIGKILL, as the OOM killer would do it) under a running app.

- A database opened on the embedded server notices (a checkout that times out), restarts the
  server and answers the same question; two processes on one DATA_DIR restart it once.
- Where nobody can restart it (an external DATABASE_URL, here a second embedded server used
  as one), a question fails with a Turkish message instead of waiting 30 s, and it is kept in
  the local spool; the next question after the outage writes it into the questions log.
- `python -m ragcore doctor --quick`, the containers' health check, fails while it is down
  and does not start it.

Each test kills a server of its own; the session's server is never touched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ragcore import store as dbmod
from ragcore.access import User, create_user, get_user
from ragcore.answer import (
    DATABASE_DOWN,
    AnswerService,
    ExtractiveGenerator,
    QuestionError,
    QuestionSpool,
    spool_path,
)
from ragcore.answer import service as answer_service
from ragcore.core import STATUS_ANSWERED, STATUS_ERROR, Settings
from ragcore.documents import ingest_pdf
from ragcore.embed import USEEmbedder
from ragcore.store.database import CHECKOUT_TIMEOUT
from ragcore.store.server import READY_PROBE_TIMEOUT
from tests import pdfs
from tests.app_support import REPO, reset_app, set_app_env

QUESTION = "Bu Yonetmelik butun isyerlerine uygulanir mi?"
OTHER = "Kamu kurumlari kapsamda mi?"
POOL_DEFAULT_TIMEOUT_S = 30.0  # psycopg_pool's getconn default: what a question waited before the bound


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


def _kill_postmaster(data_dir: Path) -> int:
    """SIGKILL the embedded postmaster and wait until it no longer serves (its backends follow it)."""
    pgdata = (data_dir / "pg" / "data").resolve()
    pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while dbmod.embedded_running_url(data_dir) is not None:
        assert time.monotonic() < deadline, "the killed postmaster still looks alive"
        time.sleep(0.05)
    return pid


def _postmaster_pid(data_dir: Path) -> int:
    return int(((data_dir / "pg" / "data").resolve() / "postmaster.pid").read_text().split()[0])


def _world(database: dbmod.Database, settings: Settings, embedder) -> tuple[AnswerService, User]:
    ingest_pdf(database, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    mehmet = create_user(database, "mehmet", "isg", "mehmet-parola")
    return AnswerService(database, settings, embedder, ExtractiveGenerator(embedder)), mehmet


def test_a_killed_embedded_server_is_restarted_and_the_next_question_answered(server_root, embedder) -> None:
    data_dir = server_root / "data"
    settings = Settings(data_dir=data_dir, embed_backend="use", llm_backend="extractive",
                        ollama_base_url="http://127.0.0.1:9", refusal_threshold=0.0)
    database = dbmod.open_database(settings)  # embedded: it may restart the server
    try:
        service, mehmet = _world(database, settings, embedder)
        assert service.ask(mehmet, QUESTION).status == STATUS_ANSWERED
        killed = _kill_postmaster(data_dir)

        answer = service.ask(mehmet, QUESTION)
        assert answer.status == STATUS_ANSWERED and answer.cited and answer.question_id is not None
        assert _postmaster_pid(data_dir) != killed and dbmod.embedded_running_url(data_dir)
        with database.connection() as conn:
            assert conn.execute("SELECT count(*) FROM questions").fetchone()[0] == 2
        assert not QuestionSpool(spool_path(settings)).pending()
    finally:
        database.close()
        dbmod.stop_embedded(data_dir)


def test_a_connection_that_breaks_on_its_first_statement_is_tried_once_more(db, settings, embedder,
                                                                            monkeypatch) -> None:
    """The race right after a crash: the pool's check passed on a backend that died just after it."""
    service, mehmet = _world(db, settings.replace(refusal_threshold=0.0, llm_backend="extractive"), embedder)
    real_get_user, calls = get_user, []

    def breaks_once(database, username):
        calls.append(username)
        if len(calls) == 1:
            raise dbmod.DatabaseUnavailable("The database connection was lost: server closed the connection")
        return real_get_user(database, username)

    monkeypatch.setattr(answer_service, "get_user", breaks_once)  # where the answer service looks it up
    assert service.ask(mehmet, QUESTION).status == STATUS_ANSWERED
    assert calls == ["mehmet", "mehmet"]


def test_questions_during_an_outage_are_refused_within_the_checkout_bound_spooled_and_logged_when_it_is_back(server_root, embedder) -> None:
    server_dir = server_root / "server"
    url = dbmod.embedded_url(server_dir)
    # As an external DATABASE_URL: nobody in this process may restart the server.
    settings = Settings(database_url=url, data_dir=server_root / "data", embed_backend="use",
                        llm_backend="extractive", ollama_base_url="http://127.0.0.1:9", refusal_threshold=0.0)
    database = dbmod.open_database(settings)
    spool = QuestionSpool(spool_path(settings))
    try:
        service, mehmet = _world(database, settings, embedder)
        assert service.ask(mehmet, QUESTION).status == STATUS_ANSWERED

        # The server dies while an answer streams: the answer stands, its log row waits in the spool.
        stream = service.stream(mehmet, QUESTION)
        pieces = iter(stream)
        first_piece = next(pieces)
        _kill_postmaster(server_dir)
        rest = list(pieces)  # the stream finishes although the server is gone (a one-quote answer has no rest)
        assert first_piece and all(isinstance(piece, str) for piece in rest)
        assert stream.answer.status == STATUS_ANSWERED and stream.answer.question_id is None

        # A question during the outage: a Turkish message instead of a 30-second PoolTimeout.
        with pytest.raises(QuestionError) as refused:
            service.ask(mehmet, OTHER)
        assert str(refused.value) == DATABASE_DOWN
        records, broken = spool.records()
        assert [(r["question"], r["status"]) for r in records] == [(QUESTION, STATUS_ANSWERED), (OTHER, STATUS_ERROR)]
        # How fast it is refused is bounded by configuration, not measured here (no timed
        # assertions): one checkout of at most CHECKOUT_TIMEOUT s, then one probe of at most
        # READY_PROBE_TIMEOUT s says the server does not answer — well below the pool's 30 s.
        assert records[1]["error"].startswith("veritabanına ulaşılamadı: The database does not answer")
        assert database.checkout_timeout == CHECKOUT_TIMEOUT
        assert CHECKOUT_TIMEOUT + READY_PROBE_TIMEOUT < POOL_DEFAULT_TIMEOUT_S
        assert broken == []

        dbmod.restart_embedded(server_dir)  # the operator (or the database container) brings it back
        answer = service.ask(mehmet, QUESTION)
        assert answer.status == STATUS_ANSWERED and answer.question_id is not None
        assert not spool.pending()
        with database.connection() as conn:
            rows = conn.execute("SELECT question, status, error, user_id IS NOT NULL FROM questions "
                                "ORDER BY created_at, id").fetchall()
        assert [(q, s) for q, s, _, _ in rows] == [
            (QUESTION, STATUS_ANSWERED), (QUESTION, STATUS_ANSWERED), (OTHER, STATUS_ERROR), (QUESTION, STATUS_ANSWERED)]
        assert "veritabanına ulaşılamadı" in rows[2][2] and all(has_user for *_, has_user in rows)
        # A flush repeated after a crash between commit and truncation writes nothing twice.
        for record in records:
            spool.append(record)
        assert spool.flush(database) == 0 and not spool.pending()
    finally:
        database.close()
        if dbmod.embedded_running_url(server_dir) is None:
            dbmod.restart_embedded(server_dir)  # so that the handle can stop it cleanly
        dbmod.stop_embedded(server_dir)


# ----------------------------------------------------------------------------- the app


def _app_env(monkeypatch, **env: str) -> None:
    for name in ("DATABASE_URL", "RETRIEVAL_MODE"):
        monkeypatch.delenv(name, raising=False)
    set_app_env(monkeypatch, ADMIN_PASSWORD="yonetici-parola-1", REFUSAL_THRESHOLD="0", **env)
    reset_app()


def _signed_in_app(username: str, password: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.run()
    at.text_input(key="login_username").input(username)
    at.text_input(key="login_password").input(password)
    next(b for b in at.button if b.label == "Giriş yap").click()
    at.run()
    assert not at.exception, at.exception
    return at


def _quoted_answers(at) -> int:
    """Answers shown with the extractive badge ("Üreten: alıntı modu …", a markdown badge)."""
    return sum("-badge[" in m.value and "alıntı modu" in m.value for m in at.markdown)


def _ask_in_chat(at, question: str):
    at.chat_input(key="chat_input").set_value(question).run()
    assert not at.exception, at.exception
    return at


def test_the_app_restarts_a_killed_embedded_server_and_answers_the_chat(server_root, embedder, monkeypatch) -> None:
    data_dir = server_root / "data"
    _app_env(monkeypatch, DATA_DIR=str(data_dir))
    settings = Settings.from_env(dotenv=None)
    database = dbmod.open_database(settings)  # the same embedded server the app starts
    try:
        _world(database, settings, embedder)
        at = _signed_in_app("mehmet", "mehmet-parola")
        assert _quoted_answers(_ask_in_chat(at, QUESTION)) == 1
        _kill_postmaster(data_dir)
        _ask_in_chat(at, QUESTION)
        assert not at.error, [e.value for e in at.error]
        assert _quoted_answers(at) == 2  # the second question is answered too
        assert dbmod.embedded_running_url(data_dir)
        with database.connection() as conn:  # this pool recovers on its own, like the app's
            assert conn.execute("SELECT count(*) FROM questions WHERE status = 'answered'").fetchone()[0] == 2
    finally:
        reset_app()
        database.close()
        dbmod.stop_embedded(data_dir)


def test_the_app_says_so_in_turkish_while_an_external_database_is_down(server_root, embedder, monkeypatch) -> None:
    server_dir = server_root / "server"
    url = dbmod.embedded_url(server_dir)
    _app_env(monkeypatch, DATABASE_URL=url, DATA_DIR=str(server_root / "data"))
    settings = Settings.from_env(dotenv=None)
    database = dbmod.open_database(settings)
    try:
        _world(database, settings, embedder)
        at = _signed_in_app("mehmet", "mehmet-parola")
        _kill_postmaster(server_dir)
        _ask_in_chat(at, OTHER)
        assert [e.value for e in at.error] == [
            "Veritabanına şu anda ulaşılamıyor. Birkaç saniye sonra sayfayı yenileyin; sorun sürerse "
            "yöneticinize başvurun. Sorunuz kaydedildi."]
        records, _ = QuestionSpool(spool_path(settings)).records()
        assert [(r["username"], r["question"], r["status"]) for r in records] == [("mehmet", OTHER, STATUS_ERROR)]
        dbmod.restart_embedded(server_dir)
        at.run()  # the user reloads: the chat is back
        assert not at.error and not at.exception, [e.value for e in at.error]
        assert _quoted_answers(_ask_in_chat(at, QUESTION)) == 1
        with database.connection() as conn:  # the spooled question reached the log with the answer
            assert conn.execute("SELECT question, status FROM questions ORDER BY created_at, id").fetchall() == [
                (OTHER, STATUS_ERROR), (QUESTION, STATUS_ANSWERED)]
    finally:
        reset_app()
        database.close()
        if dbmod.embedded_running_url(server_dir) is None:
            dbmod.restart_embedded(server_dir)
        dbmod.stop_embedded(server_dir)


# ----------------------------------------------------------------------------- two processes

_HOLDER = textwrap.dedent(
    """
    import sys
    from ragcore.core import Settings
    from ragcore.store import open_database

    db = open_database(Settings.from_env(dotenv=None))
    print("READY", flush=True)
    sys.stdin.readline()
    with db.connection() as conn:
        print("STARTED", conn.execute("SELECT pg_postmaster_start_time()::text").fetchone()[0], flush=True)
    sys.stdin.readline()
    db.close()
    """
)


def test_two_processes_on_one_data_dir_restart_the_server_once(server_root) -> None:
    data_dir = server_root / "data"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "XDG_RUNTIME_DIR")}
    env["DATA_DIR"] = str(data_dir)
    procs = [subprocess.Popen([sys.executable, "-c", _HOLDER], cwd=REPO, env=env, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(2)]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
        _kill_postmaster(data_dir)
        for proc in procs:  # both ask at once
            proc.stdin.write("\n")
            proc.stdin.flush()
        started = [proc.stdout.readline().split(maxsplit=1) for proc in procs]
        for proc in procs:
            proc.stdin.write("\n")
            proc.stdin.flush()
        errors = [proc.communicate(timeout=120)[1] for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert all(proc.returncode == 0 for proc in procs), errors
    assert [s[0] for s in started] == ["STARTED", "STARTED"] and started[0][1] == started[1][1], started
    assert sum(e.count("restarted the embedded PostgreSQL") for e in errors) == 1, errors
    assert dbmod.embedded_running_url(data_dir) is None  # the last process out stopped it


# ----------------------------------------------------------------------------- health check


def _quick(**env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"} | env
    return subprocess.run([sys.executable, "-m", "ragcore", "doctor", "--quick", "--json"], cwd=REPO, env=full,
                          capture_output=True, text=True, timeout=60)


def test_doctor_quick_fails_while_the_database_is_down_and_does_not_start_it(server_root) -> None:
    server_dir = server_root / "server"
    url = dbmod.embedded_url(server_dir)
    try:
        up = _quick(DATA_DIR=str(server_dir))
        assert up.returncode == 0, up.stderr
        status = json.loads(up.stdout)
        assert status["ok"] is True and status["database"] == "embedded" and status["detail"].startswith("PostgreSQL 18")
        assert _quick(DATABASE_URL=url, DATA_DIR=str(server_root / "elsewhere")).returncode == 0

        killed = _kill_postmaster(server_dir)
        down = _quick(DATA_DIR=str(server_dir))
        assert down.returncode == 1 and json.loads(down.stdout)["ok"] is False
        assert "no PostgreSQL process" in json.loads(down.stdout)["detail"]
        external = _quick(DATABASE_URL=url, DATA_DIR=str(server_root / "elsewhere"))
        assert external.returncode == 1 and "does not answer" in json.loads(external.stdout)["detail"]
        # A health check reports; it does not revive (nor hold) the server.
        assert dbmod.embedded_running_url(server_dir) is None and _postmaster_pid(server_dir) == killed
    finally:
        if dbmod.embedded_running_url(server_dir) is None:
            dbmod.restart_embedded(server_dir)
        dbmod.stop_embedded(server_dir)
