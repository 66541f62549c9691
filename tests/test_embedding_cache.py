"""The content-addressed embedding cache (public.embedding_cache) on the real embedded PostgreSQL.

The cache is kept across tests on purpose (content-addressed rows are never wrong), so every test
here uses its own model name and counts only its own rows.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from ragcore import store as dbmod
from ragcore.documents import IngestError, ingest_pdf
from ragcore.embed import CachedEmbedder, EmbeddingCacheError, USEEmbedder, text_key
from tests.fakes import fake_vector
from tests.pdfs import text_pdf

REPO = Path(__file__).resolve().parent.parent


class FakeEmbedder:
    """Deterministic vectors (different for questions and passages); records what it embedded."""

    kind = "fake"
    model = "fake"
    dim = 16

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[tuple[str, list[str]]] = []

    def embed_queries(self, texts):
        self.calls.append(("q", list(texts)))
        return np.array([fake_vector("q:" + t, self.dim) for t in texts], dtype=np.float32).reshape(-1, self.dim)

    def embed_passages(self, texts):
        self.calls.append(("p", list(texts)))
        return np.array([fake_vector("p:" + t, self.dim) for t in texts], dtype=np.float32).reshape(-1, self.dim)

    def embedded(self) -> int:
        return sum(len(texts) for _, texts in self.calls)


def _rows(db: dbmod.Database, model: str) -> int:
    with db.connection() as conn:
        return conn.execute("SELECT count(*) FROM public.embedding_cache WHERE model = %s", (model,)).fetchone()[0]


def _name() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


def test_hits_and_misses_and_only_missing_texts_reach_the_model(db):
    inner = FakeEmbedder(_name())
    cached = CachedEmbedder(inner, db)
    assert (cached.kind, cached.model, cached.name, cached.dim) == ("fake", "fake", inner.name, 16)
    first = cached.embed_passages(["bir", "iki", "bir"])
    assert inner.calls == [("p", ["bir", "iki"])]
    assert cached.stats() == {"hits": 1, "misses": 2}
    again = CachedEmbedder(inner, db).embed_passages(["iki", "üç", "bir"])
    assert inner.calls[-1] == ("p", ["üç"])
    np.testing.assert_array_equal(again[0], first[1])
    np.testing.assert_array_equal(again[2], first[0])
    np.testing.assert_allclose(again[1], fake_vector("p:üç", 16), atol=1e-6)
    assert _rows(db, inner.name) == 3
    assert cached.embed_passages([]).shape == (0, 16)


def test_questions_and_passages_are_cached_apart(db):
    inner = FakeEmbedder(_name())
    cached = CachedEmbedder(inner, db)
    passage = cached.embed_passages(["Yıllık izin"])
    query = cached.embed_queries(["Yıllık izin"])
    assert not np.allclose(passage, query)
    assert [kind for kind, _ in inner.calls] == ["p", "q"]
    np.testing.assert_array_equal(cached.embed_queries(["Yıllık izin"]), query)
    assert cached.stats() == {"hits": 1, "misses": 2}


def test_the_cache_is_one_table_for_every_namespace(pg_url, db):
    """A lab namespace (search_path <ns>,public) reads and writes the same public table."""
    namespace = "test_cache_ns"
    lab = dbmod.Database(pg_url, namespace)
    try:
        applied = dbmod.migrate(lab)
        assert "006_embedding_cache" in applied  # recorded per namespace, table created only once
        with lab.connection() as conn:
            assert conn.execute("SELECT to_regclass(%s)", (f"{namespace}.embedding_cache",)).fetchone()[0] is None
        inner = FakeEmbedder(_name())
        CachedEmbedder(inner, lab).embed_passages(["ortak metin"])
        CachedEmbedder(inner, db).embed_passages(["ortak metin"])
        assert inner.embedded() == 1
    finally:
        dbmod.drop_namespace(lab, namespace)
        lab.close()
    assert _rows(db, inner.name) == 1  # dropping the namespace keeps the shared cache


WRITER = """
import sys, time
from ragcore.store import Database
from ragcore.embed import CachedEmbedder
from tests.test_embedding_cache import FakeEmbedder

url, name, order, start_at = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
texts = [f"metin {i}" for i in range(6000)]
db = Database(url, max_size=2)
cached = CachedEmbedder(FakeEmbedder(name), db)
time.sleep(max(0.0, start_at - time.time()))  # both writers start together
for start in range(0, len(texts), 3000):  # big statements, so the two writers overlap
    batch = texts[start : start + 3000]
    cached.embed_passages(batch[::-1] if order == "reverse" else batch)
