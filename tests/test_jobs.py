"""Background jobs (ragcore.jobs) with the real queue library, real workers and the real database.

Workers run as threads (`BackgroundWorker`) or, to be killed with SIGKILL, as subprocesses.
Jobs are held at a known point with embedders that wait for the test (a semaphore or a
barrier) around the real embedded model, so nothing depends on how fast this machine is;
every wait is bounded and polls the database (no fixed sleeps as assertions).
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import procrastinate
import psycopg
import pytest

from ragcore import jobs
from ragcore import store as dbmod
from ragcore.access import create_user
from ragcore.answer import questions
from ragcore.core import STATUS_NEEDS_REVIEW, format_duration
from ragcore.documents import delete_document, ingest_pdf
from ragcore.embed import EmbeddingError, make_embedder
from ragcore.jobs import JobCancelled, store
from ragcore.jobs.worker import ProgressWriter
from tests import docxs, pdfs
from tests.jobs_support import DEADLINE_S, wait_for

REPO = Path(__file__).resolve().parent.parent
FAST_HEARTBEAT = 0.5  # tests: a worker silent for 1.5 s is dead


# ----------------------------------------------------------------------------- helpers


def job_row(pg_url: str, job_id: int) -> dict[str, Any]:
    """The row as another client sees it: a fresh connection, not the test's pool."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        cur = conn.execute("SELECT status, stage, done, total, error, attempts, worker FROM public.jobs WHERE id = %s",
                           (job_id,))
        names = [c.name for c in cur.description]
        return dict(zip(names, cur.fetchone(), strict=True))


def queue_status(db: dbmod.Database, queue_job_id: int) -> str:
    with db.connection() as conn:
        return conn.execute("SELECT status::text FROM procrastinate_jobs WHERE id = %s", (queue_job_id,)).fetchone()[0]


def counts(db: dbmod.Database) -> dict[str, int]:
    with db.connection() as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("documents", "chunks", "postings")}


class HeldEmbedder:
    """The real embedder, but every embedding call first takes a permit the test hands out."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.kind, self.model, self.name, self.dim = inner.kind, inner.model, inner.name, inner.dim
        self.permits = threading.Semaphore(0)
        self.calls = 0

    def release(self, n: int = 1) -> None:
        for _ in range(n):
            self.permits.release()

    def _take(self) -> None:
        self.calls += 1
        if not self.permits.acquire(timeout=DEADLINE_S):
            raise RuntimeError("the test never released the embedder")

    def embed_passages(self, texts):
        self._take()
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)


class MeetingEmbedder:
    """Two workers' embedders that both must be embedding at the same time to go on."""

    def __init__(self, inner: Any, barrier: threading.Barrier, lock: threading.Lock) -> None:
        self.inner, self.barrier, self.lock = inner, barrier, lock
        self.kind, self.model, self.name, self.dim = inner.kind, inner.model, inner.name, inner.dim
        self.met = False

    def _meet(self) -> None:
        if not self.met:
            self.barrier.wait(timeout=DEADLINE_S)  # BrokenBarrierError (the job fails) unless both arrive
            self.met = True

    def embed_passages(self, texts):
        self._meet()
        with self.lock:
            return self.inner.embed_passages(texts)

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)


class NoEmbedder:
    """For workers that must not run anything."""

    def __init__(self) -> None:
        raise AssertionError("a job ran that should not have")


