"""One real embedded PostgreSQL per test session, clean tables per test. No mocked database."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from eval.schema import migrate_lab
from ragcore import store as dbmod
from ragcore.core import Settings

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS_DIR = Path(os.environ.get("DOCUMENTS_DIR") or REPO.parent / "shared" / "data" / "documents")
TQUAD_DIR = Path(os.environ.get("TQUAD_DIR") or REPO.parent / "shared" / "data" / "tquad")
LAW_6331 = DOCUMENTS_DIR / "6331-is-sagligi-ve-guvenligi-kanunu.pdf"
LAW_4857 = DOCUMENTS_DIR / "4857-is-kanunu.pdf"
LAW_5510 = DOCUMENTS_DIR / "5510-sosyal-sigortalar-ve-genel-saglik-sigortasi-kanunu.pdf"

# Tests marked `@pytest.mark.needs_data("laws" | "tquad")` fail (never skip) without their files,
# so a run without the data cannot pass for a run with it.
DATA_FILES = {
    "laws": (LAW_6331, LAW_4857, LAW_5510),
    "tquad": (TQUAD_DIR / "train-v0.1.json", TQUAD_DIR / "dev-v0.1.json"),
}
MISSING_DATA = (
    "test data missing: {missing}. The data-dependent tests need the three sample laws in DOCUMENTS_DIR "
    "(now {documents}) and TQuAD v0.1 in TQUAD_DIR (now {tquad}). Run `make download-data`, or point "
    "DOCUMENTS_DIR / TQUAD_DIR at the folders that hold them."
)


def require_data(*names: str) -> None:
    """Fail the calling test (or fixture) when the named data files are missing."""
    unknown = [name for name in names if name not in DATA_FILES]
    assert names and not unknown, f"needs_data takes {sorted(DATA_FILES)}, got {names}"
    missing = [str(path) for name in names for path in DATA_FILES[name] if not path.is_file()]
    if missing:
        pytest.fail(MISSING_DATA.format(missing=", ".join(missing), documents=DOCUMENTS_DIR, tquad=TQUAD_DIR),
                    pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in item.iter_markers("needs_data"):
        require_data(*marker.args)


# Tables emptied between tests. TRUNCATE skips the statement triggers, so the per-role
# statistics (lexicon, lex_df_histogram, lex_stats; migration 003) are reset explicitly too.
# public.embedding_cache is kept on purpose: it is content-addressed (a row is never wrong for a
# later test), and keeping it makes the real-model tests pay for each text once per session.
_SEEDED_ROLES = ["admin", "isg", "ik", "uretim", "personel", "denetci"]
_TABLES = ("users, user_roles, documents, chunks, postings, lexicon, lex_df_histogram, questions, login_attempts, "
           "directory_group_roles")
# The lab's tables (eval/migrations/001_gold_sets.sql, applied by eval.schema.migrate_lab): gold sets and lab runs with their result cache.
_LAB_TABLES = "gold_sets, gold_set_versions, gold_questions, lab_runs, lab_results"
# Our jobs and the queue library's jobs (ragcore.jobs), so no test's job reaches another's worker. Not
# procrastinate_workers: a worker alive across tests (the browser test's app) must keep its row.
_JOB_TABLES = "jobs, procrastinate_jobs, procrastinate_events, procrastinate_periodic_defers"
# The term-expansion table starts every test as migration 010 seeded it (tests edit it).
_SEEDED_EXPANSIONS: list[tuple] = []


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
    migrate_lab(database)
    with database.connection() as conn:
        _SEEDED_EXPANSIONS[:] = conn.execute(
            "SELECT everyday, legal, origin FROM public.term_expansions ORDER BY id").fetchall()
    yield database
    database.close()


def reset_tables(database: dbmod.Database) -> None:
    """The clean state every test starts from (the `db` fixture), and every module-scoped corpus
    (`tests.retrieval_support.clean`): empty tables, seeded expansions, and the embedding index
    (its model and vector columns are the session's) recording sentence windows, as a new index
    does with the default DENSE_WINDOWS, whatever an earlier test set."""
    with database.connection() as conn:
        conn.execute(f"TRUNCATE {_TABLES}, {_JOB_TABLES}, {_LAB_TABLES} RESTART IDENTITY CASCADE")
        # The roles and readers migration 021 seeds, and no other (tests create and delete some).
        conn.execute("DELETE FROM role_bits WHERE cardinality(members) > 1 OR NOT (role = ANY(%s))", (_SEEDED_ROLES,))
        conn.execute("DELETE FROM roles WHERE NOT (name = ANY(%s))", (_SEEDED_ROLES,))
        conn.execute("UPDATE lex_stats SET chunk_count = 0, total_length = 0")
        conn.execute("UPDATE embedding_index SET windows = %s", (Settings().dense_windows,))
        conn.execute("TRUNCATE public.term_expansions RESTART IDENTITY")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO public.term_expansions (everyday, legal, origin) VALUES (%s, %s, %s)",
                            _SEEDED_EXPANSIONS)


@pytest.fixture()
def server_root() -> Iterator[Path]:
    """A folder for a test's own embedded server, outside pytest's tmp_path (as `pg_root` is):
    run as root, pgserver starts PostgreSQL as its own user, who must reach the data directory,
    and every pytest session on the machine resets /tmp/pytest-of-root to mode 0700."""
    root = Path(tempfile.mkdtemp(prefix="dayanak-server-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture()
def db(session_db: dbmod.Database) -> Iterator[dbmod.Database]:
    """The migrated public namespace, emptied before the test."""
    reset_tables(session_db)
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
