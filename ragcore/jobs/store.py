"""The `jobs` table (migration 005): every statement that reads or writes it.

A row is the product's view of a job; the queue library's job (`queue_job_id`) is the
current attempt. Writes from a worker name that attempt (`queue_job_id = …`), so a row
that was retried, swept or cancelled meanwhile is never overwritten by a stale attempt.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from ragcore.store import Database

QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = "queued", "running", "succeeded", "failed", "cancelled"
ACTIVE = (QUEUED, RUNNING)
STATUS_LABELS = {
    QUEUED: "Sırada",
    RUNNING: "Çalışıyor",
    SUCCEEDED: "Tamamlandı",
    FAILED: "Başarısız",
    CANCELLED: "İptal edildi",
}
# A rate needs at least this much of a stage behind it before it predicts the rest.
MIN_SECONDS_FOR_ESTIMATE = 1.0


@dataclass(frozen=True)
class Job:
    """A row of `jobs`. `id`, `queue_job_id` and `resolves_question_id` are sequential keys for the
    code; what a user sees and names a job by is `public_id` (ragcore.core.public_ids)."""

    id: int
    kind: str
    label: str
    arguments: dict[str, Any]
    created_by: str | None
    status: str
    stage: str | None
    done: int
    total: int
    attempts: int
    created_at: datetime
    started_at: datetime | None
    stage_started_at: datetime | None
    updated_at: datetime
    finished_at: datetime | None
    cancel_requested_at: datetime | None
    result: dict[str, Any] | None
    error: str | None
    worker: str | None
    queue_job_id: int | None
    resolves_question_id: int | None
    public_id: str = ""

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def status_label(self) -> str:
        return STATUS_LABELS.get(self.status, self.status)

    def seconds_left(self) -> float | None:
        """Time left in the current stage at the measured rate of that stage, or None.

        The rate is what the worker achieved since the stage began (`done` items between
        `stage_started_at` and the last write); nothing is guessed before a second of it.
        """
        if self.status != RUNNING or not self.total or self.done <= 0 or self.stage_started_at is None:
            return None
        elapsed = (self.updated_at - self.stage_started_at).total_seconds()
        if elapsed < MIN_SECONDS_FOR_ESTIMATE:
            return None
        rate = self.done / elapsed
        return max(0.0, (self.total - self.done) / rate)

    def as_dict(self) -> dict[str, Any]:
        left = self.seconds_left()
        return {
            "job_id": self.public_id,
            "kind": self.kind,
            "label": self.label,
            "arguments": self.arguments,
            "created_by": self.created_by,
            "status": self.status,
            "stage": self.stage,
            "done": self.done,
            "total": self.total,
            "seconds_left": None if left is None else round(left, 1),
            "attempts": self.attempts,
            "created_at": self.created_at.isoformat(),
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "updated_at": self.updated_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "cancel_requested": self.cancel_requested_at is not None,
            "result": self.result,
            "error": self.error,
            "worker": self.worker,
        }


_COLUMNS = tuple(f.name for f in fields(Job))


def _job(row: dict[str, Any] | None) -> Job | None:
    if row is None:
        return None
    return Job(**{name: row[name] for name in _COLUMNS if name != "public_id"}, public_id=str(row["public_id"]))


def _one(conn: psycopg.Connection, query: str, params: dict[str, Any]) -> Job | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return _job(cur.execute(query, params).fetchone())


def _all(conn: psycopg.Connection, query: str, params: dict[str, Any]) -> list[Job]:
    with conn.cursor(row_factory=dict_row) as cur:
        return [_job(row) for row in cur.execute(query, params).fetchall()]  # type: ignore[misc]


# --------------------------------------------------------------------------- submitting


def insert(conn: psycopg.Connection, *, kind: str, label: str, arguments: dict[str, Any],
           created_by: str | None, resolves_question_id: int | None) -> Job:
    job = _one(conn, """INSERT INTO jobs (kind, label, arguments, created_by, resolves_question_id)
                        VALUES (%(kind)s, %(label)s, %(arguments)s, %(created_by)s, %(question)s)
                        RETURNING *""",
               {"kind": kind, "label": label, "arguments": Jsonb(arguments), "created_by": created_by,
                "question": resolves_question_id})
    assert job is not None
    return job


def link_queue_job(conn: psycopg.Connection, job_id: int, queue_job_id: int) -> Job:
    job = _one(conn, "UPDATE jobs SET queue_job_id = %(q)s WHERE id = %(id)s RETURNING *",
               {"id": job_id, "q": queue_job_id})
    assert job is not None
    return job


def lock(conn: psycopg.Connection, job_id: int) -> Job | None:
    """The row, locked until the end of the caller's transaction (cancel, retry)."""
    return _one(conn, "SELECT * FROM jobs WHERE id = %(id)s FOR UPDATE", {"id": job_id})


def requeue(conn: psycopg.Connection, job_id: int, queue_job_id: int) -> Job:
    """A new attempt: progress, outcome and cancel request cleared, linked to a new queue job."""
    job = _one(conn, """UPDATE jobs SET status = 'queued', attempts = attempts + 1, queue_job_id = %(q)s,
                               stage = NULL, done = 0, total = 0, started_at = NULL, stage_started_at = NULL,
                               finished_at = NULL, cancel_requested_at = NULL, result = NULL, error = NULL,
                               worker = NULL, updated_at = now()
                         WHERE id = %(id)s RETURNING *""",
               {"id": job_id, "q": queue_job_id})
    assert job is not None
    return job


