"""Permission suite over every path that can reveal document text, for every role.

A seeded world of small PDFs with random `allowed_roles` (tests/permission_world.py), ingested through the real
`ragcore.documents.ingest.ingest_pdf`. Every sentence, and so every chunk and every quoted passage, carries
its document's marker (`KOD07Q`), and every title does too: an unreadable document's marker in
anything a role gets back — an answer, a source, the prompt sent to the model, a log line, a
questions row, a CLI output, a rendered page — is a leak. Structured results are also checked by
document id and chunk id.

Every check is counted in a ledger; the module writes `artifacts/permission_summary.json`
("N checks, 0 leaks") when it finishes, for the README. Positive controls (`markers.visible`)
check that readable documents' markers do reach answers and pages, so a scan that finds no
forbidden marker means something; `make mutation-check` breaks each role filter in a copy
and shows which of these tests fail.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from ragcore.access import users
from ragcore.answer import (
    AnswerService,
    ExtractiveGenerator,
    QuestionError,
    review_queue,
    set_feedback,
)
from ragcore.cli import main as cli_main
from ragcore.core import Settings
from ragcore.documents import (
    WORD_HAS_NO_PAGES,
    DocumentNotFound,
    PageNotFound,
    delete_document,
    document_chunks,
    document_file,
    find_document,
    get_document,
    ingest_pdf,
    list_documents,
    page_image,
    page_pdf,
    read_page,
    set_document_roles,
)
from ragcore.retrieval import MODES, retrieve, search
from tests import pdfs
from tests.app_support import REPO, reset_app, set_app_env
from tests.permission_world import (
    PASSWORD,
    READER_ROLES,
    WORLD_READERS,
    Ledger,
    World,
    build_world,
    marker,
    questions_for,
)
from tests.retrieval_support import clean, make_test_embedder

SUMMARY = REPO / "artifacts" / "permission_summary.json"
SEED = 7_000_7
N_DOCS = 14

# Every path family a full run of this module checks.
EXPECTED_PATHS = {
    "retrieval.search", "chat.recording", "chat.extractive", "chat.extractive-calibrated", "prompt.context", "logs",
    "questions.table", "review.queue", "documents.list", "documents.get", "documents.chunks",
    "documents.download", "documents.source_page", "documents.find", "documents.page", "cli.ids", "cli.search", "cli.ask", "cli.documents", "cli.chunks", "cli.process.search",
    "cli.process.ask", "role-change.answer", "role-change.prompt", "role-change.log", "deactivation",
    "document-role-change", "app.navigation", "app.documents", "app.search", "app.chat", "app.chat-history",
    "markers.visible",
}


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    book = Ledger("tests/test_permission_paths.py", SEED, N_DOCS, EXPECTED_PATHS)
    yield book
    summary = book.write(SUMMARY)
    print(f"\npermission paths: {summary['checks']} checks, {summary['leaks']} leaks -> {SUMMARY}")


@pytest.fixture(scope="module")
def world(session_db, pg_url, tmp_path_factory, ledger) -> World:
    clean(session_db)
    with session_db.connection() as conn:
        conn.execute("DELETE FROM login_attempts")
    settings = Settings(
        database_url=pg_url, data_dir=tmp_path_factory.mktemp("permission-paths") / "data", embed_backend="use",
        llm_backend="extractive", ollama_base_url="http://127.0.0.1:9", refusal_threshold=0.0,
        cookie_key="test-cookie-key-not-secret",
    )
    return build_world(session_db, settings, make_test_embedder(), ledger, seed=SEED, n_docs=N_DOCS,
                       filename="belge-{index:02d}.pdf", user_prefix="kisi", uploaded_by="kisi-admin")


# ----------------------------------------------------------------------------- retrieval


@pytest.mark.parametrize("mode", MODES)
def test_retrieval_search_every_role(world: World, mode: str) -> None:
    before = len(world.ledger.leaks)
    rng = random.Random(f"{SEED}-search-{mode}")
    for role in WORLD_READERS:
        for question in questions_for(world, role, rng, n_plain=3, n_targeted=3):
            k = rng.choice([1, 3, 5, 20, 200])
            for s in search(world.db, world.embedder, question, role, k=k, mode=mode):
                world.source("retrieval.search", role, s.document_id, s.chunk_id, s.text + s.title, question)
    world.assert_no_new_leaks(before)


def test_retrieval_is_complete_per_role(world: World) -> None:
    """Not over-strict either: with a large k each role gets exactly its documents' chunks."""
    for role in WORLD_READERS:
        got = {s.chunk_id for s in retrieve(world.db, world.embedder, "SAYFA", role, k=1000, mode="dense").sources}
        expected = {c for c, d in world.chunk_doc.items() if world.may_read(role, d)}
        assert got == expected, role


