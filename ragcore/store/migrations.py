"""Numbered migrations: one SQL file per step (`NNN_name.sql`), each applied once, recorded in a table.

The core schema's files are in `ragcore/store/sql/` (`migrate`); a package that owns tables of
its own (the lab: `eval/migrations/`) keeps its files in its own folder and records them in its
own table, with the same runner (`apply_migrations`).
"""

from __future__ import annotations

import logging
import re
from contextlib import AbstractContextManager
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Protocol

import psycopg
from psycopg import sql

from ragcore.store.errors import DatabaseError
from ragcore.store.role_indexes import create_role_indexes

log = logging.getLogger(__name__)


class Pool(Protocol):
    """What the runner needs of a `ragcore.store.Database`: a connection and the namespace. Named
    here so that migrations never import the database module, which imports them (`open_database`
    migrates)."""

    namespace: str

    def connection(self) -> AbstractContextManager[psycopg.Connection]: ...


CORE_SQL = resources.files("ragcore.store") / "sql"


def migration_files(folder: Traversable = CORE_SQL) -> list[tuple[int, str, str]]:
    """(version, name, SQL) of every `NNN_name.sql` in `folder`, in version order."""
    found = []
    for entry in folder.iterdir():
        match = re.match(r"^(\d{3})_(\w+)\.sql$", entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    return sorted(found)


def apply_migrations(db: Pool, folder: Traversable, *, table: str = "schema_migrations",
                     lock_key: str = "dayanak-migrate") -> list[str]:
    """Apply the pending migrations of `folder` in order, each in its own transaction, recording
    them in `table` (in the namespace); return their names.

    An advisory lock (`lock_key` and the namespace) makes concurrent starts apply each once.
    """
    with db.connection() as conn:
        return _apply_pending(conn, db.namespace, folder, table, lock_key)


def _apply_pending(conn: psycopg.Connection, namespace: str, folder: Traversable, table: str,
                   lock_key: str) -> list[str]:
    applied_now: list[str] = []
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{lock_key}-{namespace}",))
    conn.execute(sql.SQL(
        """CREATE TABLE IF NOT EXISTS {} (
               version integer PRIMARY KEY,
               name text NOT NULL,
               applied_at timestamptz NOT NULL DEFAULT now())""").format(sql.Identifier(table)))
    done = {row[0] for row in conn.execute(sql.SQL("SELECT version FROM {}").format(sql.Identifier(table)))}
    for version, name, body in migration_files(folder):
        if version in done:
            continue
        with conn.transaction():
            conn.execute(body)
            conn.execute(sql.SQL("INSERT INTO {} (version, name) VALUES (%s, %s)").format(sql.Identifier(table)),
                         (version, name))
        applied_now.append(f"{version:03d}_{name}")
        log.info("applied migration %03d_%s (%s) in namespace %s", version, name, table, namespace)
    return applied_now


def migrate(db: Pool) -> list[str]:
    """Apply pending numbered migrations in order, each in its own transaction; return their names.

    An advisory lock per namespace makes concurrent starts (two app processes) apply each once.
    The per-role posting indexes (`role_indexes`) that do not exist yet are created next, under
    the same lock. In the public namespace the job queue library's schema follows.
    """
    with db.connection() as conn:
        applied_now = _apply_pending(conn, db.namespace, CORE_SQL, "schema_migrations", "dayanak-migrate")
        created = create_role_indexes(conn)
        if created:
            log.info("created per-role indexes %s in namespace %s", ", ".join(created), db.namespace)
        if db.namespace == "public":
            # The job queue library's tables live in public only (ragcore/store/queue_schema.py).
            from ragcore.store.queue_schema import QueueSchemaError, ensure_queue_schema

            try:
                with conn.transaction():
                    applied_now += ensure_queue_schema(conn)
            except QueueSchemaError as exc:
                raise DatabaseError(str(exc)) from exc
    return applied_now


def migration_status(db: Pool) -> tuple[list[int], list[int]]:
    """(applied, pending) migration versions."""
    known = [version for version, _, _ in migration_files()]
    with db.connection() as conn:
        exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
        applied = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")] if exists else []
    return applied, [v for v in known if v not in applied]