print(cached.misses, cached.hits)
db.close()
"""


def test_two_processes_writing_the_same_batches_in_opposite_orders_agree(pg_url, db):
    """Concurrent writers in other processes neither fail nor deadlock, and every row is right.

    Both miss the same keys and insert them at once in opposite orders; without the sorted insert
    this deadlocked in about one run in three here."""
    name = _name()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start_at = str(time.time() + 6)  # after both interpreters have imported everything
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, pg_url, name, order, start_at], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for order in ("forward", "reverse")]
    outputs = [p.communicate(timeout=180) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        misses, hits = map(int, out.split())
        assert misses + hits == 6000
    assert _rows(db, name) == 6000
    cached = CachedEmbedder(FakeEmbedder(name), db)
    texts = [f"metin {i}" for i in range(6000)]
    vectors = cached.embed_passages(texts)
    assert cached.inner.embedded() == 0
    np.testing.assert_allclose(vectors, [fake_vector("p:" + t, 16) for t in texts], atol=1e-6)


def _unique_pdf() -> bytes:
    """A small PDF whose chunk text is new to the cache (so embedding it must write)."""
    marker = uuid.uuid4().hex
    return text_pdf([f"Madde 1 - Isveren, calisanlarin saglik ve guvenligini saglamakla yukumludur ({marker}). " * 3])


def test_an_unreachable_cache_fails_the_upload_with_its_message_and_stores_nothing(db, settings, pg_url):
    closed = dbmod.Database(pg_url, max_size=1, checkout_timeout=0.5)
    closed.close()
    closed.url = "postgresql://postgres@127.0.0.1:9/postgres"  # where it would reconnect: nobody answers
    embedder = CachedEmbedder(USEEmbedder(), closed)  # the index's own model, so only the cache fails
    with pytest.raises(IngestError, match="Gömme önbelleği okunamadı"):
        ingest_pdf(db, settings, embedder, _unique_pdf(), filename="onbellek.pdf", roles=["isg"])
    _assert_nothing_stored(db, settings)


def test_a_failing_cache_write_fails_the_upload_and_stores_nothing(db, settings):
    """Vectors that cannot be cached are not used either: the upload says why and can be retried."""
    with db.connection() as conn:
        conn.execute("""CREATE FUNCTION public.test_refuse_cache_write() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN RAISE EXCEPTION 'disk full (test)'; END $$""")
        conn.execute("""CREATE TRIGGER test_refuse_cache_write BEFORE INSERT ON public.embedding_cache
                        FOR EACH ROW EXECUTE FUNCTION public.test_refuse_cache_write()""")
    pdf = _unique_pdf()
    try:
        embedder = CachedEmbedder(USEEmbedder(), db)
        with pytest.raises(IngestError, match="Gömme önbelleğine yazılamadı.*disk full"):
            ingest_pdf(db, settings, embedder, pdf, filename="yazilamaz.pdf", roles=["isg"])
        _assert_nothing_stored(db, settings)
    finally:
        with db.connection() as conn:
            conn.execute("DROP TRIGGER test_refuse_cache_write ON public.embedding_cache")
            conn.execute("DROP FUNCTION public.test_refuse_cache_write()")
    retried = ingest_pdf(db, settings, CachedEmbedder(USEEmbedder(), db), pdf, filename="yazilamaz.pdf", roles=["isg"])
    assert retried.chunks >= 1  # the same upload, once the cache works again


def test_cached_vectors_of_another_size_are_refused(db):
    """A model that changed behind the same name (e.g. an Ollama tag) is not mixed with its old vectors."""
    name = _name()
    with db.connection() as conn:
        conn.execute("INSERT INTO public.embedding_cache (model, kind, text_sha256, dim, vector) "
                     "VALUES (%s, 'p', %s, 2, %s)", (name, text_key("eski"), np.ones(2, "<f4").tobytes()))
    with pytest.raises(EmbeddingCacheError, match="boyutu modelinkiyle"):
        CachedEmbedder(FakeEmbedder(name), db).embed_passages(["eski"])


def test_the_table_refuses_malformed_rows(db):
    with pytest.raises(Exception, match="check constraint"):
        with db.connection() as conn:
            conn.execute("INSERT INTO public.embedding_cache (model, kind, text_sha256, dim, vector) "
                         "VALUES ('x', 'p', %s, 4, %s)", (text_key("a"), b"\0" * 12))


def _assert_nothing_stored(db: dbmod.Database, settings) -> None:
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0
    assert not settings.uploads_dir.exists() or not any(settings.uploads_dir.iterdir())