# ----------------------------------------------------------------------------- answers, prompts, logs


class RecordingGenerator:
    """Captures every prompt; answers by echoing the whole context back, so the answer carries
    everything the model saw (any unreadable text in the prompt would also reach the user)."""

    kind = "recording"
    model = label = "recording"

    def __init__(self) -> None:
        self.calls: list[tuple[list[dict], list]] = []

    def stream(self, messages, sources, question, **_):
        self.calls.append((messages, list(sources)))
        yield "Bağlama göre: "
        yield messages[-1]["content"][-1500:]
        yield " [1]"


def _check_answer(world: World, path: str, role: str, question: str, streamed: str, answer) -> None:
    world.scan(path, role, streamed, question, question)
    world.scan(path, role, answer.text, question, question)
    for s in answer.sources:
        world.source(path, role, s.document_id, s.chunk_id, s.text + s.title, question)
    world.ledger.ok(path, all(1 <= n <= len(answer.sources) for n in answer.cited), (role, answer.cited))


def test_chat_sources_prompt_context_and_logs(world: World, caplog: pytest.LogCaptureFixture) -> None:
    before = len(world.ledger.leaks)
    recorder = RecordingGenerator()
    calibrated = world.settings.replace(refusal_threshold=None)
    services = {
        "chat.recording": AnswerService(world.db, world.settings, world.embedder, recorder),
        "chat.extractive": AnswerService(world.db, world.settings, world.embedder, ExtractiveGenerator(world.embedder)),
        "chat.extractive-calibrated": AnswerService(world.db, calibrated, world.embedder,
                                                    ExtractiveGenerator(world.embedder)),
    }
    rng = random.Random(f"{SEED}-chat")
    caplog.set_level(logging.DEBUG)
    visible: Counter = Counter()  # answers that show a readable marker: the scans can see markers
    for role in WORLD_READERS:
        user = world.people[role]
        for index, question in enumerate(questions_for(world, role, rng, n_plain=3, n_targeted=3)):
            for path, service in services.items():
                if path.endswith("calibrated") and index % 2:
                    continue
                calls = len(recorder.calls)
                caplog.clear()
                stream = service.stream(user, question)
                streamed = "".join(stream)
                _check_answer(world, path, role, question, streamed, stream.answer)
                visible[path] += any(m in stream.answer.text.replace(question, "")
                                     for m in world.readable_markers(role))
                for messages, sources in recorder.calls[calls:]:
                    for s in sources:
                        world.source("prompt.context", role, s.document_id, s.chunk_id, s.text, question)
                    world.scan("prompt.context", role, "\n".join(m["content"] for m in messages), question, question)
                world.scan("logs", role, caplog.text, question, question)
    assert recorder.calls, "the recording generator was never called"
    for path in services:
        world.ledger.ok("markers.visible", visible[path] > 0, (path, "no answer ever showed a marker"))
    world.assert_no_new_leaks(before)