@pytest.fixture(scope="module")
def real_embedder(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from ragcore.core import Settings

    return make_embedder(Settings(database_url=pg_url, embed_backend="use", ollama_base_url="http://127.0.0.1:9"))


@pytest.fixture()
def fast(settings):
    return settings.replace(job_heartbeat_seconds=FAST_HEARTBEAT)


@contextmanager
def worker(settings, embedder_factory: Callable[[], Any], label: str = "test", **options: Any) -> Iterator[jobs.BackgroundWorker]:
    w = jobs.BackgroundWorker(settings, label=label, embedder_factory=embedder_factory, progress_interval=0,
                              **options).start()
    assert w.error is None, w.error
    try:
        yield w
    finally:
        w.stop()
        assert not w.running, "the worker thread did not stop"


def many_chunks_docx(articles: int = 400) -> bytes:
    """A Word file of `articles` distinct articles (one chunk each, 400 chunks: 13 embedding batches
    of 32 even without windows). A .docx is read whole before anything is embedded (nothing is
    embedded ahead, as a PDF's settled chunks are), so every permit the test hands out is one
    batch of the `embed` stage, whatever index (with windows or without) earlier tests left."""
    token = uuid.uuid4().hex[:12]
    return docxs.build([("P", f"MADDE {n} - (1) Isveren calisanlarin sagligini ve guvenligini saglamakla "
                              f"yukumludur; bu amacla risk degerlendirmesi yapar, onlem alir ve egitim verir. "
                              f"Kayit {token}-{n}.") for n in range(1, articles + 1)])


def many_chunks_pdf(pages: int = 12) -> bytes:
    """A PDF of about 8 chunks a page (several embedding batches of 32). Every chunk carries a
    fresh token, so no embedding cache can answer for the embedder the test is holding."""
    token = uuid.uuid4().hex[:12]
    body = "\n".join(f"MADDE {n} - (1) Isveren calisanlarin sagligini ve guvenligini saglamakla yukumludur; "
                     f"bu amacla risk degerlendirmesi yapar, onlem alir ve egitim verir. Kayit {token}."
                     for n in range(1, 9))
    return pdfs.text_pdf([f"SAYFA {p}\n{body}" for p in range(pages)])


# ----------------------------------------------------------------------------- the queue schema


def test_queue_schema_is_applied_once_in_public_only(db, pg_url) -> None:
    assert dbmod.migrate(db) == []  # applied already by the session fixture: nothing to do again
    with db.connection() as conn:
        assert conn.execute("SELECT to_regclass('public.procrastinate_jobs') IS NOT NULL").fetchone()[0]
        version = conn.execute("SELECT version FROM job_queue_schema WHERE library = 'procrastinate'").fetchone()[0]
    assert version == procrastinate.__version__

    lab = dbmod.Database(pg_url, "lab_jobs_schema")
    try:
        dbmod.migrate(lab)
        with lab.connection() as conn:
            inside = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'lab_jobs_schema' "
                                  "AND tablename LIKE 'procrastinate%'").fetchone()[0]
        assert inside == 0
    finally:
        dbmod.drop_namespace(lab, "lab_jobs_schema")
        lab.close()


def test_queue_schema_version_is_checked(db) -> None:
    def record(version: str) -> None:
        with db.connection() as conn:
            conn.execute("UPDATE job_queue_schema SET version = %s WHERE library = 'procrastinate'", (version,))

    try:
        record("3.9.0")  # older: the library's migrations after 3.9.0 (none up to 3.10.0) apply, version recorded
        dbmod.migrate(db)
        with db.connection() as conn:
            assert conn.execute("SELECT version FROM job_queue_schema").fetchone()[0] == procrastinate.__version__
        record("99.0.0")  # newer than this code: refused with a message
        with pytest.raises(dbmod.DatabaseError, match="newer than the installed"):
            dbmod.migrate(db)
    finally:
        record(procrastinate.__version__)
    from ragcore.store.queue_schema import _migrations_between

    names = [name for name, _ in _migrations_between((3, 3, 0), (3, 10, 0))]
    assert names == ["03.04.00_01_pre_add_retry_failed_job_procedure.sql",
                     "03.04.00_50_post_add_retry_failed_job_procedure.sql"]


# ----------------------------------------------------------------------------- progress


def test_progress_advances_and_is_visible_from_another_connection(db, settings, pg_url, real_embedder) -> None:
    held = HeldEmbedder(real_embedder)
    with worker(settings, lambda: held):
        job = jobs.submit_ingest(db, settings, many_chunks_docx(), filename="uzun.docx", roles=["isg"],
                                 created_by="admin")
        first = wait_for("the embed stage", lambda: (r := job_row(pg_url, job.id))["stage"] == "embed" and r)
        assert first["status"] == "running" and first["done"] == 0 and first["total"] == 400, first
        seen = [first["done"]]
        for _ in range(2):  # each batch the embedder is let through shows up as more parts embedded
            held.release(1)
            row = wait_for("one more batch", lambda: (r := job_row(pg_url, job.id))["done"] > seen[-1] and r)
            assert row["stage"] == "embed" and row["status"] == "running"
            seen.append(row["done"])
        assert seen[0] < seen[1] < seen[2] < first["total"]  # it advanced, and the job is not done yet
        held.release(1000)
        done = wait_for("success", lambda: (r := job_row(pg_url, job.id))["status"] == "succeeded" and r)
    final = jobs.get_job(db, job.id)
    # the embed stage embeds the chunks and their sentence windows, and counts in parts (chunks) as the result does
    assert (final.result["windows"] > 0) == dbmod.current_embedding_space(db).windows  # vectors and parts may differ
    assert done["done"] == done["total"] and final.result["chunks"] == first["total"]
    assert counts(db)["documents"] == 1 and counts(db)["chunks"] == final.result["chunks"]
    assert not jobs.staged_path(settings, job.id).exists()
    assert jobs.get_kind(jobs.INGEST).fraction(final) == 1.0


