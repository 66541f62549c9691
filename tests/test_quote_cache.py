"""ragcore.answer.quote_cache and its callers: a stored document's quotable sentences are embedded
into the passage cache once, so answers quoting or marking them embed nothing; the filling runs
after the commit and never undoes or fails the upload."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from ragcore import jobs
from ragcore.answer import choose_quote, split_sentences, unwarmed_documents, warm_quote_sentences
from ragcore.answer.quote_cache import STAGE, quote_sentences
from ragcore.core import Settings, Source
from ragcore.documents import delete_document, document_chunks, ingest_pdf, list_documents
from ragcore.embed import CachedEmbedder, EmbeddingError, make_embedder, uncached_passages
from ragcore.jobs import JobCancelled
from tests import pdfs

QUESTION = "İşveren risk değerlendirmesi yapmakla yükümlü müdür?"


@pytest.fixture()
def settings(settings: Settings) -> Settings:
    """The quoter's sentences are filled where the rules answer (ANSWER_POLICY=rules); the reader,
    the default, never reads them."""
    return settings.replace(answer_policy="rules")


@pytest.fixture(scope="module")
def use_embedder(pg_url: str) -> Any:
    return make_embedder(Settings(database_url=pg_url, embed_backend="use", ollama_base_url="http://127.0.0.1:9"))


def fresh_law_pdf() -> bytes:
    """A small law whose every sentence carries a fresh token: the passage cache, shared by the
    session's tests, cannot hold any of its sentences yet."""
    token = uuid.uuid4().hex[:12]
    body = "\n".join(f"MADDE {n} - (1) Isveren risk degerlendirmesi yapmak veya yaptirmakla yukumludur. "
                     f"Kayit {token} numarali defterde {n}. sirada tutulur." for n in range(1, 7))
    return pdfs.text_pdf([f"SAYFA {p}\n{body}" for p in range(2)])


def _stored(db, settings, use_embedder) -> int:
    return ingest_pdf(db, settings, use_embedder, fresh_law_pdf(), filename="law.pdf", roles=["isg"]).document_id


def _context(db, document_id: int) -> list[Source]:
    return [Source(rank, rank, document_id, "Yönetmelik", "law.pdf", c.page_start, c.page_end, c.article, 0.0, c.text)
            for rank, c in enumerate(document_chunks(db, document_id, "admin")[:5], start=1)]


def test_a_warmed_document_is_quoted_without_embedding_a_sentence(db, settings, use_embedder) -> None:
    document_id = _stored(db, settings, use_embedder)
    sentences = quote_sentences(db, [document_id])
    chunks = document_chunks(db, document_id, "admin")
    assert sentences and set(sentences) == {u for c in chunks for u in split_sentences(c.text)}
    assert len(sentences) == len(set(sentences))  # each once, though chunks overlap
    events: list[tuple[str, int, int]] = []
    assert warm_quote_sentences(db, CachedEmbedder(use_embedder, db), [document_id], lambda *e: events.append(e)) \
        == len(sentences)
    assert events[0] == (STAGE, 0, len(sentences)) and events[-1] == (STAGE, len(sentences), len(sentences))
    answering = CachedEmbedder(use_embedder, db)
    choose_quote(QUESTION, _context(db, document_id), answering)
    assert answering.misses == 0 and answering.hits > 0  # every sentence came from the cache


def test_an_unwarmed_document_still_quotes_and_the_answer_writes_nothing(db, settings, use_embedder) -> None:
    document_id = _stored(db, settings, use_embedder)
    first = CachedEmbedder(use_embedder, db)
    choose_quote(QUESTION, _context(db, document_id), first)
    second = CachedEmbedder(use_embedder, db)
    choose_quote(QUESTION, _context(db, document_id), second)
    assert first.misses > 0 and second.misses == first.misses  # issue 21: a question never fills the cache
    assert warm_quote_sentences(db, use_embedder, [document_id]) == 0  # no cache to fill: nothing done


class FailingEmbedder:
    kind, model, name, dim = "use", "broken", "broken-model", 512

    def embed_passages(self, texts):
        raise EmbeddingError("model gone")

    def embed_queries(self, texts):
        raise EmbeddingError("model gone")


def test_warming_after_the_commit_never_fails_or_undoes_the_upload(db, settings, use_embedder) -> None:
    document_id = _stored(db, settings, use_embedder)

    def cancelled(stage: str, done: int, total: int) -> None:
        raise JobCancelled()

    assert jobs.warm_quotes(db, CachedEmbedder(use_embedder, db), [document_id], cancelled) is None
    assert jobs.warm_quotes(db, CachedEmbedder(FailingEmbedder(), db), [document_id]) is None
    assert [d.id for d in list_documents(db, "admin")] == [document_id]  # the document stays, searchable
    assert jobs.warm_quotes(db, CachedEmbedder(use_embedder, db), None) == len(quote_sentences(db, [document_id]))
    assert quote_sentences(db) == quote_sentences(db, [document_id])  # None: every stored document


