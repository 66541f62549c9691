"""Running jobs: the task body every kind shares, progress at a bounded rate, the sweep that
closes jobs of dead workers, and the two ways to run a worker.

- `run_worker(settings)`: blocking, in the main thread (`python -m ragcore worker`, compose's
  `worker` service); procrastinate installs its SIGINT/SIGTERM handlers and stops gracefully.
- `BackgroundWorker(settings).start()`: a daemon thread with its own event loop and no
  signal handlers (`make run` starts one inside the Streamlit process, ui/context.py).

Concurrency is one job per worker by default (two CPU cores: an embedding job uses both).
A worker is alive while its heartbeat (every JOB_HEARTBEAT_SECONDS) is fresh. Every worker
sweeps once at start and then after every heartbeat interval: the queue jobs of workers
silent for 3 heartbeats are marked failed in the queue and their rows failed with
"İşçi süreci durdu" (or cancelled, if a cancel was pending). They are not re-run
automatically: a document that kills its worker (memory, a parser crash) would otherwise kill
the next one too; the admin retries with one click, and the staged file is still there. A
graceful stop (SIGTERM, app shutdown) is different: the running job is interrupted at its
next progress report and handed back to the queue as a new attempt.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import procrastinate
from procrastinate import exceptions as queue_errors
from procrastinate.job_context import AbortReason
from procrastinate.jobs import Status

from ragcore.core import Settings
from ragcore.jobs import claims, queue, service, store
from ragcore.jobs.kinds import JobCancelled, JobFailed, JobKind, JobRun, get_kind, load_job_modules
from ragcore.jobs.store import CANCELLED, FAILED, SUCCEEDED, Job
from ragcore.store import Database, database_url, open_database

log = logging.getLogger(__name__)

STALLED_REASON = "İşçi süreci durdu; iş yarıda kaldı ve hiçbir şey kaydedilmedi. Yeniden deneyebilirsiniz."
EARLIER_ATTEMPT_RUNNING = ("Bu işin önceki denemesi başka bir işçide hâlâ çalışıyor; aynı iş iki yerde birden "
                           "yürütülmez. O deneme bitince gerekirse yeniden deneyin.")
PROGRESS_INTERVAL_S = 0.5  # at most two progress writes per second per job (plus stage changes)
SHUTDOWN_GRACE_S = 5.0  # a stopping worker lets a job finish this long before interrupting it
RETENTION_EVERY_S = 24 * 3600.0  # a running worker queues the conversations' and audit trail's retention this often


SERVER_PROCESSES = ("app", "api")  # the server processes that may run a job worker of their own


def runs_jobs_here(settings: Settings, process: str, *, opted_out: bool = False) -> bool:
    """Whether the server process `process` (the Streamlit "app" or the REST "api") runs a job
    worker inside it: the one place that decides, from WORKER_IN_APP (and the API's --no-worker).

    True by default for both, so `make run` alone and `make api` alone each get their uploads
    done. Both at once means two workers, which is safe: the queue hands each job to one worker
    and `claims` keep a job's attempt and a document's quote sentences in one place at a time.
    WORKER_IN_APP=false leaves every job to separate `python -m ragcore worker` processes.
    """
    if process not in SERVER_PROCESSES:
        raise ValueError(f"unknown server process {process!r}; one of {SERVER_PROCESSES}")
    return settings.worker_in_app and not opted_out


def worker_name(label: str | None = None) -> str:
    base = f"{socket.gethostname()}:{os.getpid()}"
    return f"{base}:{label}" if label else base


@dataclass
class WorkerContext:
    """What a running job may use; one per worker."""

    settings: Settings
    db: Database
    name: str
    # None: the configured model behind the shared embedding cache (what a standalone worker uses).
    embedder_factory: Callable[[], Any] | None
    progress_interval: float = PROGRESS_INTERVAL_S
    # Queue jobs this worker is running now: its own sweep leaves them alone (while a worker shuts
    # down, the library stops its heartbeat before the running job has stopped).
    running: set[int] = field(default_factory=set, repr=False)
    _embedder: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def embedder(self) -> Any:
        """The worker's embedder, made on first use (a job that needs none never loads a model)."""
        with self._lock:
            if self._embedder is None:
                self._embedder = self.embedder_factory() if self.embedder_factory else self._cached_model()
            return self._embedder

    def _cached_model(self) -> Any:
        from ragcore.embed import CachedEmbedder, make_embedder

        return CachedEmbedder(make_embedder(self.settings), self.db)


# --------------------------------------------------------------------------- progress


class ProgressWriter:
    """The progress callback handed to a job: writes at most every `interval` seconds (and on
    every stage change and stage end), and stops the work by raising `JobCancelled` when a
    cancel was requested, the worker is stopping, or the row moved on without this attempt."""

    def __init__(self, db: Database, job: Job, *, interval: float, should_abort: Callable[[], bool],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.db = db
        self.job_id = job.id
        self.queue_job_id = job.queue_job_id
        self.interval = interval
        self.should_abort = should_abort
        self.clock = clock
        self.cancel_requested = False
        self.superseded = False
        self.writes = 0
        self._stage: str | None = None
        self._last = float("-inf")

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.should_abort():
            raise JobCancelled()
        now = self.clock()
        if stage == self._stage and done < total and now - self._last < self.interval:
            return
        ack = store.write_progress(self.db, self.job_id, self.queue_job_id, stage, done, total)
        self._stage, self._last = stage, now
        self.writes += 1
        if not ack.current:
            self.superseded = True
            raise JobCancelled()
        if ack.cancel_requested:
            self.cancel_requested = True
            raise JobCancelled()


# --------------------------------------------------------------------------- the task body


def run_job(ctx: WorkerContext, context: procrastinate.JobContext, job_id: int) -> dict[str, Any]:
    """What every kind's procrastinate task does: claim the row, run the kind, record the outcome."""
    queue_job_id = context.job.id
    assert queue_job_id is not None
    ctx.running.add(queue_job_id)
    try:
        return _run_job(ctx, context, job_id, queue_job_id)
    finally:
        ctx.running.discard(queue_job_id)


def _run_job(ctx: WorkerContext, context: procrastinate.JobContext, job_id: int, queue_job_id: int) -> dict[str, Any]:
    job = store.start(ctx.db, job_id, queue_job_id, ctx.name)
    if job is None:
        log.info("job %d is no longer waiting for queue job %d (cancelled or retried); skipped", job_id, queue_job_id)
        raise queue_errors.JobAborted(f"job {job_id} was cancelled or superseded before it started")
    kind = get_kind(job.kind)
    progress = ProgressWriter(ctx.db, job, interval=ctx.progress_interval, should_abort=context.should_abort)
    run = JobRun(job=job, settings=ctx.settings, db=ctx.db, embedder=ctx.embedder, progress=progress)
    log.info("job %d (%s) started on %s", job.id, kind.name, ctx.name)
    try:
        result = _run_claimed(ctx, run)
    except JobCancelled:
        _stopped(ctx, job, progress, context.abort_reason())
        raise queue_errors.JobAborted(f"job {job.id} stopped") from None
    except JobFailed as exc:
        failed = store.finish(ctx.db, job.id, queue_job_id, FAILED, error=str(exc))
        log.info("job %d failed: %s", job.id, exc)
        _discard_if_final(ctx, failed, retryable=exc.retryable)
        raise
    except Exception as exc:
        failed = store.finish(ctx.db, job.id, queue_job_id, FAILED, error=f"Beklenmeyen hata: {type(exc).__name__}: {exc}")
        log.exception("job %d failed unexpectedly", job.id)
        _discard_if_final(ctx, failed, retryable=True)
        raise
    _after_success(ctx, kind, job, result)
    finished = store.finish(ctx.db, job.id, queue_job_id, SUCCEEDED, result=result)
    if finished is None:  # the row went on to a newer attempt meanwhile: leave its inputs to that one
        log.warning("job %d succeeded, but its row no longer belongs to queue job %d", job.id, queue_job_id)
        return result
    kind.discard(ctx.settings, finished)
    log.info("job %d succeeded (%d progress writes)", job.id, progress.writes)
    return result


def _after_success(ctx: WorkerContext, kind: JobKind, job: Job, result: dict[str, Any]) -> None:
    """The kind's follow-up (a review item resolved by the upload) before the row says succeeded,
    so whoever sees the job succeeded sees its effects too. The work itself is stored already: a
    follow-up that fails is logged and the job still succeeds."""
    try:
        kind.on_success(ctx.db, job, result)
    except Exception:
        log.exception("job %d: its follow-up after the work failed; the job's work is kept", job.id)


def _run_claimed(ctx: WorkerContext, run: JobRun) -> dict[str, Any]:
    """The kind's work under a claim on the job (`claims.JOB_ATTEMPT`): an earlier attempt still
    alive somewhere (a worker the sweep took for dead, then the job retried) keeps it, and this
    attempt fails without touching its inputs."""
    with claims.claim(ctx.db, claims.JOB_ATTEMPT, [run.job.id]) as won:
        if not won:
            raise JobFailed(EARLIER_ATTEMPT_RUNNING)
        return get_kind(run.job.kind).run(run)


def _discard_if_final(ctx: WorkerContext, failed: Job | None, *, retryable: bool) -> None:
    """A failed attempt's inputs go when no retry can follow: the failure would repeat on the
    same inputs, or this was the kind's last attempt. None: the row moved on to a newer attempt."""
    if failed is None:
        return
    kind = get_kind(failed.kind)
    if not retryable or not kind.attempts_left(failed):
        kind.discard(ctx.settings, failed)
        log.info("job %d ended for good (%s); its inputs were removed", failed.id,
                 "the failure would repeat" if not retryable else f"attempt {failed.attempts} was the last")


def _stopped(ctx: WorkerContext, job: Job, progress: ProgressWriter, reason: AbortReason | None) -> None:
    assert job.queue_job_id is not None
    if progress.superseded:
        log.warning("job %d: the row moved on without this attempt (swept or retried); stopped", job.id)
    elif progress.cancel_requested or reason == AbortReason.USER_REQUEST:
        store.finish(ctx.db, job.id, job.queue_job_id, CANCELLED)
        get_kind(job.kind).discard(ctx.settings, job)
        log.info("job %d cancelled while running; nothing was kept", job.id)
    else:  # the worker is shutting down: another worker (or this one, restarted) runs it again
        again = service.requeue_interrupted(ctx.db, job.id, job.queue_job_id)
        log.info("job %d interrupted by a worker shutdown; %s", job.id,
                 f"queued again (attempt {again.attempts})" if again else "left as it was")


# --------------------------------------------------------------------------- the sweep


async def sweep(app: procrastinate.App, ctx: WorkerContext) -> list[Job]:
    """Close what dead workers left running; returns the rows it closed."""
    silent_for = ctx.settings.stalled_worker_seconds
    await app.job_manager.prune_stalled_workers(silent_for)
    stalled = []
    for queue_job in await app.job_manager.get_stalled_jobs(queue=queue.QUEUE, seconds_since_heartbeat=silent_for):
        assert queue_job.id is not None
        if queue_job.id in ctx.running:  # ours, and we are alive: this worker is shutting down
            continue
        try:
            await app.job_manager.finish_job_by_id_async(queue_job.id, status=Status.FAILED, delete_job=False)
        except queue_errors.ConnectorException:  # another worker's sweep, or the job itself, got there first
            log.debug("queue job %d was already finished", queue_job.id)
            continue
        stalled.append(queue_job.id)
    closed = await asyncio.to_thread(store.fail_abandoned, ctx.db, stalled, silent_for, STALLED_REASON)
    for job in closed:
        if job.status == CANCELLED or not get_kind(job.kind).attempts_left(job):
            get_kind(job.kind).discard(ctx.settings, job)
        log.warning("job %d (%s): its worker stopped; marked %s", job.id, job.kind, job.status)
    return closed


async def _sweep_forever(app: procrastinate.App, ctx: WorkerContext) -> None:
    """Sweep every heartbeat interval; queue the retentions (conversations, audit trail) once a
    day (the worker's start queued them), so a worker that runs for months still enforces them,
    and a scan of the watched folder every WATCH_INTERVAL_SECONDS (when WATCH_DIR is set)."""
    retention_due = time.monotonic() + RETENTION_EVERY_S
    watch_due = time.monotonic() + ctx.settings.watch_interval_seconds
    while True:
        try:
            await sweep(app, ctx)
        except Exception:  # the next round tries again; the worker itself keeps running
            log.exception("sweeping stalled jobs failed")
        if time.monotonic() >= retention_due:
            retention_due = time.monotonic() + RETENTION_EVERY_S
            await asyncio.to_thread(_queue_retention, ctx.db, ctx.settings)
        if time.monotonic() >= watch_due:
            watch_due = time.monotonic() + ctx.settings.watch_interval_seconds
            await asyncio.to_thread(_queue_watch, ctx.db, ctx.settings)
        await asyncio.sleep(ctx.settings.job_heartbeat_seconds)


async def serve(ctx: WorkerContext, *, concurrency: int = 1, wait: bool = True,
                install_signal_handlers: bool = False, shutdown_grace: float = SHUTDOWN_GRACE_S) -> None:
    """Work until stopped or, with `wait=False`, until the queue is empty; sweep at start and
    then every heartbeat interval."""
    heartbeat = ctx.settings.job_heartbeat_seconds
    app = queue.worker_app(ctx.db.url, functools.partial(run_job, ctx), max_connections=2 + concurrency)
    async with app.open_async():
        if not wait:
            await sweep(app, ctx)  # a worker that drains the queue and stops sweeps once, first
        else:
            await asyncio.to_thread(_queue_start_up_work, ctx.db, ctx.settings)
        sweeper = asyncio.create_task(_sweep_forever(app, ctx), name="dayanak-job-sweep")
        try:
            await app.run_worker_async(
                queues=[queue.QUEUE], name=ctx.name, concurrency=concurrency, wait=wait,
                install_signal_handlers=install_signal_handlers, update_heartbeat_interval=heartbeat,
                stalled_worker_timeout=ctx.settings.stalled_worker_seconds,
                shutdown_graceful_timeout=shutdown_grace, delete_jobs="never", listen_notify=True,
            )
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper


def _queue_start_up_work(db: Database, settings: Settings) -> None:
    """Work a serving worker queues when it starts: the quoter's sentences of documents stored
    without them (`tasks.queue_unwarmed_quotes`) and the retentions (`_queue_retention`: conversations,
    the audit trail; when a row is past them). Never stops the
    worker: a cache fill and a deletion the next start or day queues again."""
    from ragcore.jobs import tasks

    _queue_retention(db, settings)
    _queue_watch(db, settings)
    try:
        job = tasks.queue_unwarmed_quotes(db, settings)
    except Exception:  # any failure here only leaves the fill to the next start
        log.warning("could not look for documents without quote sentences", exc_info=True)
        return
    if job is not None:
        log.info("job %d queued: quote sentences of %d documents stored without them",
                 job.id, len(job.arguments["document_ids"]))


def _queue_retention(db: Database, settings: Settings) -> None:
    """The conversations' retention, then the audit trail's; a failure of one leaves the other."""
    from ragcore.jobs import tasks

    _queue_quietly(tasks.queue_conversation_retention, db, settings, "conversations past their retention")
    _queue_quietly(tasks.queue_audit_retention, db, settings, "questions log rows past their retention")


def _queue_watch(db: Database, settings: Settings) -> None:
    from ragcore.jobs import watch

    _queue_quietly(watch.queue_scan, db, settings, f"a scan of the watched folder {settings.watch_dir}")


def _queue_quietly(queue_it: Callable[[Database, Settings], Any], db: Database, settings: Settings,
                   what: str) -> None:
    """Work a worker queues on its own: a failure is logged and never stops the worker (the next
    start, day or interval queues it again)."""
    try:
        job = queue_it(db, settings)
    except Exception:
        log.warning("could not queue %s", what, exc_info=True)
        return
    if job is not None:
        log.info("job %d queued: %s", job.id, what)


def run_worker(settings: Settings, *, concurrency: int = 1, name: str | None = None, wait: bool = True,
               embedder_factory: Callable[[], Any] | None = None,
               progress_interval: float = PROGRESS_INTERVAL_S) -> None:
    """A worker in the calling (main) thread until SIGINT/SIGTERM, or until the queue is empty."""
    load_job_modules(settings)
    with open_database(settings) as db:
        ctx = WorkerContext(settings, db, name or worker_name(), embedder_factory,
                            progress_interval)
        log.info("worker %s started (concurrency %d)", ctx.name, concurrency)
        asyncio.run(serve(ctx, concurrency=concurrency, wait=wait,
                          install_signal_handlers=threading.current_thread() is threading.main_thread()))
        log.info("worker %s stopped", ctx.name)


class BackgroundWorker:
    """A worker on a daemon thread with its own event loop and database pool.

    `stop()` asks it to finish (a running job gets SHUTDOWN_GRACE_S, then is interrupted and
    handed back to the queue); it is also registered with `atexit`, so a normal interpreter
    exit (Ctrl-C on `make run`) stops it gracefully.
    """

    def __init__(self, settings: Settings, *, label: str = "app", concurrency: int = 1,
                 embedder_factory: Callable[[], Any] | None = None,
                 progress_interval: float = PROGRESS_INTERVAL_S, shutdown_grace: float = SHUTDOWN_GRACE_S) -> None:
        self.settings = settings
        self.shutdown_grace = shutdown_grace
        self.name = worker_name(label)
        self.concurrency = concurrency
        self.embedder_factory = embedder_factory
        self.progress_interval = progress_interval
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._started = threading.Event()
        self.error: BaseException | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> BackgroundWorker:
        if self._thread is not None:
            return self
        load_job_modules(self.settings)
        self._thread = threading.Thread(target=self._main, name=f"dayanak-worker-{self.name}", daemon=True)
        self._thread.start()
        self._started.wait(timeout=30)
        atexit.register(self.stop)
        return self

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._run())
        except asyncio.CancelledError:
            pass  # stop() cancelled the worker task; it shut down gracefully
        except BaseException as exc:  # kept for stop() and the log; a dead worker is visible in the app
            self.error = exc
            log.exception("background worker %s died", self.name)
        finally:
            self._started.set()
            _close_loop(loop)

    async def _run(self) -> None:
        self._task = asyncio.current_task()  # type: ignore[assignment]
        db = Database(database_url(self.settings), max_size=2 + self.concurrency)
        try:
            ctx = WorkerContext(self.settings, db, self.name, self.embedder_factory, self.progress_interval)
            self._started.set()
            log.info("background worker %s started", self.name)
            await serve(ctx, concurrency=self.concurrency, shutdown_grace=self.shutdown_grace)
        finally:
            db.close()  # not through the default executor: at interpreter exit it takes no new work

    def stop(self, timeout: float | None = None) -> None:
        """Stop and wait for the thread (by default the grace period plus 10 s). Safe to call twice.

        The first cancellation asks for a graceful stop (a running job gets the grace period). A
        worker still running after the grace is cancelled again, once a second, until the
        timeout: a cancellation can be lost on the way, and one was (a fresh-clone test run saw
        the in-app worker's loop idle for good after a single one, every later test waiting)."""
        timeout = self.shutdown_grace + 10 if timeout is None else timeout
        atexit.unregister(self.stop)
        loop, task, thread = self._loop, self._task, self._thread
        if thread is None or not thread.is_alive():
            return
        started = time.monotonic()
        wait = min(timeout, self.shutdown_grace + 1)
        while thread.is_alive() and wait > 0:
            if loop is not None and task is not None:
                with contextlib.suppress(RuntimeError):  # the loop closed in between: nothing left to cancel
                    loop.call_soon_threadsafe(task.cancel)
            thread.join(wait)
            wait = min(RECANCEL_S, timeout - (time.monotonic() - started))
        if thread.is_alive():
            log.warning("background worker %s did not stop within %.0f s", self.name, timeout)
        else:
            log.info("background worker %s stopped", self.name)


CLOSE_ROUNDS = 5  # cancellations sent to each task left behind, one second apart
RECANCEL_S = 1.0  # a worker still running after its grace period is cancelled again this often


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """What `asyncio.run` does on the way out — cancel what is left (a stop during start-up can
    leave the pool's own tasks behind), finish async generators, close — but never waiting for
    ever: a task can swallow a cancellation and wait again. A psycopg_pool maintenance worker did
    (seen in a test run: the task "cancelling", back at its queue's `get()`, the worker thread
    alive for good), as `asyncio.wait_for` can in Python 3.11 when the cancellation and the inner
    result arrive together. So what is still pending is cancelled again, a few rounds, then left."""
    try:
        for _ in range(CLOSE_ROUNDS):
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            if not pending:
                break
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.wait(pending, timeout=1.0))
        else:
            stuck = [task.get_name() for task in asyncio.all_tasks(loop) if not task.done()]
            if stuck:
                log.warning("closing the worker's event loop with tasks that ignore cancellation: %s", stuck)
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
