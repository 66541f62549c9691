"""The watched folder: WATCH_DIR (a mounted share) kept in step with the documents.

A scan (the `watch_folder` job, queued by every worker each WATCH_INTERVAL_SECONDS, or
`python -m ragcore watch` in the foreground) walks the folder and compares what it finds with
what the last scan recorded (`watched_files`, migration 028):
- a new file is uploaded as a normal ingest job, with the roles of its folder's rule file
  (`watch_rules`), so it shows on the jobs list with its progress like any upload;
- a changed file (other content) is uploaded as its document's next version, switched in when
  stored; a file gone from the folder has its document retired (kept for the audit trail, no
  longer answering), and the same file back brings that version back;
- a file that failed is reported with its Turkish reason and left alone until its content
  changes: a broken file is not tried again on every scan.
Each action is logged one line each. A file is hashed only when its size or modification time
changed, so a scan of an unchanged share reads no file.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from ragcore.core import Settings, format_integer
from ragcore.documents import EXTENSIONS, DocumentNotFound, VersionError, make_current, retire
from ragcore.jobs import service, store
from ragcore.jobs.kinds import JobError, JobFailed, JobKind, JobRun, Stage, register_kind
from ragcore.jobs.tasks import submit_ingest
from ragcore.jobs.watch_rules import RuleBook, RuleError
from ragcore.store import Database

log = logging.getLogger(__name__)

WATCH = "watch_folder"
CREATED_BY = "klasör izleme"
WATCH_STAGES = {"scan": Stage("İzlenen klasör taranıyor", 0.0, 1.0, "dosya")}
ACCEPTED_SUFFIXES = frozenset(EXTENSIONS.values())

QUEUED, STORED, FAILED, RETIRED = "queued", "stored", "failed", "retired"


@dataclass(frozen=True)
class SeenFile:
    """A file of the folder as this scan found it."""

    path: str  # under WATCH_DIR, '/'-separated
    absolute: Path
    size_bytes: int
    mtime_ns: int


@dataclass(frozen=True)
class WatchedFile:
    """A file as the last scan recorded it, for the admin's list."""

    path: str
    state: str
    error: str | None
    changed_at: Any


STATE_LABELS = {QUEUED: "yükleniyor", STORED: "kayıtlı", FAILED: "hatalı", RETIRED: "kaldırıldı"}


@dataclass
class ScanReport:
    """What one scan did, for the job's result and the command line."""

    seen: int = 0
    queued: list[str] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    retired: list[str] = field(default_factory=list)
    unchanged: int = 0
    truncated: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"seen": self.seen, "queued": self.queued, "stored": self.stored, "failed": self.failed,
                "retired": self.retired, "unchanged": self.unchanged, "truncated": self.truncated}


class WatchError(ValueError):
    """The folder cannot be scanned at all; the message is Turkish."""


# ----------------------------------------------------------------------------- the folder


def walk(root: Path, limit: int) -> tuple[list[SeenFile], bool]:
    """The documents under `root` (hidden files and folders, rule files and symbolic links left
    out: a link could lead outside the share), sorted; and whether `limit` cut the walk short."""
    found: list[SeenFile] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith(".") or Path(name).suffix.lower() not in ACCEPTED_SUFFIXES:
                continue
            absolute = Path(folder) / name
            try:
                stat = absolute.lstat()
            except OSError:
                continue  # removed while we walked: the next scan sees it gone
            if absolute.is_symlink() or not absolute.is_file():
                continue
            if len(found) >= limit:
                return found, True
            found.append(SeenFile(absolute.relative_to(root).as_posix(), absolute, stat.st_size, stat.st_mtime_ns))
    return found, False


# ----------------------------------------------------------------------------- SQL

ROWS_SQL = "SELECT path, sha256, size_bytes, mtime_ns, state, job_id, document_id, error FROM watched_files"
UPSERT_SQL = """
INSERT INTO watched_files (path, sha256, size_bytes, mtime_ns, state, job_id, document_id, error)
VALUES (%(path)s, %(sha256)s, %(size_bytes)s, %(mtime_ns)s, %(state)s, %(job_id)s, %(document_id)s, %(error)s)
ON CONFLICT (path) DO UPDATE SET sha256 = EXCLUDED.sha256, size_bytes = EXCLUDED.size_bytes,
    mtime_ns = EXCLUDED.mtime_ns, state = EXCLUDED.state, job_id = EXCLUDED.job_id,
    document_id = EXCLUDED.document_id, error = EXCLUDED.error, seen_at = now(), changed_at = now()"""
TOUCH_SQL = """
UPDATE watched_files SET size_bytes = %(size_bytes)s, mtime_ns = %(mtime_ns)s, seen_at = now()
WHERE path = %(path)s"""
SETTLE_SQL = """
UPDATE watched_files SET state = %(state)s, document_id = %(document_id)s, error = %(error)s, changed_at = now()
WHERE path = %(path)s AND job_id = %(job_id)s"""
# A job's result names its document by the public id users see; the row keeps the key.
DOCUMENT_KEY_SQL = "SELECT id FROM documents WHERE public_id = %s::uuid"