def test_progress_writes_are_bounded_in_rate(db, settings) -> None:
    """200 reports in 2 s of (fake) time at interval 0.5 s: a handful of writes, the last always."""
    job = jobs.submit_ingest(db, settings, pdfs.law_pdf(), filename="a.pdf", roles=["isg"])
    running = store.start(db, job.id, job.queue_job_id, "test")
    now = [0.0]
    writer = ProgressWriter(db, running, interval=0.5, should_abort=lambda: False, clock=lambda: now[0])
    for done in range(201):
        now[0] = done * 0.01
        writer("embed", done, 200)
    assert writer.writes <= 6  # first report, one per 0.5 s, the last
    row = jobs.get_job(db, job.id)
    assert (row.stage, row.done, row.total) == ("embed", 200, 200)
    writer("store", 0, 3)  # a new stage is written at once
    assert writer.writes <= 7 and jobs.get_job(db, job.id).stage == "store"


def test_time_left_comes_from_the_measured_rate() -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    job = store.Job(id=1, kind=jobs.INGEST, label="x.pdf", arguments={}, created_by=None, status="running",
                    stage="embed", done=20, total=100, attempts=1, created_at=t0, started_at=t0,
                    stage_started_at=t0, updated_at=t0 + timedelta(seconds=10), finished_at=None,
                    cancel_requested_at=None, result=None, error=None, worker=None, queue_job_id=1,
                    resolves_question_id=None)
    assert job.seconds_left() == pytest.approx(40.0)  # 2 chunks/s measured, 80 to go
    kind = jobs.get_kind(jobs.INGEST)
    assert kind.describe_progress(job) == "Parçalar aramaya hazırlanıyor: 20/100 parça · yaklaşık 40 sn kaldı"
    assert kind.fraction(job) == pytest.approx(0.3 + 0.5 * 0.2)
    too_early = store.Job(**{**job.__dict__, "updated_at": t0 + timedelta(seconds=0.5)})
    assert too_early.seconds_left() is None  # less than a second measured: no guess
    assert store.Job(**{**job.__dict__, "done": 0}).seconds_left() is None
    assert format_duration(3725) == "1 sa 2 dk" and format_duration(90) == "1 dk 30 sn"


# ----------------------------------------------------------------------------- cancel


def test_cancel_queued_job_it_never_runs(db, fast, pg_url) -> None:
    job = jobs.submit_ingest(db, fast, pdfs.law_pdf(), filename="a.pdf", roles=["isg"])
    staged = jobs.staged_path(fast, job.id)
    assert staged.is_file() and (staged.stat().st_mode & 0o777) == 0o600
    cancelled = jobs.cancel(db, fast, job.id)
    assert cancelled.status == "cancelled" and not staged.exists()
    assert queue_status(db, job.queue_job_id) == "cancelled"
    with pytest.raises(jobs.JobError, match="zaten bitmiş"):
        jobs.cancel(db, fast, job.id)
    jobs.run_worker(fast, wait=False, embedder_factory=NoEmbedder)  # drains the queue: nothing to do
    assert job_row(pg_url, job.id)["status"] == "cancelled" and counts(db)["documents"] == 0
    with pytest.raises(jobs.JobError, match="dosya artık yok"):
        jobs.retry(db, fast, job.id)  # the staged file went with the cancel


