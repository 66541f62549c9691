"""jobs (list, show, cancel, retry), worker and watch (one scan of WATCH_DIR).

`python -m ragcore jobs` lists the newest jobs, `jobs ID` shows one, `jobs cancel ID` and
`jobs retry ID` act on one (ID: the job's public id, as listed); `python -m ragcore worker` runs a worker in the foreground until
SIGINT/SIGTERM (compose's `worker` service; more on other machines sharing the database and
DATA_DIR/uploads).
"""

from __future__ import annotations

import argparse

from ragcore import jobs
from ragcore.cli.common import CommandError, add_json_flag, emit, open_db
from ragcore.core import Settings

ACTIONS = ("show", "cancel", "retry")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("jobs", help="background jobs: list, show ID, cancel ID, retry ID",
                       description="`jobs` lists, `jobs ID` (or `jobs show ID`) shows one, "
                                   "`jobs cancel ID`, `jobs retry ID`.")
    p.add_argument("words", nargs="*", metavar="[ACTION] [ID]", help="show | cancel | retry, and a job id")
    p.add_argument("--limit", type=int, default=20, help="how many jobs to list (newest first)")
    p.add_argument("--active", action="store_true", help="only queued and running jobs")
    add_json_flag(p)
    p.set_defaults(func=cmd_jobs)

    p = sub.add_parser("worker", help="run a background job worker until stopped (SIGINT/SIGTERM)")
    p.add_argument("--concurrency", type=int, default=1, help="jobs at a time (default 1: embedding uses every core)")
    p.add_argument("--name", help="worker name shown on its jobs (default: host:pid)")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("watch", help="scan WATCH_DIR once now: new files queued, changed ones again, removed ones retired")
    add_json_flag(p)
    p.set_defaults(func=cmd_watch)


def _parse(words: list[str]) -> tuple[str, str | None]:
    """(action, the job's public id as typed); `find_job` decides whether it names a job."""
    if not words:
        return "list", None
    action, rest = (words[0], words[1:]) if words[0] in ACTIONS else ("show", words)
    if len(rest) != 1:
        raise CommandError("usage: jobs | jobs ID | jobs show ID | jobs cancel ID | jobs retry ID")
    return action, rest[0]


def line(job: jobs.Job) -> str:
    kind = jobs.KINDS.get(job.kind)
    if job.status == jobs.SUCCEEDED:
        detail = _result_text(job)
    elif kind and job.status == jobs.RUNNING:
        detail = kind.describe_progress(job)
    else:
        detail = job.error or ""
    when = job.created_at.astimezone().strftime("%d.%m.%Y %H:%M")
    return f"{job.public_id} {job.status:<9} {job.kind:<16} {job.label[:40]:<40} {when}  {detail}".rstrip()


def _result_text(job: jobs.Job) -> str:
    kind = jobs.KINDS.get(job.kind)
    return kind.summary(job.result) if kind and job.result else ""


def cmd_jobs(args: argparse.Namespace, settings: Settings) -> int:
    action, job_id = _parse(args.words)
    with open_db(settings) as db:
        try:
            if action == "list":
                found = jobs.list_jobs(db, limit=args.limit, active_only=args.active)
                emit([j.as_dict() for j in found], args.json,
                     lambda: "\n".join(line(j) for j in found) or "iş yok")
                return 0
            assert job_id is not None
            job = jobs.find_job(db, job_id)
            if action == "cancel":
                job = jobs.cancel(db, settings, job.id)
            elif action == "retry":
                job = jobs.retry(db, settings, job.id)
        except jobs.JobError as exc:
            raise CommandError(str(exc)) from exc
    emit(job.as_dict(), args.json, lambda: _details(job))
    return 0


def _details(job: jobs.Job) -> str:
    kind = jobs.KINDS.get(job.kind)
    rows = [
        f"iş {job.public_id} · {kind.label if kind else job.kind} · {job.label}",
        f"durum: {job.status_label}" + (" (iptal istendi)" if job.cancel_requested_at and job.active else ""),
        f"deneme: {job.attempts}" + (f" · işçi: {job.worker}" if job.worker else ""),
    ]
    if kind and job.status == jobs.RUNNING:
        rows.append(f"ilerleme: {kind.describe_progress(job)} ({kind.fraction(job):.0%})")
    if job.error:
        rows.append(f"hata: {job.error}")
    if job.result:
        rows.append(f"sonuç: {_result_text(job) or job.result}")
    return "\n".join(rows)


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    if args.concurrency < 1:
        raise CommandError("--concurrency must be at least 1")
    from ragcore.store import DatabaseError

    try:
        jobs.run_worker(settings, concurrency=args.concurrency, name=args.name)
    except DatabaseError as exc:
        raise CommandError(str(exc)) from exc
    return 0


def cmd_watch(args: argparse.Namespace, settings: Settings) -> int:
    """One scan of the watched folder in the foreground (a worker runs one every
    WATCH_INTERVAL_SECONDS); the files it queues are ingested by the workers, as uploads are."""
    with open_db(settings) as db:
        try:
            report = jobs.scan(db, settings)
        except jobs.WatchError as exc:
            raise CommandError(str(exc)) from exc
    emit(report.as_dict(), args.json, lambda: _watch_text(report))
    return 0


def _watch_text(report: jobs.ScanReport) -> str:
    rows = [f"{report.seen} dosya tarandı, {report.unchanged} değişmemiş"]
    rows += [f"kuyrukta: {path}" for path in report.queued]
    rows += [f"kaydedildi: {path}" for path in report.stored]
    rows += [f"kaldırıldı: {path}" for path in report.retired]
    rows += [f"hatalı: {path}: {reason}" for path, reason in report.failed.items()]
    if report.truncated:
        rows.append("dosya sayısı WATCH_MAX_FILES sınırını aştı; kalan dosyalar okunmadı")
    return "\n".join(rows)
