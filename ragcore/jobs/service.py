"""What the product does with jobs: submit, list, get (by key, or by the public id users see), cancel, retry.

Used by the app, the CLI and (through `requeue_interrupted`) the worker. Every change to a
row and to its queue job happens in one transaction on the public database, so the two
never disagree after a crash; the files a job staged are removed only after that commit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from ragcore.core import Settings, parse_public_id, short_id
from ragcore.jobs import queue, store
from ragcore.jobs.kinds import JobError, JobNotFound, get_kind, load_job_modules
from ragcore.jobs.store import CANCELLED, FAILED, QUEUED, RUNNING, Job
from ragcore.store import Database

log = logging.getLogger(__name__)

# Writes the job's inputs (named by the new job's id) before the row commits; returns their paths.
Stager = Callable[[Job], list[Path]]


def submit(
    db: Database,
    kind_name: str,
    arguments: dict[str, Any],
    *,
    label: str = "",
    created_by: str | None = None,
    resolves_question_id: int | None = None,
    stage_inputs: Stager | None = None,
) -> Job:
    """Insert the row, stage its inputs, queue it — all committed together or not at all."""
    kind = get_kind(kind_name)
    staged: list[Path] = []
    try:
        with db.connection() as conn:
            job = store.insert(conn, kind=kind.name, label=label, arguments=arguments, created_by=created_by,
                               resolves_question_id=resolves_question_id)
            if stage_inputs is not None:
                staged = stage_inputs(job)
            job = store.link_queue_job(conn, job.id, queue.defer(conn, kind, job.id))
    except BaseException:
        for path in staged:
            path.unlink(missing_ok=True)
        raise
    log.info("job %d (%s) queued by %s", job.id, kind.name, created_by or "-")
    return job


def submit_unless_queued(db: Database, kind_name: str, arguments: dict[str, Any], *, label: str = "",
                         created_by: str | None = None) -> Job | None:
    """`submit` for a kind with a queueing lock that work queues on its own (retention, scans,
    cache fills): None when one is queued already, by this worker or another a moment ago."""
    try:
        return submit(db, kind_name, arguments, label=label, created_by=created_by)
    except JobError:
        return None


def list_jobs(db: Database, *, limit: int = 50, active_only: bool = False, kind: str | None = None) -> list[Job]:
    """Newest first."""
    return store.newest(db, limit=limit, active_only=active_only, kind=kind)


def get_job(db: Database, job_id: int) -> Job:
    job = store.get(db, job_id)
    if job is None:
        raise JobNotFound(job_id)
    return job


def find_job(db: Database, public_id: object) -> Job:
    """The job a user names by its public id; JobNotFound also for text that is not one."""
    wanted = parse_public_id(public_id)
    job = store.get_public(db, wanted) if wanted is not None else None
    if job is None:
        raise JobNotFound(str(public_id))
    return job


def cancel(db: Database, settings: Settings, job_id: int) -> Job:
    """A queued job never runs; a running one stops at its next progress report.

    The returned row is `cancelled` for a queued job, and still `running` with a cancel
    request for a running one (the worker then marks it cancelled, leaving nothing behind).
    """
    load_job_modules(settings)
    with db.connection() as conn:
        job = _locked(conn, job_id)
        if not job.active:
            raise JobError(f"İş {short_id(job.public_id)} zaten bitmiş ({job.status_label.lower()}); iptal edilecek bir şey yok.")
        if job.queue_job_id is not None:
            queue.cancel(conn, job.queue_job_id)
        job = store.mark_cancelled(conn, job.id) if job.status == QUEUED else store.request_cancel(conn, job.id)
    if job.status == CANCELLED:
        get_kind(job.kind).discard(settings, job)
        log.info("job %d cancelled before it ran", job.id)
    else:
        log.info("job %d: cancel requested while running", job.id)
    return job


def retry(db: Database, settings: Settings, job_id: int) -> Job:
    """A failed or cancelled job runs again as a new attempt of the same row (same inputs)."""
    load_job_modules(settings)
    with db.connection() as conn:
        job = _locked(conn, job_id)
        if job.status not in (FAILED, CANCELLED):
            raise JobError(f"İş {short_id(job.public_id)} {job.status_label.lower()}: yalnızca başarısız ya da iptal edilmiş "
                           "işler yeniden denenebilir.")
        kind = get_kind(job.kind)
        if not kind.attempts_left(job):
            raise JobError(f"İş #{job.id} {job.attempts} kez denendi; bu türden bir iş en fazla {kind.max_attempts} "
                           "kez denenir. Gerekirse işi yeniden başlatın (dosyayı yeniden yükleyin).")
        reason = kind.cannot_retry(settings, job)
        if reason:
            raise JobError(reason)
        job = store.requeue(conn, job.id, queue.defer(conn, kind, job.id))
    log.info("job %d queued again (attempt %d)", job.id, job.attempts)
    return job


def requeue_interrupted(db: Database, job_id: int, queue_job_id: int) -> Job | None:
    """A worker shutting down hands its running job back to the queue (same row, new attempt)."""
    with db.connection() as conn:
        job = store.lock(conn, job_id)
        if job is None or job.status != RUNNING or job.queue_job_id != queue_job_id:
            return None
        return store.requeue(conn, job.id, queue.defer(conn, get_kind(job.kind), job.id))


def live_workers(db: Database, settings: Settings) -> int:
    """How many workers have sent a heartbeat recently enough to be taken for alive."""
    return store.live_workers(db, settings.stalled_worker_seconds)


def _locked(conn: psycopg.Connection, job_id: int) -> Job:
    job = store.lock(conn, job_id)
    if job is None:
        raise JobNotFound(job_id)
    return job