def test_cancel_running_job_leaves_no_document(db, fast, pg_url, real_embedder) -> None:
    held = HeldEmbedder(real_embedder)
    with worker(fast, lambda: held):
        job = jobs.submit_ingest(db, fast, many_chunks_pdf(2), filename="a.pdf", roles=["isg"])
        wait_for("the embed stage", lambda: job_row(pg_url, job.id)["stage"] == "embed")
        requested = jobs.cancel(db, fast, job.id)
        assert requested.status == "running" and requested.cancel_requested_at is not None
        held.release(1000)
        wait_for("cancelled", lambda: job_row(pg_url, job.id)["status"] == "cancelled")
    assert counts(db) == {"documents": 0, "chunks": 0, "postings": 0}
    assert not jobs.staged_path(fast, job.id).exists()
    assert [p.name for p in fast.uploads_dir.iterdir() if p.is_file()] == []  # no stored document file either
    assert queue_status(db, job.queue_job_id) == "aborted"


# ----------------------------------------------------------------------------- a killed worker

_HANGING_WORKER = textwrap.dedent(
    """
    import time
    from ragcore.core import Settings
    from ragcore.embed import EmbeddingError, make_embedder
    from ragcore.jobs import run_worker

    settings = Settings.from_env(dotenv=None)
    real = make_embedder(settings)

    class Hanging:
        kind, model, name, dim = real.kind, real.model, real.name, real.dim

        def _hang(self, texts):
            print("EMBEDDING", flush=True)
            time.sleep(600)  # wait here to be killed

        embed = embed_passages = embed_queries = _hang

    run_worker(settings, embedder_factory=Hanging)
    """
)


