"""One real embedded PostgreSQL per test session, clean tables per test. No mocked database."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragcore import db as dbmod
from ragcore.config import Settings

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS_DIR = Path(os.environ.get("DOCUMENTS_DIR") or REPO.parent / "shared" / "data" / "documents")
TQUAD_DIR = Path(os.environ.get("TQUAD_DIR") or REPO.parent / "shared" / "data" / "tquad")
LAW_6331 = DOCUMENTS_DIR / "6331-is-sagligi-ve-guvenligi-kanunu.pdf"
LAW_4857 = DOCUMENTS_DIR / "4857-is-kanunu.pdf"
LAW_5510 = DOCUMENTS_DIR / "5510-sosyal-sigortalar-ve-genel-saglik-sigortasi-kanunu.pdf"

# Tables emptied between tests. TRUNCATE skips the statement triggers, so the per-role
# statistics (lexicon, lex_df_histogram, lex_stats; migration 003) are reset explicitly too.
_TABLES = "users, documents, chunks, postings, lexicon, lex_df_histogram, questions, login_attempts"


@pytest.fixture(scope="session")
def pg_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="dayanak-test-"))
    yield root
    dbmod.stop_embedded(root / "server")
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_url(pg_root: Path) -> str:
    """The session's embedded server; every test's DATABASE_URL points at it."""
    return dbmod.embedded_url(pg_root / "server")


@pytest.fixture(scope="session")
def session_db(pg_url: str) -> Iterator[dbmod.Database]:
    database = dbmod.Database(pg_url)
    dbmod.migrate(database)
    yield database
    database.close()


def _clean(database: dbmod.Database) -> None:
    with database.connection() as conn:
        conn.execute(f"TRUNCATE {_TABLES} RESTART IDENTITY CASCADE")
        conn.execute("UPDATE lex_stats SET chunk_count = 0, total_length = 0")


@pytest.fixture()
def db(session_db: dbmod.Database) -> Iterator[dbmod.Database]:
    """The migrated public namespace, emptied before the test."""
    _clean(session_db)
    yield session_db


@pytest.fixture()
def settings(pg_url: str, tmp_path: Path) -> Settings:
    """Isolated settings: the session server, a private DATA_DIR, embedded models, no Ollama."""
    return Settings(
        database_url=pg_url,
        data_dir=tmp_path / "data",
        ollama_base_url="http://127.0.0.1:9",
        embed_backend="use",
        llm_backend="extractive",
        tquad_dir=TQUAD_DIR,
        documents_dir=DOCUMENTS_DIR,
        cookie_key="test-cookie-key-not-secret",
    )


@pytest.fixture()
def fake_llm() -> Iterator[object]:
    """A local server speaking the Ollama and OpenAI APIs (see tests/fakes.py)."""
    from tests.fakes import FakeLLMServer

    server = FakeLLMServer().start()
    yield server
    server.stop()