def test_questions_table_and_review_queue(world: World) -> None:
    """What was logged for a user never carries a chunk of a document that user's role may not read:
    the whole table, and the review queue (the one place the app shows logged rows)."""
    before = len(world.ledger.leaks)
    service = AnswerService(world.db, world.settings.replace(refusal_threshold=None), world.embedder,
                            ExtractiveGenerator(world.embedder))
    rng = random.Random(f"{SEED}-log")
    for role in WORLD_READERS:
        for question in questions_for(world, role, rng, n_plain=2, n_targeted=2):
            answer = service.ask(world.people[role], question)
            set_feedback(world.db, answer.question_id, world.people[role].username, -1, f"yetersiz: {question}")
    with world.db.connection() as conn:
        rows = conn.execute("SELECT username, role, question, answer, sources::text FROM questions").fetchall()
    assert rows
    for username, role, question, answer_text, sources_json in rows:
        world.ledger.ok("questions.table", username == world.people[role].username, (username, role))
        world.scan("questions.table", role, (answer_text or "") + sources_json, username, question)
        for s in json.loads(sources_json):
            world.source("questions.table", role, s["document_id"], s["chunk_id"], s["text"] + s["title"])
    queue = review_queue(world.db, limit=1000)
    assert any(item.feedback == -1 for item in queue)
    for item in queue:
        world.scan("review.queue", item.role, (item.answer or "") + json.dumps(item.sources, ensure_ascii=False),
                   item.id, item.question)
        for s in item.sources:
            world.source("review.queue", item.role, s["document_id"], s["chunk_id"], s["text"])
    world.assert_no_new_leaks(before)


# ----------------------------------------------------------------------------- documents


def test_document_list_get_chunks_and_download(world: World) -> None:
    before = len(world.ledger.leaks)
    for role in WORLD_READERS:
        listed = list_documents(world.db, role)
        for doc in listed:
            world.source("documents.list", role, doc.id, text=doc.title + doc.filename)
        expected = {d for d in world.readable if world.may_read(role, d)}
        assert {d.id for d in listed} == expected, role  # complete, not over-filtered
        for doc_id in world.readable:
            allowed = world.may_read(role, doc_id)
            doc = get_document(world.db, doc_id, role)
            world.ledger.ok("documents.get", (doc is not None) == allowed, (role, doc_id))
            found = find_document(world.db, world.public[doc_id], role)  # what the API and the CLI look up
            world.ledger.ok("documents.find", (found is not None) == allowed and (found is None or found.id == doc_id),
                            (role, doc_id))
            world.ledger.ok("documents.find", find_document(world.db, str(doc_id), role) is None,
                            (role, doc_id, "a database key is no public id"))
            try:
                chunks = document_chunks(world.db, doc_id, role)
            except DocumentNotFound as exc:
                world.ledger.ok("documents.chunks", not allowed, (role, doc_id))
                world.scan("documents.chunks", role, str(exc), doc_id)
            else:
                world.ledger.ok("documents.chunks", allowed and bool(chunks), (role, doc_id))
                for chunk in chunks:
                    world.scan("documents.chunks", role, chunk.text, doc_id)
            admin_view = get_document(world.db, doc_id, "admin")
            path = document_file(world.settings, admin_view, role)
            world.ledger.ok("documents.download", (path is not None) == allowed, (role, doc_id))
            if path is not None:
                assert path.read_bytes() == world.data[doc_id]
            try:  # the cited page's text (a Word file's section): exactly as readable as its document
                page = read_page(world.settings, admin_view, 1, role)
            except DocumentNotFound as exc:
                world.ledger.ok("documents.source_page", not allowed, (role, doc_id))
                world.scan("documents.source_page", role, str(exc), doc_id)
            else:
                world.ledger.ok("documents.source_page", allowed and world.markers[doc_id] in page.text, (role, doc_id))
                world.scan("documents.source_page", role, page.text, doc_id)
    missing = max(world.readable) + 100
    with pytest.raises(DocumentNotFound) as absent:
        document_chunks(world.db, missing, "ik")
    forbidden = next(d for d, roles in world.readable.items() if "ik" not in roles)
    with pytest.raises(DocumentNotFound) as hidden:
        document_chunks(world.db, forbidden, "ik")
    # A forbidden document and a missing one get the same message: no existence oracle.
    assert str(hidden.value).replace(str(forbidden), "#") == str(absent.value).replace(str(missing), "#")
    world.assert_no_new_leaks(before)