def watched_files(db: Database, *, limit: int = 500) -> list[WatchedFile]:
    """What the scans recorded, the failed files first (what an admin must act on), then by path."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT path, state, error, changed_at FROM watched_files "
            "ORDER BY state <> 'failed', path LIMIT %s", (limit,)).fetchall()
    return [WatchedFile(*row) for row in rows]


def recorded(db: Database) -> dict[str, dict[str, Any]]:
    """Every file a scan recorded, by path."""
    with db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
        return {row["path"]: row for row in cur.execute(ROWS_SQL).fetchall()}


def _record(conn: psycopg.Connection, path: str, *, sha256: str, size_bytes: int, mtime_ns: int, state: str,
            job_id: int | None = None, document_id: int | None = None, error: str | None = None) -> None:
    conn.execute(UPSERT_SQL, {"path": path, "sha256": sha256, "size_bytes": size_bytes, "mtime_ns": mtime_ns,
                              "state": state, "job_id": job_id, "document_id": document_id,
                              "error": error[:2000] if error else None})


# ----------------------------------------------------------------------------- a scan


def scan(db: Database, settings: Settings, progress: Any = None) -> ScanReport:
    """One pass over WATCH_DIR; see the module's docstring."""
    root = _root(settings)
    files, truncated = walk(root, settings.watch_max_files)
    report = ScanReport(seen=len(files), truncated=truncated)
    rows = recorded(db)
    _settle_finished_jobs(db, rows, report)
    rules = RuleBook(root, settings.watch_default_roles)
    for done, seen in enumerate(files, 1):
        _reconcile(db, settings, rules, seen, rows.get(seen.path), report)
        if progress is not None:
            progress("scan", done, len(files))
    if not truncated:  # a cut walk has not seen every file: nothing is taken for removed
        present = {seen.path for seen in files}
        for path, row in rows.items():
            if path not in present and row["state"] != RETIRED:
                _retire(db, path, row, report)
    else:
        log.warning("watched folder: more than %d files; the rest were not read (WATCH_MAX_FILES)",
                    settings.watch_max_files)
    return report


def _root(settings: Settings) -> Path:
    if settings.watch_dir is None:
        raise WatchError("İzlenen klasör ayarlı değil (WATCH_DIR).")
    root = settings.watch_dir.absolute()
    if not root.is_dir():
        raise WatchError(f"İzlenen klasör bulunamadı ya da okunamıyor: {root} (WATCH_DIR). "
                         "Paylaşımın bağlı olduğunu denetleyin.")
    return root


def _reconcile(db: Database, settings: Settings, rules: RuleBook, seen: SeenFile,
               row: dict[str, Any] | None, report: ScanReport) -> None:
    if row is not None and row["size_bytes"] == seen.size_bytes and row["mtime_ns"] == seen.mtime_ns \
            and row["state"] != RETIRED:
        report.unchanged += 1
        if row["state"] == FAILED:
            report.failed[seen.path] = row["error"] or ""
        return
    try:
        data = _read(seen, settings)
    except OSError as exc:
        log.warning("watched folder: %s could not be read: %s", seen.path, exc)
        return  # a file being written or locked: the next scan tries again
    digest = hashlib.sha256(data).hexdigest()
    if row is not None and row["state"] == RETIRED and row["sha256"] == digest and row["document_id"] is not None:
        _bring_back(db, seen, row, report)
        return
    if row is not None and row["sha256"] == digest and row["state"] != RETIRED:
        with db.connection() as conn:  # touched, not changed: nothing to ingest
            conn.execute(TOUCH_SQL, {"path": seen.path, "size_bytes": seen.size_bytes, "mtime_ns": seen.mtime_ns})
        report.unchanged += 1
        return
    current = row["document_id"] if row is not None and row["state"] != RETIRED else None
    _ingest(db, settings, rules, seen, data, digest, report, current=current)


def _read(seen: SeenFile, settings: Settings) -> bytes:
    """The file's bytes, at most MAX_UPLOAD_MB and one more byte (the ingest refuses a larger one
    with its own message; reading all of a huge file would only cost memory)."""
    with seen.absolute.open("rb") as handle:
        return handle.read(settings.max_upload_bytes + 1)


