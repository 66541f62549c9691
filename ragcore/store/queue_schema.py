"""The job-queue library's own tables, created and upgraded with our migrations.

procrastinate ships its schema as one SQL file (`schema.sql`, not idempotent: plain CREATE
TYPE/TABLE/FUNCTION) plus per-release migration files named by the version that introduced
them (`03.04.00_01_pre_….sql`); it does not record in the database which version is applied —
that is left to the application's migration tool. So `ragcore.store.migrations.migrate` calls
`ensure_queue_schema` last, in its transaction and under its advisory lock, and we record the
applied version in `job_queue_schema` (migration 005):

- no procrastinate tables yet: apply `schema.sql`, record the installed version;
- recorded version older than the installed library: apply the library's migration files
  between the two versions, in order (stop the workers first, as procrastinate asks);
- recorded version newer: refuse — this code is older than the database.

The SQL is unqualified, so objects land in the first schema of the search path. They belong
in `public` only (lab namespaces are schemas too, with `lab,public` search paths), hence the
explicit `SET LOCAL search_path` and the namespace check in `ragcore.store.migrations.migrate`; every
connection procrastinate opens itself is given `search_path=public` (ragcore/jobs/queue.py).
"""

from __future__ import annotations

import logging
import re
from importlib import resources

import procrastinate
import psycopg
from procrastinate.schema import SchemaManager

log = logging.getLogger(__name__)

LIBRARY = "procrastinate"
_MIGRATION_RE = re.compile(r"^(\d{2})\.(\d{2})\.(\d{2})_(\d{2})_.+\.sql$")


class QueueSchemaError(RuntimeError):
    """The database's job-queue schema cannot be used by this version of the code."""


def _version(text: str) -> tuple[int, int, int]:
    parts = [int(part) for part in re.findall(r"\d+", text)[:3]] + [0, 0, 0]
    return parts[0], parts[1], parts[2]


def installed_version() -> str:
    return procrastinate.__version__


def _migrations_between(old: tuple[int, int, int], new: tuple[int, int, int]) -> list[tuple[str, str]]:
    """(name, sql) of the library's migration files introduced after `old`, up to `new`."""
    folder = resources.files("procrastinate.sql") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _MIGRATION_RE.match(entry.name)
        if match:
            version = tuple(int(match.group(i)) for i in (1, 2, 3))
            if old < version <= new:
                found.append((entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def ensure_queue_schema(conn: psycopg.Connection) -> list[str]:
    """Inside the caller's (public-namespace) migration transaction; returns what was applied."""
    conn.execute("SET LOCAL search_path TO public")
    current = installed_version()
    exists = conn.execute("SELECT to_regclass('public.procrastinate_jobs') IS NOT NULL").fetchone()[0]
    row = conn.execute("SELECT version FROM job_queue_schema WHERE library = %s", (LIBRARY,)).fetchone()
    if not exists:
        conn.execute(SchemaManager.get_schema())
        _record(conn, current)
        log.info("created the job queue schema (procrastinate %s)", current)
        return [f"procrastinate {current} schema"]
    if row is None:
        # Tables created outside our migrations (e.g. `procrastinate schema --apply`) by this version.
        log.warning("procrastinate tables exist without a recorded version; recording %s", current)
        _record(conn, current)
        return []
    recorded = row[0]
    if _version(recorded) > _version(current):
        raise QueueSchemaError(
            f"The database's job queue schema is procrastinate {recorded}, newer than the installed "
            f"{current}: upgrade this installation (pip install -r requirements.txt)."
        )
    if _version(recorded) == _version(current):
        return []
    applied = []
    for name, body in _migrations_between(_version(recorded), _version(current)):
        conn.execute(body)
        applied.append(name)
        log.info("applied procrastinate migration %s", name)
    _record(conn, current)
    return applied


def _record(conn: psycopg.Connection, version: str) -> None:
    conn.execute(
        """INSERT INTO job_queue_schema (library, version) VALUES (%s, %s)
           ON CONFLICT (library) DO UPDATE SET version = EXCLUDED.version, applied_at = now()""",
        (LIBRARY, version),
    )
