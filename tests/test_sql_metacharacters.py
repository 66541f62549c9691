"""SQL metacharacters through every text input: stored and read back literally, tables intact.

Every statement in ragcore is parameterised; this feeds the classic payloads through each place
a user or an operator can type text — questions (ask and search, also through the CLI), usernames,
display names, e-mails and passwords, document titles and file names, feedback comments, roles
(which must be refused) and the login-throttling key — and checks the text round-trips byte for
byte and every table still exists with its rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcore.access import auth, users
from ragcore.answer import AnswerService, ExtractiveGenerator, review_queue, set_feedback
from ragcore.cli import main as cli_main
from ragcore.documents import IngestError, get_document, ingest_pdf, list_documents, set_document_roles
from ragcore.embed import USEEmbedder
from ragcore.retrieval import RetrievalError, retrieve, search
from tests import pdfs
from tests.questions_support import logged_questions

PAYLOADS = [
    "'; DROP TABLE users; --",
    "Robert'); DROP TABLE documents;--",
    "' OR '1'='1",
    "\" OR \"\"=\"",
    "%s",
    "%(x)s",
    "%%s %(role)s {0} {}",
    "\\",
    "\\'; SELECT pg_sleep(5); --",
    "$$",
    "$1 $tag$ x $tag$",
    "“akıllı” ‘tırnak’ «açı» ‹tek› „alt“ ＇tam＇",
    "İşveren ŞĞÜÖÇı; -- yorum /* blok */ ; COMMIT; ROLLBACK;",
]
TABLES = ("users", "documents", "chunks", "postings", "lexicon", "lex_stats", "questions", "login_attempts",
          "embedding_index")


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


@pytest.fixture(autouse=True)
def fast_bcrypt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cost 4 instead of 12: these tests check what is stored, not how slow hashing is."""
    import bcrypt

    real = bcrypt.gensalt
    monkeypatch.setattr(bcrypt, "gensalt", lambda rounds=4, prefix=b"2b": real(4, prefix))


def assert_tables_intact(db, *, users_at_least: int = 0, documents_at_least: int = 0) -> None:
    with db.connection() as conn:
        for table in TABLES:
            assert conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is not None, table
        assert conn.execute("SELECT count(*) FROM users").fetchone()[0] >= users_at_least
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] >= documents_at_least


def _password(payload: str) -> str:
    text = payload if len(payload) >= 8 else payload + "-parola-1"
    return text.strip() if text.strip() == text else f"x{text.strip()}x"


@pytest.fixture()
def corpus(db, settings, embedder):
    """One document per payload, titled and named with it; a reader per payload as display name."""
    ids = []
    for index, payload in enumerate(PAYLOADS):
        data = pdfs.text_pdf([f"Belge {index}. Isveren risk degerlendirmesi yapar ve tedbirleri belirler."])
        result = ingest_pdf(db, settings, embedder, data, filename=f"{payload}.pdf", roles=["isg"], title=payload,
                            uploaded_by="admin")
        ids.append(result.document_id)
    reader = users.create_user(db, "okur", "isg", "okur-parola-1", display_name="Okur")
    return ids, reader


def test_document_titles_and_filenames_round_trip(corpus, db, embedder) -> None:
    ids, _ = corpus
    for doc_id, payload in zip(ids, PAYLOADS, strict=True):
        doc = get_document(db, doc_id, "isg")
        assert doc.title == payload.strip()
        assert doc.filename == Path(f"{payload}.pdf").name  # a path separator would keep only the last part
    assert {d.title for d in list_documents(db, "isg")} == {p.strip() for p in PAYLOADS}
    titles = {s.title for s in search(db, embedder, "risk degerlendirmesi", "isg", k=50, mode="lexical")}
    assert titles == {p.strip() for p in PAYLOADS}
    assert_tables_intact(db, users_at_least=1, documents_at_least=len(PAYLOADS))


@pytest.mark.parametrize("payload", PAYLOADS)
def test_questions_and_feedback_round_trip(corpus, db, settings, embedder, payload) -> None:
    _, reader = corpus
    service = AnswerService(db, settings.replace(refusal_threshold=0.0), embedder, ExtractiveGenerator(embedder))
    question = f"{payload} risk degerlendirmesi"
    answer = service.ask(reader, question)
    assert answer.question == question
    for mode in ("rrf", "dense", "lexical", "weighted"):
        retrieve(db, embedder, payload, "isg", k=5, mode=mode)  # no error, whatever it finds
    set_feedback(db, answer.question_id, "okur", -1, payload)
    logged = logged_questions(db, "okur")[0]
    assert (logged.question, logged.feedback, logged.feedback_comment) == (question, -1, payload.strip())
    assert any(item.public_id == answer.question_id and item.feedback_comment == payload.strip()
               for item in review_queue(db))
    assert_tables_intact(db, users_at_least=1, documents_at_least=len(PAYLOADS))


