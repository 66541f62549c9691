"""The job-queue library, procrastinate 3, behind four functions: make an app, defer, cancel,
and the worker-side app whose tasks are our job kinds.

Why procrastinate 3.10 (the brief's first candidate) rather than pgqueuer 1.x: both keep jobs
in PostgreSQL, fetch with `SKIP LOCKED` (any number of workers on any number of machines),
wake workers with LISTEN/NOTIFY and track worker heartbeats. procrastinate is already pinned
in requirements.txt (pgqueuer is not in the lock) and fits this code as it is: it speaks
psycopg 3 in both its sync and async flavours and can insert a job **on our own connection**
(`configure_task(connection=…)`), so a `jobs` row, its staged file and its queue job commit
together or not at all; it runs plain synchronous task functions (PDF parsing, embedding) in
a thread while its event loop keeps the heartbeat going; a synchronous task polls abort
requests (`JobContext.should_abort`); and stalled-job detection is a query
(`get_stalled_jobs`) that leaves the decision — fail or re-run — to us. pgqueuer's worker
side is asyncio-first, so the synchronous bridge would have been ours to write.

Every connection procrastinate opens itself gets `search_path=public`: its SQL is
unqualified and its tables live in the public namespace only (ragcore/store/queue_schema.py).
Connections we pass in are the public `Database`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import procrastinate
import psycopg
from procrastinate import exceptions as queue_errors

from ragcore.jobs.kinds import KINDS, JobError, JobKind

QUEUE = "dayanak"
PUBLIC_ONLY = {"options": "-c search_path=public"}

# (procrastinate job context, our job id) -> result; runs in a worker thread.
Runner = Callable[[procrastinate.JobContext, int], Any]


def _register_tasks(app: procrastinate.App, runner: Runner | None) -> procrastinate.App:
    for kind in KINDS.values():
        def task(context: procrastinate.JobContext, job_id: int) -> Any:
            if runner is None:
                raise RuntimeError("this queue app only submits jobs; run a worker to execute them")
            return runner(context, job_id)

        task.__name__ = kind.name
        app.task(name=kind.name, queue=QUEUE, pass_context=True)(task)
    return app


def submit_app() -> procrastinate.App:
    """For deferring and cancelling from synchronous code on a connection we pass in.

    Its connector is never opened: every call here hands it one of our connections, so it
    needs no pool of its own. One per process and set of registered kinds.
    """
    return _submit_app(tuple(sorted(KINDS)))


@functools.lru_cache(maxsize=4)
def _submit_app(kinds: tuple[str, ...]) -> procrastinate.App:
    return _register_tasks(procrastinate.App(connector=procrastinate.SyncPsycopgConnector(kwargs=PUBLIC_ONLY)), None)


def worker_app(url: str, runner: Runner, *, max_connections: int = 4) -> procrastinate.App:
    """For a worker: an asyncio pool of its own (opened by the worker's event loop)."""
    connector = procrastinate.PsycopgConnector(conninfo=url, kwargs=PUBLIC_ONLY, min_size=1,
                                               max_size=max_connections)
    return _register_tasks(procrastinate.App(connector=connector), runner)


def defer(conn: psycopg.Connection, kind: JobKind, job_id: int) -> int:
    """Queue one attempt of our job `job_id` inside the caller's transaction; its queue id."""
    app = submit_app()
    try:
        return app.configure_task(kind.name, allow_unknown=False, connection=conn,
                                  queueing_lock=kind.queueing_lock).defer(job_id=job_id)
    except queue_errors.AlreadyEnqueued as exc:
        raise JobError(kind.already_queued) from exc


def cancel(conn: psycopg.Connection, queue_job_id: int) -> bool:
    """A waiting queue job is cancelled (never runs); a running one gets an abort request."""
    return submit_app().job_manager.cancel_job_by_id(queue_job_id, abort=True, connection=conn)