def test_cited_page_text_pdf_and_image_per_role(world: World) -> None:
    """The page dialog's three reads (text, one-page PDF, the page drawn with the passage marked)
    for every role × document: served exactly when the role reads the document, and the image
    never from the cache for a role that may not, though admin drew that page first."""
    before = len(world.ledger.leaks)
    for doc_id, mark in world.markers.items():
        doc = get_document(world.db, doc_id, "admin")
        if doc.file_format != "pdf":  # a Word file has sections, not pages (the source-page check above reads them)
            for role in WORLD_READERS:
                for kind, read in {"pdf": lambda d, r: page_pdf(world.settings, d, 1, r),
                                   "image": lambda d, r: page_image(world.settings, d, 1, r, d.title)}.items():
                    try:
                        read(doc, role)
                    except DocumentNotFound as exc:  # the role first: no word about the format
                        world.ledger.ok("documents.page", not world.may_read(role, doc_id), (role, doc_id, kind))
                        world.scan("documents.page", role, str(exc), (doc_id, kind))
                    except PageNotFound as exc:
                        world.ledger.ok("documents.page", world.may_read(role, doc_id) and str(exc) == WORD_HAS_NO_PAGES,
                                        (role, doc_id, kind))
                    else:
                        world.ledger.ok("documents.page", False, (role, doc_id, kind, "a Word file has no page"))
            continue
        warm = page_image(world.settings, doc, 1, "admin", f"{mark} SAYFA 1")
        world.ledger.ok("documents.page", warm.png.startswith(b"\x89PNG") and warm.marked > 0, ("admin", doc_id))
        for role in WORLD_READERS:
            allowed = world.may_read(role, doc_id)
            reads = {"text": lambda d, r: read_page(world.settings, d, 1, r).text,
                     "pdf": lambda d, r: page_pdf(world.settings, d, 1, r),
                     "image": lambda d, r: page_image(world.settings, d, 1, r, d.title.split()[-1] + " SAYFA 1").png}
            for kind, read in reads.items():
                try:
                    got = read(doc, role)
                except DocumentNotFound as exc:
                    world.ledger.ok("documents.page", not allowed, (role, doc_id, kind))
                    world.scan("documents.page", role, str(exc), (doc_id, kind))
                else:
                    world.ledger.ok("documents.page", allowed and bool(got), (role, doc_id, kind))
                    if kind == "text":
                        world.scan("documents.page", role, got, (doc_id, kind))
                        world.ledger.ok("markers.visible", mark in got, ("documents.page", role, doc_id))
    world.assert_no_new_leaks(before)


# ----------------------------------------------------------------------------- CLI