def mark_cancelled(conn: psycopg.Connection, job_id: int) -> Job:
    job = _one(conn, """UPDATE jobs SET status = 'cancelled', cancel_requested_at = coalesce(cancel_requested_at, now()),
                               finished_at = now(), updated_at = now()
                         WHERE id = %(id)s RETURNING *""", {"id": job_id})
    assert job is not None
    return job


def request_cancel(conn: psycopg.Connection, job_id: int) -> Job:
    job = _one(conn, """UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, now()), updated_at = now()
                         WHERE id = %(id)s RETURNING *""", {"id": job_id})
    assert job is not None
    return job


# --------------------------------------------------------------------------- the worker's writes


def start(db: Database, job_id: int, queue_job_id: int, worker: str) -> Job | None:
    """queued → running for this attempt; None when the row is not waiting for it (cancelled, retried)."""
    with db.connection() as conn:
        return _one(conn, """UPDATE jobs SET status = 'running', started_at = now(), updated_at = now(),
                                    worker = %(worker)s
                              WHERE id = %(id)s AND queue_job_id = %(q)s AND status = 'queued'
                              RETURNING *""",
                    {"id": job_id, "q": queue_job_id, "worker": worker})


@dataclass(frozen=True)
class ProgressAck:
    """What a progress write learnt: whether the row is still this attempt's, and a cancel request."""

    current: bool
    cancel_requested: bool


def write_progress(db: Database, job_id: int, queue_job_id: int, stage: str, done: int, total: int) -> ProgressAck:
    with db.connection() as conn:
        row = conn.execute(
            """UPDATE jobs SET stage_started_at = CASE WHEN stage IS DISTINCT FROM %(stage)s THEN now()
                                                       ELSE stage_started_at END,
                               stage = %(stage)s, done = %(done)s, total = %(total)s, updated_at = now()
                WHERE id = %(id)s AND queue_job_id = %(q)s AND status = 'running'
                RETURNING cancel_requested_at IS NOT NULL""",
            {"id": job_id, "q": queue_job_id, "stage": stage, "done": max(0, done), "total": max(0, total)},
        ).fetchone()
    return ProgressAck(current=row is not None, cancel_requested=bool(row and row[0]))


def finish(db: Database, job_id: int, queue_job_id: int, status: str, *,
           result: dict[str, Any] | None = None, error: str | None = None) -> Job | None:
    """The attempt's outcome. Not conditional on 'running': if a sweep took a slow worker for
    dead but the work did complete, the truth (succeeded) wins over the sweep's guess."""
    with db.connection() as conn:
        return _one(conn, """UPDATE jobs SET status = %(status)s, result = %(result)s, error = %(error)s,
                                    finished_at = now(), updated_at = now(),
                                    done = CASE WHEN %(status)s = 'succeeded' THEN total ELSE done END
                              WHERE id = %(id)s AND queue_job_id = %(q)s
                              RETURNING *""",
                    {"id": job_id, "q": queue_job_id, "status": status,
                     "result": Jsonb(result) if result is not None else None, "error": error})


def fail_abandoned(db: Database, stalled_queue_jobs: list[int], stale_after_s: float, reason: str) -> list[Job]:
    """Close active rows no live worker will finish; a requested cancel ends as cancelled.

    Two cases: the attempt's queue job belonged to a dead worker (`stalled_queue_jobs`, just
    marked failed in the queue), or the queue job is no longer waiting or running at all
    (finished outside our task code, deleted) and the row has not moved for `stale_after_s`.
    """
    with db.connection() as conn:
        return _all(conn, """
            UPDATE jobs j
               SET status = CASE WHEN j.cancel_requested_at IS NULL THEN 'failed' ELSE 'cancelled' END,
                   error = CASE WHEN j.cancel_requested_at IS NULL THEN %(reason)s END,
                   finished_at = now(), updated_at = now()
             WHERE j.status IN ('queued', 'running')
               AND (j.queue_job_id = ANY(%(stalled)s::bigint[])
                    OR (j.updated_at < now() - make_interval(secs => %(stale)s)
                        AND NOT EXISTS (SELECT 1 FROM procrastinate_jobs p
                                         WHERE p.id = j.queue_job_id AND p.status IN ('todo', 'doing'))))
            RETURNING j.*""",
                    {"stalled": stalled_queue_jobs, "stale": stale_after_s, "reason": reason})


# --------------------------------------------------------------------------- reading


def get(db: Database, job_id: int) -> Job | None:
    with db.connection() as conn:
        return _one(conn, "SELECT * FROM jobs WHERE id = %(id)s", {"id": job_id})


def get_public(db: Database, public_id: str) -> Job | None:
    """By the id users see (a canonical UUID string: ragcore.core.parse_public_id)."""
    with db.connection() as conn:
        return _one(conn, "SELECT * FROM jobs WHERE public_id = %(public_id)s::uuid", {"public_id": public_id})


def newest(db: Database, *, limit: int = 50, active_only: bool = False, kind: str | None = None) -> list[Job]:
    with db.connection() as conn:
        return _all(conn, """SELECT * FROM jobs
                              WHERE (NOT %(active)s OR status IN ('queued', 'running'))
                                AND (%(kind)s::text IS NULL OR kind = %(kind)s)
                              ORDER BY created_at DESC, id DESC
                              LIMIT %(limit)s""",
                    {"active": active_only, "kind": kind, "limit": limit})


def live_workers(db: Database, within_s: float) -> int:
    """Workers (of the queue library) whose heartbeat is fresher than `within_s`."""
    with db.connection() as conn:
        return conn.execute(
            "SELECT count(*) FROM procrastinate_workers WHERE last_heartbeat > now() - make_interval(secs => %s)",
            (within_s,),
        ).fetchone()[0]