def test_the_upload_job_fills_the_cache_for_its_document(db, settings, use_embedder) -> None:
    job = jobs.submit_ingest(db, settings, fresh_law_pdf(), filename="law.pdf", roles=["isg"], created_by="admin")
    jobs.run_worker(settings, wait=False, embedder_factory=lambda: CachedEmbedder(use_embedder, db))
    done = jobs.get_job(db, job.id)
    assert done.status == "succeeded", done.error
    (document,) = list_documents(db, "admin")
    assert done.result["quote_sentences"] == len(quote_sentences(db, [document.id])) > 0
    assert done.stage == STAGE and jobs.get_kind(jobs.INGEST).fraction(done) == 1.0
    answering = CachedEmbedder(use_embedder, db)
    choose_quote(QUESTION, _context(db, document.id), answering)
    assert answering.misses == 0


def test_documents_stored_without_their_sentences_are_found_by_keys_and_filled_once(db, settings, use_embedder) -> None:
    assert jobs.queue_unwarmed_quotes(db) is None  # no document yet: nothing to fill, no job
    cold, warm = _stored(db, settings, use_embedder), _stored(db, settings, use_embedder)
    assert jobs.warm_quotes(db, CachedEmbedder(use_embedder, db), [warm]) > 0
    assert unwarmed_documents(db) == [cold]
    job = jobs.queue_unwarmed_quotes(db)
    assert job is not None and job.kind == jobs.QUOTES and job.arguments == {"document_ids": [cold]}
    assert jobs.queue_unwarmed_quotes(db) is None  # one queued already: no second job
    jobs.run_worker(settings, wait=False, embedder_factory=lambda: CachedEmbedder(use_embedder, db))
    done = jobs.get_job(db, job.id)
    assert done.status == "succeeded", done.error
    assert done.result == {"documents": 1, "quote_sentences": len(quote_sentences(db, [cold]))}
    assert unwarmed_documents(db) == [] and jobs.queue_unwarmed_quotes(db) is None
    answering = CachedEmbedder(use_embedder, db)
    choose_quote(QUESTION, _context(db, cold), answering)
    assert answering.misses == 0


def test_a_serving_worker_queues_the_fill_when_it_starts(db, settings, use_embedder) -> None:
    document_id = _stored(db, settings, use_embedder)
    worker = jobs.BackgroundWorker(settings, label="start", embedder_factory=lambda: CachedEmbedder(use_embedder, db),
                                   progress_interval=0).start()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and unwarmed_documents(db):
            time.sleep(0.1)
    finally:
        worker.stop()
    (job,) = jobs.list_jobs(db, kind=jobs.QUOTES)
    assert job.status == "succeeded" and job.arguments == {"document_ids": [document_id]}, job.error
    assert unwarmed_documents(db) == []


def test_a_document_deleted_before_the_fill_is_skipped(db, settings, use_embedder) -> None:
    gone, kept = _stored(db, settings, use_embedder), _stored(db, settings, use_embedder)
    delete_document(db, settings, gone)
    assert quote_sentences(db, [gone, kept]) == quote_sentences(db, [kept])


def test_uncached_passages_reads_keys_only_and_names_each_missing_text_once(db, use_embedder) -> None:
    cached, fresh = f"önbellekte {uuid.uuid4().hex}", f"önbellekte değil {uuid.uuid4().hex}"
    CachedEmbedder(use_embedder, db).embed_passages([cached])
    assert uncached_passages(db, use_embedder.name, [cached, fresh, fresh]) == [fresh]
    assert uncached_passages(db, "another-model", [cached]) == [cached]


def test_under_the_reader_no_upload_or_worker_embeds_the_quotable_sentences(db, settings, use_embedder) -> None:
    """The reader policy never ranks the sentences (it reads its own windows): filling them would be
    embedding work no answer reads."""
    reading = settings.replace(answer_policy="reader")
    job = jobs.submit_ingest(db, reading, fresh_law_pdf(), filename="law.pdf", roles=["isg"], created_by="admin")
    jobs.run_worker(reading, wait=False, embedder_factory=lambda: CachedEmbedder(use_embedder, db))
    done = jobs.get_job(db, job.id)
    assert done.status == "succeeded", done.error
    assert done.result["quote_sentences"] == 0
    (document,) = list_documents(db, "admin")
    assert unwarmed_documents(db) == [document.id]  # none of its sentences in the cache
    assert jobs.queue_unwarmed_quotes(db, reading) is None  # nor queued when a worker starts
    assert jobs.queue_unwarmed_quotes(db, settings) is not None  # back to the rules: the next start fills them
