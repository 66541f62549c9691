"""Background jobs in PostgreSQL: uploads and re-embedding now, any registered kind later.

The public face: submit (`submit`, `submit_ingest`, `submit_reembed`), read (`list_jobs`,
`get_job`, `find_job` by public id, `live_workers`), control (`cancel`, `retry`), run (`run_worker`,
`BackgroundWorker`; which server process runs one: `runs_jobs_here`), fill the quoter's sentence vectors after a store (`warm_quotes`) and of documents stored without them (`queue_unwarmed_quotes`, at a worker's start), delete conversations and questions log rows past their retention (`queue_conversation_retention`, `queue_audit_retention`, at a worker's start and daily), keep WATCH_DIR in step (`scan`, `queue_scan`: a worker every WATCH_INTERVAL_SECONDS), extend (`register_kind`, `JobKind`, `Stage`, `JobRun`, `JobFailed`).
The queue is procrastinate (ragcore/jobs/queue.py says why); our `jobs` table (migration
005, ragcore/jobs/store.py) is what the app shows and survives restarts of everything.
"""

from ragcore.jobs.kinds import (
    KINDS,
    JobCancelled,
    JobError,
    JobFailed,
    JobKind,
    JobNotFound,
    JobRun,
    Stage,
    get_kind,
    load_job_modules,
    register_kind,
)
from ragcore.jobs.service import cancel, find_job, get_job, list_jobs, live_workers, retry, submit
from ragcore.jobs.store import ACTIVE, CANCELLED, FAILED, QUEUED, RUNNING, STATUS_LABELS, SUCCEEDED, Job
from ragcore.jobs.tasks import (
    AUDIT_RETENTION,
    INGEST,
    QUOTES,
    REEMBED,
    RETENTION,
    in_parts,
    queue_audit_retention,
    queue_conversation_retention,
    queue_unwarmed_quotes,
    quotes_read,
    remove_orphan_staged_files,
    staged_path,
    submit_ingest,
    submit_reembed,
    warm_quotes,
)
from ragcore.jobs.watch import STATE_LABELS as WATCH_STATE_LABELS
from ragcore.jobs.watch import WATCH, ScanReport, WatchedFile, WatchError, queue_scan, scan, watched_files
from ragcore.jobs.worker import STALLED_REASON, BackgroundWorker, run_worker, runs_jobs_here

__all__ = [
    "ACTIVE", "AUDIT_RETENTION", "CANCELLED", "FAILED", "INGEST", "KINDS", "QUEUED", "QUOTES", "REEMBED", "RETENTION", "RUNNING", "STALLED_REASON",
    "STATUS_LABELS", "SUCCEEDED", "BackgroundWorker", "Job", "JobCancelled", "JobError", "JobFailed", "JobKind",
    "JobNotFound", "JobRun", "Stage", "cancel", "find_job", "get_job", "get_kind", "in_parts",
    "list_jobs", "live_workers", "load_job_modules", "queue_audit_retention", "queue_conversation_retention", "queue_unwarmed_quotes",
    "quotes_read",    "register_kind", "remove_orphan_staged_files", "retry", "run_worker", "runs_jobs_here", "staged_path", "submit",
    "submit_ingest",
    "submit_reembed", "warm_quotes", "WATCH", "WATCH_STATE_LABELS", "ScanReport", "WatchError", "WatchedFile", "queue_scan", "scan",
    "watched_files",
]
