"""The content-addressed embedding cache (public.embedding_cache) on the real embedded PostgreSQL.

The cache is kept across tests on purpose (content-addressed rows are never wrong), so every test
here uses its own model name and counts only its own rows, or counts the whole table before and
after (questions add no row).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ragcore import store as dbmod
from ragcore.access import create_user
from ragcore.cli import main as cli_main
from ragcore.documents import IngestError, ingest_pdf
from ragcore.embed import CachedEmbedder, EmbeddingCacheError, USEEmbedder, text_key
from tests.api_support import api_app, bearer, person
from tests.fakes import fake_vector
from tests.pdfs import law_pdf, text_pdf
from tests.retrieval_support import DocSpec, insert_document, make_test_embedder

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


def test_questions_never_touch_the_shared_cache(db):
    """A question is embedded by the model on every call and leaves no row (issue 21): a shared
    question cache answered a text another user had asked faster than a fresh one."""
    inner = FakeEmbedder(_name())
    cached = CachedEmbedder(inner, db)
    first = cached.embed_queries(["Yıllık izin", "Yıllık izin"])
    again = CachedEmbedder(inner, db).embed_queries(["Yıllık izin"])
    assert inner.calls == [("q", ["Yıllık izin", "Yıllık izin"]), ("q", ["Yıllık izin"])]
    np.testing.assert_array_equal(again[0], first[0])
    assert _rows(db, inner.name) == 0 and cached.stats() == {"hits": 0, "misses": 0}
    assert cached.embed_queries([]).shape == (0, 16) and len(inner.calls) == 2


def test_the_lab_caches_questions_apart_and_the_app_never_reads_them(db):
    """`cache_questions=True` (the lab's fixed question sets) caches them apart from passages; an
    embedder without it, as every user path has, embeds the same question again."""
    inner = FakeEmbedder(_name())
    lab = CachedEmbedder(inner, db, cache_questions=True)
    passage = lab.embed_passages(["Yıllık izin"])
    query = lab.embed_queries(["Yıllık izin"])
    assert not np.allclose(passage, query)
    assert [kind for kind, _ in inner.calls] == ["p", "q"]
    np.testing.assert_array_equal(lab.embed_queries(["Yıllık izin"]), query)
    assert lab.stats() == {"hits": 1, "misses": 2} and _rows(db, inner.name) == 2
    CachedEmbedder(inner, db).embed_queries(["Yıllık izin"])
    assert inner.calls[-1] == ("q", ["Yıllık izin"])


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


class CountingModel:
    """The app's test embedder (USE) with a counter at the embedder boundary: how often the model
    itself embedded each question text (what a cache would save, and so what timing would show)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.kind, self.model, self.name, self.dim = inner.kind, inner.model, inner.name, inner.dim
        self.questions: Counter[str] = Counter()

    def embed_queries(self, texts):
        self.questions.update(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts):
        return self.inner.embed_passages(texts)


def _all_rows(db: dbmod.Database) -> int:
    with db.connection() as conn:
        return conn.execute("SELECT count(*) FROM public.embedding_cache").fetchone()[0]


def test_what_one_user_asked_costs_another_as_much_as_a_fresh_text(db, settings):
    """User A (ik) asks and searches texts through the API; user B (isg) then searches and asks
    those texts and fresh ones. The model embeds B's asked texts exactly as often as the fresh
    ones (so B's retrieval_ms cannot tell them apart), and the cache gains no row from any of it."""
    model = CountingModel(make_test_embedder())
    marker = uuid.uuid4().hex[:8]
    asked = [f"Yonetmeligin amaci nedir {marker} {i}?" for i in range(4)]
    fresh = [f"Yonetmelik kimleri kapsar {marker} {i}?" for i in range(4)]
    with api_app(db, settings, model) as api:
        ingest_pdf(db, settings, api.embedder, law_pdf(), filename="yonetmelik.pdf", roles=["isg", "ik"])
        a, b = bearer(person(db, "ayse", "ik")), bearer(person(db, "mehmet", "isg"))
        rows = _all_rows(db)
        for text in asked:
            assert api.client.post("/v1/chat", json={"question": text}, headers=a).status_code == 200
            assert api.client.get("/v1/search", params={"q": text}, headers=a).status_code == 200
        before = Counter(model.questions)
        for text in asked + fresh:
            search = api.client.get("/v1/search", params={"q": text}, headers=b)
            assert search.status_code == 200 and search.json()["retrieval_ms"] >= 0
            assert api.client.post("/v1/chat", json={"question": text}, headers=b).status_code == 200
    by_b = {text: model.questions[text] - before[text] for text in asked + fresh}
    assert [by_b[t] for t in asked] == [by_b[t] for t in fresh] == [2] * 4  # one search, one chat each
    assert _all_rows(db) == rows


def test_distinct_searches_and_questions_do_not_grow_the_cache(db, pg_url, tmp_path, monkeypatch, capsys):
    """Issue 21: every distinct search added a row for good. Through the CLI (search and ask),
    forty distinct texts now add none."""
    monkeypatch.chdir(tmp_path)
    for name, value in {"DATABASE_URL": pg_url, "DATA_DIR": str(tmp_path / "data"), "EMBED_BACKEND": "use",
                        "LLM_BACKEND": "extractive", "OLLAMA_BASE_URL": "http://127.0.0.1:9"}.items():
        monkeypatch.setenv(name, value)
    insert_document(db, make_test_embedder(), DocSpec("6331 İSG", ("isg",), (
        ("MADDE 10 – (1) İşveren risk değerlendirmesi yapmak veya yaptırmakla yükümlüdür.", 7, "Madde 10"),)))
    create_user(db, "mehmet", "isg", "parola-123")
    rows = _all_rows(db)
    marker = uuid.uuid4().hex[:8]
    for i in range(36):
        assert cli_main(["search", f"risk değerlendirmesi {marker} {i}", "--role", "isg", "--json"]) == 0
    for i in range(4):
        assert cli_main(["ask", f"Risk değerlendirmesi kimin işi {marker} {i}?", "--user", "mehmet", "--json"]) == 0
    capsys.readouterr()
    assert _all_rows(db) == rows


def test_no_user_path_caches_questions():
    """Only the lab's own runs (eval/, scripts/, bench/) may pass `cache_questions`; the app,
    the API, the CLI and the worker never do."""
    app_files = [*REPO.glob("ragcore/**/*.py"), *REPO.glob("ui/**/*.py"), *REPO.glob("pages/*.py"), REPO / "app.py"]
    offenders = [str(path.relative_to(REPO)) for path in app_files
                 if path != REPO / "ragcore" / "embed" / "cache.py" and "cache_questions" in path.read_text("utf-8")]
    assert len(app_files) > 50 and offenders == []


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
