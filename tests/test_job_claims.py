"""Claims (ragcore/jobs/claims.py): a job's attempt and a document's quote sentences run in one
place at a time, however many workers run — the app's, the API's and separate ones."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from ragcore import jobs
from ragcore import store as dbmod
from ragcore.answer import unwarmed_documents
from ragcore.core import Settings
from ragcore.documents import list_documents
from ragcore.embed import CachedEmbedder, make_embedder
from ragcore.jobs import claims, service
from ragcore.jobs.worker import EARLIER_ATTEMPT_RUNNING
from tests import pdfs
from tests.jobs_support import DEADLINE_S, wait_for


@pytest.fixture()
def settings(settings: Settings) -> Settings:
    """The quoter's sentences are filled where the rules answer (ANSWER_POLICY=rules); the reader,
    the default, never reads them."""
    return settings.replace(answer_policy="rules")


@pytest.fixture(scope="module")
def use_embedder(pg_url: str) -> Any:
    return make_embedder(Settings(database_url=pg_url, embed_backend="use", ollama_base_url="http://127.0.0.1:9"))


@pytest.fixture()
def fast(settings: Settings) -> Settings:
    return settings.replace(job_heartbeat_seconds=0.5)


def fresh_law_pdf() -> bytes:
    """A law of sentences no earlier test embedded: the shared embedding cache (kept across tests)
    would otherwise answer for them, and the quotes stage would never call the held embedder."""
    token = uuid.uuid4().hex[:12]
    return pdfs.text_pdf([f"{page}\nKayit {token}." for page in pdfs.LAW_PAGES])


class NoEmbedder:
    """For a worker that must not embed anything."""

    def __init__(self) -> None:
        raise AssertionError("a worker embedded what another job was already doing")


class HeldWhileFillingQuotes:
    """The real embedder, except that while any document's quote sentences are claimed (the
    upload's own quotes stage, which claims before it embeds) it waits for the test's go."""

    def __init__(self, inner: Any, db: dbmod.Database) -> None:
        self.inner, self.db = inner, db
        self.kind, self.model, self.name, self.dim = inner.kind, inner.model, inner.name, inner.dim
        self.filling = threading.Event()
        self.go = threading.Event()

    def embed_passages(self, texts):
        stored = [d.id for d in list_documents(self.db, "admin")]
        if claims.held(self.db, claims.QUOTE_SENTENCES, stored):
            self.filling.set()
            assert self.go.wait(DEADLINE_S), "the test never let the quotes stage go on"
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)


def test_a_claim_excludes_everyone_else_until_its_block_ends(db) -> None:
    with claims.claim(db, claims.QUOTE_SENTENCES, [7, 8, 7]) as first:
        assert first == [7, 8]
        assert claims.held(db, claims.QUOTE_SENTENCES, [7, 8, 9]) == {7, 8}
        with claims.claim(db, claims.QUOTE_SENTENCES, [8, 9]) as second:
            assert second == [9]  # 8 is the first block's
        assert claims.held(db, claims.JOB_ATTEMPT, [7, 8]) == set()  # another kind of work, other keys
    assert claims.held(db, claims.QUOTE_SENTENCES, [7, 8, 9]) == set()


def test_claims_of_another_namespace_are_its_own(db, pg_url) -> None:
    lab = dbmod.Database(pg_url, namespace="claims_lab")
    try:
        with claims.claim(lab, claims.QUOTE_SENTENCES, [1]) as lab_claim:
            assert lab_claim == [1]
            assert claims.held(db, claims.QUOTE_SENTENCES, [1]) == set()
            with claims.claim(db, claims.QUOTE_SENTENCES, [1]) as app_claim:
                assert app_claim == [1]
    finally:
        lab.close()


def test_an_attempt_whose_earlier_attempt_is_alive_does_not_run(db, fast) -> None:
    job = jobs.submit_ingest(db, fast, pdfs.law_pdf(), filename="a.pdf", roles=["isg"])
    with claims.claim(db, claims.JOB_ATTEMPT, [job.id]) as held_elsewhere:  # as a live earlier attempt holds it
        assert held_elsewhere == [job.id]
        jobs.run_worker(fast, wait=False, embedder_factory=NoEmbedder)
    failed = jobs.get_job(db, job.id)
    assert failed.status == "failed" and failed.error == EARLIER_ATTEMPT_RUNNING
    assert list_documents(db, "admin") == []
    assert jobs.staged_path(fast, job.id).is_file()  # kept: a retry reads the same bytes


def test_a_document_whose_upload_fills_its_quotes_gets_no_second_quotes_job(db, fast, use_embedder) -> None:
    """The probe's finding: a second worker starting while an upload was in its quotes stage
    queued an "Alıntı cümleleri" job for that same document, and would have run it."""
    held = HeldWhileFillingQuotes(use_embedder, db)
    upload_worker = jobs.BackgroundWorker(fast, label="app", progress_interval=0,
                                          embedder_factory=lambda: CachedEmbedder(held, db)).start()
    try:
        upload = jobs.submit_ingest(db, fast, fresh_law_pdf(), filename="a.pdf", roles=["isg"])
        assert held.filling.wait(DEADLINE_S), "the upload never reached its quotes stage"
        (document,) = list_documents(db, "admin")
        assert unwarmed_documents(db) == [document.id]  # what a starting worker looks at: still unwarmed
        assert jobs.queue_unwarmed_quotes(db) is None  # ...but the upload is filling it: no second job
        # Even a quotes job queued for it (an older start-up, by hand) leaves it to the upload.
        queued = service.submit(db, jobs.QUOTES, {"document_ids": [document.id]}, label="elle")
        jobs.run_worker(fast, wait=False, embedder_factory=NoEmbedder, name="second")
        second = jobs.get_job(db, queued.id)
        assert second.status == "succeeded", second.error
        assert second.result == {"documents": 0, "quote_sentences": 0, "left_to_other_jobs": 1}
        held.go.set()
        done = wait_for("the upload", lambda: (j := jobs.get_job(db, upload.id)).status != "running"
                        and j.status != "queued" and j)
    finally:
        held.go.set()
        upload_worker.stop()
    assert done.status == "succeeded", done.error
    assert done.result["quote_sentences"] > 0
    assert unwarmed_documents(db) == [] and jobs.queue_unwarmed_quotes(db) is None


def test_one_setting_decides_which_server_processes_run_jobs(settings) -> None:
    assert jobs.runs_jobs_here(settings, "app") and jobs.runs_jobs_here(settings, "api")
    assert not jobs.runs_jobs_here(settings, "api", opted_out=True)
    separate = settings.replace(worker_in_app=False)
    assert not jobs.runs_jobs_here(separate, "app") and not jobs.runs_jobs_here(separate, "api")
    with pytest.raises(ValueError, match="unknown server process"):
        jobs.runs_jobs_here(settings, "lab")