@pytest.fixture()
def cli_env(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {"DATABASE_URL": world.settings.database_url, "DATA_DIR": str(world.settings.data_dir),
           "EMBED_BACKEND": "use", "LLM_BACKEND": "extractive", "OLLAMA_BASE_URL": "http://127.0.0.1:9",
           "REFUSAL_THRESHOLD": "0", "LOG_LEVEL": "DEBUG"}
    monkeypatch.chdir(tmp_path)  # no .env from the repository
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RETRIEVAL_MODE", raising=False)
    return env


def _cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = cli_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_search_ask_documents_and_chunks(world: World, cli_env, capsys) -> None:
    before = len(world.ledger.leaks)
    rng = random.Random(f"{SEED}-cli")
    for role in WORLD_READERS:
        for question in questions_for(world, role, rng, n_plain=2, n_targeted=2):
            mode = rng.choice(MODES)
            code, out, err = _cli(capsys, "search", question, "--role", role, "--k", "50", "--mode", mode, "--json")
            assert code == 0, err
            world.scan("cli.search", role, out + err, question, question)
            world.ids("cli.ids", role, json.loads(out), "search")
            for r in json.loads(out)["results"]:
                world.source("cli.search", role, world.key(r["document_id"]), text=r["text"] + r["title"])
            code, out, err = _cli(capsys, "search", question, "--role", role, "--mode", mode)  # human output
            world.scan("cli.search", role, out + err, question, question)
            code, out, err = _cli(capsys, "ask", question, "--user", world.people[role].username, "--json")
            assert code == 0, err
            world.scan("cli.ask", role, out + err, question, question)
            world.ids("cli.ids", role, json.loads(out), "ask")
            for r in json.loads(out)["sources"]:
                world.source("cli.ask", role, world.key(r["document_id"]), text=r["text"] + r["title"])
        code, out, err = _cli(capsys, "documents", "--role", role, "--json")
        assert code == 0, err
        world.scan("cli.documents", role, out, role)
        world.ids("cli.ids", role, json.loads(out), "documents")
        for d in json.loads(out):
            world.source("cli.documents", role, world.key(d["document_id"]))
        _, _, unknown = _cli(capsys, "chunks", str(uuid.uuid4()), "--role", role, "--json")
        for doc_id in world.readable:
            code, out, err = _cli(capsys, "chunks", world.public[doc_id], "--role", role, "--json")
            world.ledger.ok("cli.chunks", (code == 0) == world.may_read(role, doc_id), (role, doc_id, code))
            world.ledger.ok("cli.chunks", code == 0 or err == unknown, (role, doc_id, err))  # forbidden = unknown
            world.scan("cli.chunks", role, out + err, doc_id)
            code, out, err = _cli(capsys, "chunks", str(doc_id), "--role", role, "--json")  # the database key
            world.ledger.ok("cli.chunks", code == 1 and err == unknown, (role, doc_id, "key accepted", code))
    world.assert_no_new_leaks(before)


def test_cli_search_and_ask_as_real_processes(world: World, cli_env, tmp_path: Path) -> None:
    """`python -m ragcore search --json` and `ask --json` in their own processes (stdout and stderr)."""
    before = len(world.ledger.leaks)
    env = os.environ | cli_env | {"PYTHONPATH": str(REPO)}
    role = "ik"
    target = world.forbidden(role)[0]
    question = f"{target} risk degerlendirmesi ne zaman yenilenir?"
    for argv, path in ((["search", question, "--role", role, "--k", "50", "--json"], "cli.process.search"),
                       (["ask", question, "--user", f"kisi-{role}", "--json"], "cli.process.ask")):
        proc = subprocess.run([sys.executable, "-m", "ragcore", *argv], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        world.scan(path, role, proc.stdout + proc.stderr, question, question)
        payload = json.loads(proc.stdout)
        world.ids(path, role, payload, argv[0])
        for r in payload.get("results", payload.get("sources", [])):
            world.source(path, role, world.key(r["document_id"]), text=r["text"])
    world.assert_no_new_leaks(before)


# ----------------------------------------------------------------------------- changes take effect now


def test_role_change_and_deactivation_take_effect_on_the_next_question(world: World) -> None:
    before = len(world.ledger.leaks)
    recorder = RecordingGenerator()
    service = AnswerService(world.db, world.settings, world.embedder, recorder)
    stale = world.people["uretim"]  # the object a session would still hold
    question = "Yangin tatbikati ne siklikla yapilir ve risk analizi ne zaman yenilenir?"
    try:
        for new_role in ("ik", "isg", "personel", "uretim"):
            users.set_role(world.db, stale.username, new_role)
            answer = service.ask(stale, question)
            world.ledger.ok("role-change.answer", answer.extra["role"] == new_role, (new_role, answer.extra))
            _check_answer(world, "role-change.answer", new_role, question, answer.text, answer)
            messages, _ = recorder.calls[-1]
            world.scan("role-change.prompt", new_role, messages[-1]["content"], new_role, question)
            with world.db.connection() as conn:
                logged_role = conn.execute("SELECT role FROM questions WHERE public_id = %s",
                                           (answer.question_id,)).fetchone()[0]
            world.ledger.ok("role-change.log", logged_role == new_role, (new_role, logged_role))
        users.set_active(world.db, stale.username, False)
        calls = len(recorder.calls)
        with world.db.connection() as conn:
            logged_before = conn.execute("SELECT count(*) FROM questions").fetchone()[0]
        with pytest.raises(QuestionError, match="devre dışı"):
            service.ask(stale, question)
        with world.db.connection() as conn:
            logged_after = conn.execute("SELECT count(*) FROM questions").fetchone()[0]
        world.ledger.ok("deactivation", len(recorder.calls) == calls and logged_after == logged_before,
                        "a deactivated user reached the generator or the log")
        users.set_active(world.db, stale.username, True)
        assert service.ask(stale, question).extra["role"] == "uretim"
    finally:
        users.set_role(world.db, stale.username, "uretim")
        users.set_active(world.db, stale.username, True)
    world.assert_no_new_leaks(before)


def test_document_role_change_is_reflected_immediately(world: World) -> None:
    before = len(world.ledger.leaks)
    doc_id = next(d for d, roles in world.readable.items() if "ik" not in roles)
    original = sorted(world.readable[doc_id])
    mark = world.markers[doc_id]
    question = f"{mark} risk izin ucret makine egitim yangin"
    recorder = RecordingGenerator()
    service = AnswerService(world.db, world.settings, world.embedder, recorder)
    ik = world.people["ik"]

    def visible() -> tuple[bool, bool, bool]:
        in_search = any(s.document_id == doc_id
                        for s in search(world.db, world.embedder, question, "ik", k=50, mode="lexical"))
        service.ask(ik, question)
        in_prompt = any(s.document_id == doc_id for s in recorder.calls[-1][1])
        listed = doc_id in {d.id for d in list_documents(world.db, "ik")}
        return in_search, in_prompt, listed

    try:
        assert visible() == (False, False, False)
        set_document_roles(world.db, doc_id, [*original, "ik"])
        world.readable[doc_id] = {*original, "ik"}
        assert visible() == (True, True, True)
        set_document_roles(world.db, doc_id, original)
        world.readable[doc_id] = set(original)
        world.ledger.ok("document-role-change", visible() == (False, False, False), (doc_id, "revoked but visible"))
    finally:
        set_document_roles(world.db, doc_id, original)
        world.readable[doc_id] = set(original)
    world.assert_no_new_leaks(before)


# ----------------------------------------------------------------------------- the app pages


@pytest.fixture()
def app_env(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    set_app_env(monkeypatch, DATABASE_URL=world.settings.database_url, DATA_DIR=str(world.settings.data_dir),
                REFUSAL_THRESHOLD="0")
    monkeypatch.delenv("RETRIEVAL_MODE", raising=False)
    with world.db.connection() as conn:
        conn.execute("DELETE FROM login_attempts")
    reset_app(world.db)
    yield
    reset_app(world.db)


def _signed_in_app(username: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.run()
    at.text_input(key="login_username").input(username)
    at.text_input(key="login_password").input(PASSWORD)
    next(b for b in at.button if b.label == "Giriş yap").click()
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["authentication_status"], username
    return at


def _unreachable(at, page: str) -> bool:
    """Whether the page is missing from this session's navigation (switching to it raises)."""
    try:
        at.switch_page(page)
    except ValueError:
        return True
    at.switch_page("pages/chat.py")  # reached: go back so the next check starts from the chat
    return False


def _every_element(at) -> str:
    """Every element's protobuf (bodies, labels, help texts, captions, tables, component args)."""
    out: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def _page_text(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [e.label for e in at.expander]
    parts += [x.value for x in at.info] + [x.value for x in at.error] + [x.value for x in at.warning]
    parts += [x.value for x in at.success] + [t.value for t in at.title] + [s.value for s in at.subheader]
    parts += [d.value.to_string() for d in at.dataframe]
    return re.sub(r"\\(.)", r"\1", "\n".join(str(p) for p in parts))


def test_app_documents_page_and_navigation_per_role(world: World, app_env) -> None:
    before = len(world.ledger.leaks)
    for role in READER_ROLES:
        at = _signed_in_app(f"kisi-{role}")
        for page in ("pages/users.py", "pages/review.py", "pages/eval_lab.py") + (
                () if role == "isg" else ("pages/search.py",)):
            world.ledger.ok("app.navigation", _unreachable(at, page), (role, page))
        at.switch_page("pages/documents.py").run()
        assert not at.exception, at.exception
        shown = _page_text(at)
        world.scan("app.documents", role, shown, role)
        for doc_id, title in world.titles.items():
            world.ledger.ok("app.documents", (title in shown) == world.may_read(role, doc_id), (role, title))
        downloads = at.get("download_button")
        world.ledger.ok("app.documents", len(downloads) == sum(world.may_read(role, d) for d in world.readable),
                        (role, len(downloads)))
        assert not at.get("file_uploader")
        page = _every_element(at)
        world.ledger.ok("app.documents", "Erişim rolleri" not in page and "Başlığı düzenle" not in page and "Evet, sil" not in page
                        and not [b for b in at.button if b.label == "Sil"], (role, "admin controls shown"))
    world.assert_no_new_leaks(before)


def test_app_source_search_for_isg_and_chat(world: World, app_env) -> None:
    before = len(world.ledger.leaks)
    at = _signed_in_app("kisi-isg")
    at.switch_page("pages/search.py").run()
    picker = at.selectbox(key="search_role")  # isg cannot search "as another role"
    world.ledger.ok("app.search", len(picker.options) == 1 and picker.value == "isg",
                    ("role picker", list(picker.options)))
    for target in world.forbidden("isg")[:3]:
        question = f"{target} risk degerlendirmesi izin ucret"
        at.text_input(key="search_question").input(question)
        at.number_input(key="search_k").set_value(50)
        next(b for b in at.button if b.label == "Ara").click()
        at.run()
        assert not at.exception, at.exception
        shown = _page_text(at)
        assert "Kaynak arama" in shown and at.dataframe, shown[:500]
        world.scan("app.search", "isg", shown, question, question)
        world.ledger.ok("markers.visible", any(m in shown.replace(question, "") for m in world.readable_markers("isg")),
                        ("app.search", question))
    at.switch_page("pages/chat.py").run()
    target = world.forbidden("isg")[0]
    question = f"{target} belgesinde yangin tatbikati ne siklikla yapilir?"
    at.chat_input(key="chat_input").set_value(question).run()
    assert not at.exception, at.exception
    shown = _page_text(at)
    assert "“" in shown or "bulunmuyor" in shown, shown[:500]
    world.scan("app.chat", "isg", shown, question, question)
    world.assert_no_new_leaks(before)


def _shown_documents(at) -> list[int]:
    """Documents whose chunks the open chat shows as sources, most cited first."""
    counts = Counter(s.document_id for turn in at.session_state["chat_history"] for s in turn.sources)
    return [doc for doc, _ in counts.most_common()]


def _gone_everywhere(world: World, path: str, at, mark: str, context: object) -> None:
    """The marker is in no element (any field of any protobuf) and no longer in the session's history."""
    world.ledger.ok(path, mark not in _every_element(at), (mark, "still on the page", context))
    history = "".join(f"{t.text}{[s.text + s.title for s in t.sources]}" for t in at.session_state["chat_history"])
    world.ledger.ok(path, mark not in history, (mark, "still in the session state", context))


def test_app_chat_history_follows_permissions(world: World, app_env) -> None:
    """Open chat, then the admin revokes a shown document (or demotes the user, or deletes the
    document): on the next run its text is gone from every element and the answer is withheld."""
    from ui.chat import REVOKED_NOTICE

    before = len(world.ledger.leaks)
    question = "Yangin tatbikati ne siklikla yapilir ve risk analizi ne zaman yenilenir?"  # names no marker

    # 1. A document's roles change.
    at = _signed_in_app("kisi-isg")
    at.chat_input(key="chat_input").set_value(question).run()
    assert not at.exception, at.exception
    doc_id = _shown_documents(at)[0]
    mark, original = world.markers[doc_id], sorted(world.readable[doc_id])
    world.ledger.ok("markers.visible", mark in _every_element(at), ("app.chat-history", mark))
    try:
        set_document_roles(world.db, doc_id, [r for r in original if r != "isg"] or ["ik"])
        world.readable[doc_id] = set([r for r in original if r != "isg"] or ["ik"])
        at.run()
        assert not at.exception, at.exception
        _gone_everywhere(world, "app.chat-history", at, mark, ("document roles", doc_id))
        world.ledger.ok("app.chat-history", any(REVOKED_NOTICE in w.value for w in at.warning), "no notice")
    finally:
        set_document_roles(world.db, doc_id, original)
        world.readable[doc_id] = set(original)

    # 2. The user's role changes (the open session continues with the new role).
    user = world.people["ik"]
    at = _signed_in_app(user.username)
    at.chat_input(key="chat_input").set_value(question).run()
    shown = _shown_documents(at)
    doc_id, new_role = next((d, r) for d in shown for r in READER_ROLES if not world.may_read(r, d))
    mark = world.markers[doc_id]
    world.ledger.ok("markers.visible", mark in _every_element(at), ("app.chat-history", mark))
    try:
        users.set_role(world.db, user.username, new_role)
        at.run()
        assert not at.exception, at.exception
        world.ledger.ok("app.chat-history", bool(at.session_state["authentication_status"]), "signed out")
        _gone_everywhere(world, "app.chat-history", at, mark, ("user role", new_role))
    finally:
        users.set_role(world.db, user.username, "ik")

    # 3. A document is deleted (an extra one, so the shared world stays as it is).
    extra = marker(99)
    pdf = pdfs.text_pdf([f"{extra} SAYFA 1\nYangin tatbikati yilda bir kez yapilir {extra}.\n"
                         f"Risk analizi yilda bir yenilenir {extra}."])
    result = ingest_pdf(world.db, world.settings, world.embedder, pdf, filename="silinecek.pdf", roles=["uretim"],
                        title=f"Yonerge {extra}")
    with world.db.connection() as conn:
        world.chunk_doc.update(dict(conn.execute("SELECT id, document_id FROM chunks WHERE document_id = %s",
                                                 (result.document_id,)).fetchall()))
    try:
        at = _signed_in_app("kisi-uretim")
        at.chat_input(key="chat_input").set_value(f"{question} silinecek belge").run()
        world.ledger.ok("markers.visible", extra in _every_element(at), ("app.chat-history", extra))
        delete_document(world.db, world.settings, result.document_id)
        at.run()
        assert not at.exception, at.exception
        _gone_everywhere(world, "app.chat-history", at, extra, "deleted document")
    finally:
        if get_document(world.db, result.document_id, "admin") is not None:
            delete_document(world.db, world.settings, result.document_id)
    world.assert_no_new_leaks(before)