def _ingest(db: Database, settings: Settings, rules: RuleBook, seen: SeenFile, data: bytes, digest: str,
            report: ScanReport, *, current: int | None) -> None:
    """Queue the file's upload. `current`: the document an earlier content of the file became;
    the new content is its next version, switched in when stored (`new_version_of`), and the
    earlier one goes on answering if the new content is refused."""
    stat = {"sha256": digest, "size_bytes": seen.size_bytes, "mtime_ns": seen.mtime_ns, "document_id": current}
    try:
        rule = rules.rule_for(seen.path)
        job = submit_ingest(db, settings, data, filename=Path(seen.path).name, roles=rule.roles,
                            title=None if current is not None else Path(seen.path).stem, created_by=CREATED_BY,
                            new_version_of=current)
    except (RuleError, JobError) as exc:
        with db.connection() as conn:
            _record(conn, seen.path, state=FAILED, error=str(exc), **stat)
        report.failed[seen.path] = str(exc)
        log.info("watched folder: %s refused: %s", seen.path, exc)
        return
    with db.connection() as conn:
        _record(conn, seen.path, state=QUEUED, job_id=job.id, **stat)
    report.queued.append(seen.path)
    log.info("watched folder: %s queued as job %d (roles %s)", seen.path, job.id, ", ".join(rule.roles))


def _settle_finished_jobs(db: Database, rows: dict[str, dict[str, Any]], report: ScanReport) -> None:
    """Queued files whose job ended: stored with its document (a new version of the one an
    earlier content became), or failed with its reason (the earlier document, if any, still answers)."""
    for path, row in rows.items():
        if row["state"] != QUEUED or row["job_id"] is None:
            continue
        job = store.get(db, row["job_id"])
        if job is None or job.status in ("cancelled", "failed"):
            error = (job.error if job is not None else None) or "İş yarıda kaldı ya da silindi."
            settled = {"state": FAILED, "document_id": row["document_id"], "error": error[:2000]}
            report.failed[path] = error
        elif job.status == "succeeded":
            settled = {"state": STORED, "document_id": _document_key(db, (job.result or {}).get("document_id")),
                       "error": None}
            report.stored.append(path)
        else:
            continue
        with db.connection() as conn:
            conn.execute(SETTLE_SQL, {"path": path, "job_id": row["job_id"], **settled})
        row.update(settled)
        log.info("watched folder: %s %s", path, "stored" if settled["state"] == STORED else f"failed: {settled['error']}")


def _retire(db: Database, path: str, row: dict[str, Any], report: ScanReport) -> None:
    """A file gone from the folder: its document stops answering (kept for the audit trail) and
    the row remembers it was retired, and which document it was."""
    if row["document_id"] is not None:
        try:
            retire(db, row["document_id"])
        except DocumentNotFound:
            pass  # an admin deleted it by hand already
    with db.connection() as conn:
        conn.execute("UPDATE watched_files SET state = %s, changed_at = now() WHERE path = %s", (RETIRED, path))
    report.retired.append(path)
    log.info("watched folder: %s removed from the folder; its document was retired", path)


def _document_key(db: Database, public_id: str | None) -> int | None:
    if not public_id:
        return None
    with db.connection() as conn:
        row = conn.execute(DOCUMENT_KEY_SQL, (public_id,)).fetchone()
    return row[0] if row else None


def _bring_back(db: Database, seen: SeenFile, row: dict[str, Any], report: ScanReport) -> None:
    """The file of a retired document is back with the same content: that version answers again."""
    try:
        make_current(db, row["document_id"])
    except (DocumentNotFound, VersionError) as exc:
        log.info("watched folder: %s is back but its document cannot be restored: %s", seen.path, exc)
        return
    with db.connection() as conn:
        conn.execute("UPDATE watched_files SET state = %s, size_bytes = %s, mtime_ns = %s, changed_at = now() "
                     "WHERE path = %s", (STORED, seen.size_bytes, seen.mtime_ns, seen.path))
    report.stored.append(seen.path)
    log.info("watched folder: %s is back; its document answers again", seen.path)


# ----------------------------------------------------------------------------- the job


def queue_scan(db: Database, settings: Settings) -> Any:
    """Queue one scan (a worker does every WATCH_INTERVAL_SECONDS); None without WATCH_DIR or
    when a scan is queued already."""
    if settings.watch_dir is None:
        return None
    return service.submit_unless_queued(db, WATCH, {}, label="İzlenen klasör", created_by=CREATED_BY)


def _run_scan(run: JobRun) -> dict[str, Any]:
    try:
        return scan(run.db, run.settings, run.progress).as_dict()
    except WatchError as exc:
        raise JobFailed(str(exc), retryable=False) from exc


def summarize(result: dict[str, Any]) -> str:
    """The scan's result in one Turkish line."""
    parts = [f"{format_integer(result.get('seen'))} dosya tarandı"]
    for key, label in (("queued", "yükleniyor"), ("stored", "kaydedildi"), ("retired", "kaldırıldı"),
                       ("failed", "hatalı")):
        if result.get(key):
            parts.append(f"{format_integer(len(result[key]))} {label}")
    if result.get("truncated"):
        parts.append("dosya sayısı sınırı aşıldı (WATCH_MAX_FILES)")
    return ", ".join(parts)


WATCH_KIND = register_kind(JobKind(
    name=WATCH,
    label="İzlenen klasörün taranması",
    run=_run_scan,
    stages=WATCH_STAGES,
    summary=summarize,
    queueing_lock=WATCH,
    already_queued="Sırada bekleyen bir klasör tarama işi zaten var.",
))

