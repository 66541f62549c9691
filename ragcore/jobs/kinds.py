"""What a kind of job is: its work function, its stages, what it leaves behind; the registry.

A kind is registered once (`register_kind`) and becomes one procrastinate task of the same
name in every queue app (ragcore/jobs/queue.py). The work function gets a `JobRun`: the
job's row, the settings, the database, the process's embedder and a progress callback with
the ingest module's signature `(stage, done, total)`. It returns a JSON-able result, raises
`JobFailed` with a Turkish message for a failure the user can act on, and is stopped by
`JobCancelled` raised from the progress callback (cancel, or a worker shutting down).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragcore.core import Settings, count_of, format_duration
from ragcore.jobs.store import Job
from ragcore.store import Database

Progress = Callable[[str, int, int], None]


class JobError(ValueError):
    """A job request that cannot be carried out; `str(exc)` is a Turkish message."""


class JobNotFound(JobError):
    def __init__(self, job_id: int | str) -> None:
        super().__init__("İş bulunamadı.")  # no id: a key would be a sequential number
        self.job_id = job_id


class JobFailed(Exception):
    """Raised by a work function: the job failed for a reason the user can read (Turkish).

    `retryable=False` when running it again on the same inputs must fail the same way (the
    same file is already stored, the PDF cannot be read): the job then ends for good and what
    it staged is discarded at once instead of being kept for a retry that cannot succeed.
    """

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class JobCancelled(BaseException):
    """Raised from the progress callback to stop the work: not an `Exception`, so that no
    `except Exception` on the way (PDF parsing, embedding) can swallow it, and every
    transaction it crosses rolls back."""


@dataclass(frozen=True)
class JobRun:
    job: Job
    settings: Settings
    db: Database
    embedder: Callable[[], Any]
    progress: Progress


@dataclass(frozen=True)
class Stage:
    label: str  # Turkish, shown with the progress bar
    start: float  # share of the whole bar where this stage begins
    end: float
    unit: str = ""  # what `done/total` counts ("sayfa", "parça")
    committed: bool = False  # the job's work is stored by now (an upload is searchable); the rest only prepares


def _nothing(*_: Any) -> None:
    return None


@dataclass(frozen=True)
class JobKind:
    name: str
    label: str
    run: Callable[[JobRun], dict[str, Any]]
    stages: Mapping[str, Stage] = field(default_factory=dict)
    # Remove what the job staged for itself: after success or cancel, and after a failure that
    # ends the job for good (not retryable, or its last attempt); kept while a retry may succeed.
    discard: Callable[[Settings, Job], None] = _nothing
    # After the work, outside its transaction, before the row is marked succeeded (e.g. resolve a
    # review-queue item): whoever sees the job succeeded sees this done too.
    on_success: Callable[[Database, Job, dict[str, Any]], None] = _nothing
    # A Turkish reason why this failed or cancelled job cannot run again, or None.
    cannot_retry: Callable[[Settings, Job], str | None] = _nothing
    # A result in one Turkish line ("belge #3 “…”: 24 sayfa, 102 parça").
    summary: Callable[[dict[str, Any]], str] = lambda result: ""
    # Attempts a job of this kind may have (its first run and retries); None: no limit.
    max_attempts: int | None = None
    # At most one queued job of this kind at a time (procrastinate's queueing lock).
    queueing_lock: str | None = None
    # Message when that lock refuses a second job.
    already_queued: str = "Bu türden bir iş zaten sırada."

    def attempts_left(self, job: Job) -> bool:
        """Whether `job` may be tried again after this attempt (the attempt limit only)."""
        return self.max_attempts is None or job.attempts < self.max_attempts

    def fraction(self, job: Job) -> float:
        """How much of the whole job is done, from the stage spans (0–1)."""
        if job.status == "succeeded":
            return 1.0
        stage = self.stages.get(job.stage or "")
        if stage is None:
            return 0.0
        part = min(1.0, job.done / job.total) if job.total else 0.0
        return max(0.0, min(1.0, stage.start + (stage.end - stage.start) * part))

    def describe_progress(self, job: Job) -> str:
        """"Vektörler hesaplanıyor: 120/340 parça · yaklaşık 48 sn kaldı" (plain text)."""
        stage = self.stages.get(job.stage or "")
        if stage is None:
            return "Başlıyor…" if job.status == "running" else job.status_label
        text = stage.label
        if job.total > 1:
            text += ": " + count_of(job.done, job.total, stage.unit)
        left = job.seconds_left()
        if left is not None:
            text += f" · yaklaşık {format_duration(left)} kaldı"
        return text


KINDS: dict[str, JobKind] = {}


def register_kind(kind: JobKind) -> JobKind:
    """Add a kind of job (before any queue app or worker is made). Names are task names."""
    if kind.name in KINDS and KINDS[kind.name] is not kind:
        raise ValueError(f"job kind {kind.name!r} is already registered")
    KINDS[kind.name] = kind
    return kind


def load_job_modules(settings: Settings) -> None:
    """Import the modules named by JOB_MODULES so their kinds are registered.

    Kinds are registered by their owner when it is imported (the lab's by `eval.jobs`); ragcore
    never imports the lab. A worker, and anything that cancels or retries a job it may not have
    created, loads them by name first. A module that is not installed is a configuration error
    and fails loudly (ModuleNotFoundError names it).
    """
    for name in settings.job_modules:
        importlib.import_module(name)


def get_kind(name: str) -> JobKind:
    try:
        return KINDS[name]
    except KeyError as exc:
        raise JobError(f"Bilinmeyen iş türü: {name}") from exc