@pytest.mark.parametrize("payload", PAYLOADS)
def test_users_display_names_emails_passwords_and_throttling(db, payload) -> None:
    password = _password(payload)
    # Usernames: metacharacters are not allowed at all (a clear refusal, nothing stored)…
    with pytest.raises(users.UserError, match="Kullanıcı adı"):
        users.create_user(db, payload, "ik", password)
    # …but looking them up or logging in with them is harmless.
    assert users.get_user(db, payload) is None
    assert users.authenticate(db, payload, password) is None
    # Display names, e-mails and passwords are stored and checked literally.
    user = users.create_user(db, "ayse", "ik", password, display_name=payload, email=payload)
    stored = users.get_user(db, "ayse")
    assert (stored.display_name, stored.email) == (payload.strip(), payload)
    assert users.authenticate(db, "ayse", password) == user
    assert users.authenticate(db, "ayse", password + "x") is None
    assert users.authenticate(db, "ayse", "' OR '1'='1" if password != "' OR '1'='1" else "' OR ''='") is None
    new_password = _password(payload[::-1])
    users.set_password(db, "ayse", new_password)
    assert users.authenticate(db, "ayse", new_password) is not None
    # Login throttling keys on the typed name and the client address, whatever they contain.
    key = payload.strip().lower()
    for _ in range(auth.DEFAULT_POLICY.max_attempts):
        gate = auth.begin_attempt(db, payload, payload)
    assert gate.allowed and gate.remaining == 0 and not auth.check(db, payload, payload).allowed
    with db.connection() as conn:
        rows = conn.execute("SELECT username, address, attempts FROM login_attempts").fetchall()
    assert sorted(rows) == sorted([(key, "*", auth.DEFAULT_POLICY.max_attempts),
                                   (key, payload.strip(), auth.DEFAULT_POLICY.max_attempts)])
    auth.unlock(db, payload)
    assert auth.check(db, payload, payload).allowed
    assert_tables_intact(db, users_at_least=1)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_roles_with_metacharacters_are_refused(db, settings, embedder, payload) -> None:
    data = pdfs.text_pdf(["Rol denemesi. Isveren risk degerlendirmesi yapar."])
    with pytest.raises(IngestError, match="Bilinmeyen rol"):
        ingest_pdf(db, settings, embedder, data, filename="rol.pdf", roles=[payload])
    with pytest.raises(users.UserError, match="Bilinmeyen rol"):
        users.create_user(db, "rolcu", payload, "rolcu-parola")
    users.create_user(db, "rolcu", "ik", "rolcu-parola")
    with pytest.raises(users.UserError, match="Bilinmeyen rol"):
        users.set_role(db, "rolcu", payload)
    assert users.get_user(db, "rolcu").role == "ik"
    with pytest.raises(RetrievalError, match="Bilinmeyen rol"):
        retrieve(db, embedder, "risk", payload, k=5, mode="rrf")
    doc = ingest_pdf(db, settings, embedder, data, filename="rol.pdf", roles=["isg"])
    with pytest.raises(IngestError, match="Bilinmeyen rol"):
        set_document_roles(db, doc.document_id, ["isg", payload])
    assert get_document(db, doc.document_id, "admin").allowed_roles == ("isg",)
    # The listing takes the role as a bound value: an injected "role" matches no document.
    assert list_documents(db, payload) == [] and get_document(db, doc.document_id, payload) is None
    assert_tables_intact(db, users_at_least=1, documents_at_least=1)


def test_cli_search_ask_and_add_user_with_metacharacters(corpus, db, settings, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in {"DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir),
                        "EMBED_BACKEND": "use", "LLM_BACKEND": "extractive", "OLLAMA_BASE_URL": "http://127.0.0.1:9",
                        "REFUSAL_THRESHOLD": "0"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RETRIEVAL_MODE", raising=False)
    for payload in PAYLOADS:
        assert cli_main(["search", payload, "--role", "isg", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["question"] == payload
        assert cli_main(["ask", f"{payload} risk", "--user", "okur", "--json"]) == 0
        # REFUSAL_THRESHOLD=0 and "risk" in the question: the law's risk article answers every one
        assert json.loads(capsys.readouterr().out)["status"] == "answered"
    assert [q.question for q in logged_questions(db, "okur")][::-1] == [f"{p} risk" for p in PAYLOADS]
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("'; DROP TABLE users; --\n"))
    assert cli_main(["add-user", "yeni", "ik", "--password-stdin", "--name", PAYLOADS[0], "--json"]) == 0
    capsys.readouterr()
    assert users.authenticate(db, "yeni", "'; DROP TABLE users; --").display_name == PAYLOADS[0]
    assert_tables_intact(db, users_at_least=2, documents_at_least=len(PAYLOADS))