def test_worker_killed_mid_job_is_detected_then_retry_succeeds(db, fast, pg_url, real_embedder) -> None:
    env = os.environ | {"DATABASE_URL": pg_url, "DATA_DIR": str(fast.data_dir), "EMBED_BACKEND": "use",
                        "OLLAMA_BASE_URL": "http://127.0.0.1:9", "JOB_HEARTBEAT_SECONDS": str(FAST_HEARTBEAT),
                        "LOG_LEVEL": "WARNING", "PYTHONPATH": str(REPO)}
    job = jobs.submit_ingest(db, fast, many_chunks_pdf(2), filename="a.pdf", roles=["isg"], created_by="admin")
    proc = subprocess.Popen([sys.executable, "-c", _HANGING_WORKER], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "EMBEDDING", proc.stderr.read() if not line else line
        row = job_row(pg_url, job.id)
        assert row["status"] == "running" and row["stage"] == "embed", row  # extraction and chunking are done
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert job_row(pg_url, job.id)["status"] == "running"  # nobody knows yet

    with worker(fast, lambda: real_embedder, label="second"):
        failed = wait_for("the sweep", lambda: (r := job_row(pg_url, job.id))["status"] == "failed" and r)
        assert failed["error"] == jobs.STALLED_REASON
        assert "İşçi süreci durdu" in failed["error"]
        assert queue_status(db, job.queue_job_id) == "failed"
        assert counts(db) == {"documents": 0, "chunks": 0, "postings": 0}
        assert jobs.staged_path(fast, job.id).is_file()  # kept for the retry

        again = jobs.retry(db, fast, job.id)
        assert again.status == "queued" and again.attempts == 2 and again.error is None
        done = wait_for("the retry", lambda: (r := job_row(pg_url, job.id))["status"] == "succeeded" and r)
    assert done["attempts"] == 2 and done["worker"].endswith(":second")
    assert counts(db)["documents"] == 1
    assert not jobs.staged_path(fast, job.id).exists()


def test_stopping_a_worker_hands_its_job_back(db, fast, pg_url, real_embedder) -> None:
    """A graceful stop (SIGTERM, app shutdown) interrupts the job and queues it again."""
    held = HeldEmbedder(real_embedder)
    first = jobs.BackgroundWorker(fast, label="first", embedder_factory=lambda: held, progress_interval=0,
                                  shutdown_grace=0).start()
    job = jobs.submit_ingest(db, fast, many_chunks_pdf(), filename="a.pdf", roles=["isg"])
    wait_for("the embed stage", lambda: job_row(pg_url, job.id)["stage"] == "embed")
    stopper = threading.Thread(target=first.stop)
    stopper.start()
    def moved(before: int) -> bool:
        row = job_row(pg_url, job.id)
        return row["status"] != "running" or row["done"] > before

    for _ in range(10):  # batch by batch: the job sees the stop at one of its next progress reports
        before = job_row(pg_url, job.id)["done"]
        held.release()
        wait_for("the next progress report", functools.partial(moved, before))
        if job_row(pg_url, job.id)["status"] != "running":
            break
    stopper.join(timeout=DEADLINE_S)
    assert not first.running
    row = job_row(pg_url, job.id)
    assert row["status"] == "queued" and row["attempts"] == 2, row  # handed back before it finished
    assert counts(db)["documents"] == 0
    with worker(fast, lambda: real_embedder, label="next"):
        wait_for("success", lambda: job_row(pg_url, job.id)["status"] == "succeeded")
    assert counts(db)["documents"] == 1


# ----------------------------------------------------------------------------- failures and retry


def test_a_duplicate_upload_fails_for_good_and_leaves_no_staged_file(db, fast, real_embedder) -> None:
    """The same bytes would be a duplicate on every retry, so the job ends at once: its staged
    file goes and a retry is refused, saying why (uploads/incoming does not fill up)."""
    data = pdfs.law_pdf()
    existing = ingest_pdf(db, fast, real_embedder, data, filename="ilk.pdf", roles=["isg"])
    job = jobs.submit_ingest(db, fast, data, filename="ikinci.pdf", roles=["isg"])
    assert jobs.staged_path(fast, job.id).is_file()
    jobs.run_worker(fast, wait=False, embedder_factory=lambda: real_embedder)
    failed = jobs.get_job(db, job.id)
    assert failed.status == "failed" and "zaten yüklü" in failed.error and existing.public_id in failed.error
    assert not jobs.staged_path(fast, job.id).exists()
    assert list(fast.incoming_dir.iterdir()) == []
    assert jobs.KINDS[jobs.INGEST].cannot_retry(fast, failed)  # the app offers no retry button
    with pytest.raises(jobs.JobError, match="aynı dosya zaten yüklü"):
        jobs.retry(db, fast, job.id)

    delete_document(db, fast, existing.document_id)  # once the cause is gone, the file is uploaded again
    again = jobs.submit_ingest(db, fast, data, filename="ikinci.pdf", roles=["isg"])
    jobs.run_worker(fast, wait=False, embedder_factory=lambda: real_embedder)
    assert jobs.get_job(db, again.id).status == "succeeded"
    assert not jobs.staged_path(fast, again.id).exists()


class DownEmbedder:
    """The real embedder's identity, but the backend is down: a failure a retry may get past."""

    def __init__(self, inner: Any) -> None:
        self.kind, self.model, self.name, self.dim = inner.kind, inner.model, inner.name, inner.dim

    def embed_passages(self, texts):
        raise EmbeddingError("Ollama'ya ulaşılamıyor (test).")

    def embed_queries(self, texts):
        raise EmbeddingError("Ollama'ya ulaşılamıyor (test).")


def test_a_retryable_failure_keeps_the_staged_file_until_the_last_attempt(db, fast, real_embedder) -> None:
    down = DownEmbedder(real_embedder)
    job = jobs.submit_ingest(db, fast, many_chunks_pdf(1), filename="a.pdf", roles=["isg"])
    last = jobs.KINDS[jobs.INGEST].max_attempts
    assert last == 3
    for attempt in range(1, last + 1):
        if attempt > 1:
            assert jobs.retry(db, fast, job.id).attempts == attempt
        jobs.run_worker(fast, wait=False, embedder_factory=lambda: down)
        failed = jobs.get_job(db, job.id)
        assert failed.status == "failed" and failed.attempts == attempt and "ulaşılamıyor" in failed.error
        assert jobs.staged_path(fast, job.id).is_file() == (attempt < last), attempt
    with pytest.raises(jobs.JobError, match=f"en fazla {last} kez"):
        jobs.retry(db, fast, job.id)
    assert list(fast.incoming_dir.iterdir()) == []


def test_bad_pdf_fails_the_job_in_turkish(db, fast, real_embedder) -> None:
    job = jobs.submit_ingest(db, fast, pdfs.image_only_pdf(), filename="taranmis.pdf", roles=["isg"])
    jobs.run_worker(fast, wait=False, embedder_factory=lambda: real_embedder)
    failed = jobs.get_job(db, job.id)
    assert failed.status == "failed" and "OCR ile de okunabilir metin bulunamadı" in failed.error
    assert counts(db)["documents"] == 0
    assert not jobs.staged_path(fast, job.id).exists()  # the same bytes cannot pass on a retry


def test_submit_refuses_cheap_problems_at_once(db, settings) -> None:
    with pytest.raises(jobs.JobError, match="boş"):
        jobs.submit_ingest(db, settings, b"", filename="a.pdf", roles=["isg"])
    with pytest.raises(jobs.JobError, match="Bilinmeyen rol"):
        jobs.submit_ingest(db, settings, pdfs.law_pdf(), filename="a.pdf", roles=["muhasebe"])
    with pytest.raises(jobs.JobError, match="çok büyük"):
        jobs.submit_ingest(db, settings.replace(max_upload_mb=1), b"%PDF" + b"\0" * (1024 * 1024 + 1),
                           filename="a.pdf", roles=["isg"])
    assert jobs.list_jobs(db) == []
    assert not settings.incoming_dir.exists() or list(settings.incoming_dir.iterdir()) == []


# ----------------------------------------------------------------------------- two workers


def test_two_workers_process_two_uploads_at_the_same_time(db, fast, real_embedder) -> None:
    barrier, lock = threading.Barrier(2), threading.Lock()
    with worker(fast, lambda: MeetingEmbedder(real_embedder, barrier, lock), label="w1"), \
            worker(fast, lambda: MeetingEmbedder(real_embedder, barrier, lock), label="w2"):
        a = jobs.submit_ingest(db, fast, pdfs.law_pdf(), filename="a.pdf", roles=["isg"])
        b = jobs.submit_ingest(db, fast, many_chunks_pdf(2), filename="b.pdf", roles=["ik"])
        wait_for("both jobs", lambda: all(jobs.get_job(db, j.id).status in ("succeeded", "failed") for j in (a, b)))
    finished = [jobs.get_job(db, j.id) for j in (a, b)]
    assert [j.status for j in finished] == ["succeeded", "succeeded"], [j.error for j in finished]
    assert {j.worker.rsplit(":", 1)[1] for j in finished} == {"w1", "w2"}  # one each, at the same time
    assert counts(db)["documents"] == 2
    assert [j.id for j in jobs.list_jobs(db)] == [b.id, a.id]  # newest first


# ----------------------------------------------------------------------------- other kinds and links


def test_upload_that_resolves_a_review_item(db, fast, real_embedder) -> None:
    asker = create_user(db, "mehmet", "isg", "mehmet-parola-1")
    qid = questions.insert_question(db, questions.question_record(
        asker, "Yonetmelik kapsami nedir?", answer=None, status=STATUS_NEEDS_REVIEW, generator=None, llm_called=False))
    (item,) = questions.review_queue(db)
    assert item.public_id == qid
    job = jobs.submit_ingest(db, fast, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"], created_by="admin",
                             resolves_question_id=item.id)
    jobs.run_worker(fast, wait=False, embedder_factory=lambda: real_embedder)
    assert jobs.get_job(db, job.id).status == "succeeded"
    assert questions.review_queue(db) == []


@pytest.fixture
def follow_up_kind(db):
    """A job kind whose follow-up reads its own row from another connection (and may fail)."""
    seen: dict[str, Any] = {}

    def follow_up(_db, job, result) -> None:
        seen["status"] = jobs.get_job(db, job.id).status
        if result.get("fail_follow_up"):
            raise RuntimeError("the follow-up failed")

    kind = jobs.register_kind(jobs.JobKind(name="test_follow_up", label="deneme",
                                           run=lambda run: dict(run.job.arguments), on_success=follow_up))
    try:
        yield kind, seen
    finally:
        jobs.KINDS.pop(kind.name, None)


@pytest.mark.parametrize("fail_follow_up", [False, True])
def test_a_job_is_marked_succeeded_only_after_its_follow_up(db, fast, follow_up_kind, fail_follow_up) -> None:
    """Whoever sees a job succeeded (the review page, the API) sees its follow-up done too (the
    review item resolved); a follow-up that fails is logged, and the stored work still counts."""
    kind, seen = follow_up_kind
    job = jobs.submit(db, kind.name, {"fail_follow_up": fail_follow_up}, label="deneme")
    jobs.run_worker(fast, wait=False, embedder_factory=lambda: None)
    assert seen["status"] == "running"  # the follow-up ran before the row said succeeded
    assert jobs.get_job(db, job.id).status == "succeeded"


def test_reembed_runs_as_a_job_and_only_one_waits(db, fast, real_embedder) -> None:
    ingest_pdf(db, fast, real_embedder, pdfs.law_pdf(), filename="a.pdf", roles=["isg"])
    job = jobs.submit_reembed(db, created_by="admin")
    with pytest.raises(jobs.JobError, match="zaten var"):
        jobs.submit_reembed(db)
    jobs.run_worker(fast, wait=False, embedder_factory=lambda: real_embedder)
    done = jobs.get_job(db, job.id)
    assert done.status == "succeeded" and done.result["chunks"] == counts(db)["chunks"]
    assert done.result["model"] == real_embedder.name


def test_progress_writer_stops_a_superseded_attempt(db, settings) -> None:
    job = jobs.submit_ingest(db, settings, pdfs.law_pdf(), filename="a.pdf", roles=["isg"])
    running = store.start(db, job.id, job.queue_job_id, "test")
    writer = ProgressWriter(db, running, interval=0, should_abort=lambda: False)
    writer("extract", 1, 2)
    store.fail_abandoned(db, [job.queue_job_id], 3600, jobs.STALLED_REASON)  # a sweep took it for dead
    with pytest.raises(JobCancelled):
        writer("extract", 2, 2)
    assert writer.superseded


def test_orphan_staged_files_are_collected_but_not_a_failed_jobs_input(db, settings, real_embedder) -> None:
    failed = jobs.submit_ingest(db, settings, many_chunks_pdf(1), filename="a.pdf", roles=["isg"])
    jobs.run_worker(settings, wait=False, embedder_factory=lambda: DownEmbedder(real_embedder))
    assert jobs.get_job(db, failed.id).status == "failed"
    orphan = settings.incoming_dir / "999.pdf"  # staged by a process killed before its row committed
    leftover = settings.incoming_dir / ".1000.4242.tmp"
    orphan.write_bytes(b"%PDF-1.4")
    leftover.write_bytes(b"%PDF")
    assert jobs.remove_orphan_staged_files(db, settings) == []  # younger than an hour: maybe in progress
    removed = jobs.remove_orphan_staged_files(db, settings, min_age_s=0)
    assert sorted(p.name for p in removed) == [".1000.4242.tmp", "999.pdf"]
    assert jobs.staged_path(settings, failed.id).is_file()  # the failed job keeps its input for a retry


def test_closing_the_workers_loop_survives_a_task_that_swallows_its_cancellation() -> None:
    """A psycopg_pool maintenance task once swallowed the cancellation at shutdown and went back
    to its queue; the worker thread then never ended (and every later test waited for it)."""
    import asyncio
    import threading

    from ragcore.jobs.worker import _close_loop

    loop = asyncio.new_event_loop()

    async def stubborn() -> None:
        queue: asyncio.Queue[int] = asyncio.Queue()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass  # swallowed, as asyncio.wait_for can when the cancellation and a result coincide
        await queue.get()  # nothing will ever come: only a second cancellation ends this

    task = loop.create_task(stubborn())
    loop.run_until_complete(asyncio.sleep(0))  # the task is waiting in its sleep
    closer = threading.Thread(target=_close_loop, args=(loop,), daemon=True)
    closer.start()
    closer.join(30)
    assert not closer.is_alive(), "_close_loop waited for ever on a task that ignored one cancellation"
    assert loop.is_closed() and task.cancelled()


def test_stopping_a_worker_survives_a_lost_cancellation(settings) -> None:
    """A fresh-clone test run saw the in-app worker's loop idle for good after one cancellation,
    and every later test waited for its thread: a worker still running after its grace period is
    cancelled again."""
    import asyncio

    from ragcore.jobs.worker import BackgroundWorker

    class Stubborn(BackgroundWorker):
        async def _run(self) -> None:
            self._task = asyncio.current_task()
            self._started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                pass  # lost: the worker goes on as if nothing had been asked
            await asyncio.Event().wait()  # only a second cancellation ends this

    stubborn = Stubborn(settings, label="stubborn", shutdown_grace=0.2).start()
    assert stubborn.running
    stubborn.stop(timeout=10)
    assert not stubborn.running, "stop() gave up on a worker that lost its first cancellation"
