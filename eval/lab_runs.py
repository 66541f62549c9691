"""Lab runs in the database (eval/migrations/001): the run rows, their per-question result cache, and
the namespaces a run builds — named per run and attempt, dropped by the run, swept when stale.

Every piece of state a run has lives here or in its run folder, keyed by the run's id: nothing
is shared between two runs (or two sessions of the page) except the content-addressed embedding
cache, so concurrent runs cannot overwrite each other's progress or delete each other's data.

Namespaces are `lab_<run id>_<attempt>_<n>`. A run drops what it built in a `finally`; what a
killed process left behind is swept (`sweep_stale_namespaces`) once its run is no longer active
— its job finished, or, for a run without a job (the CLI in the foreground), no progress for an
hour — and a new attempt of a run first drops the namespaces of its earlier attempts.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from ragcore import store as dbmod
from ragcore.store import Database

log = logging.getLogger(__name__)

KINDS = ("gold", "tquad", "answers")
KIND_LABELS = {"gold": "Doğrulama seti", "tquad": "Vikipedi soruları: arama", "answers": "Vikipedi soruları: cevap"}
ACTIVE = ("queued", "running")
STALE_AFTER_S = 3600.0
NAMESPACE_PREFIX = "lab_"
_NAMESPACE = re.compile(r"^lab_(\d+)_(\d+)_(\d+)$")

_COLUMNS = """id, kind, label, configuration, gold_set_id, gold_version, folder, job_id, status, attempt, progress,
              error, created_by, created_at, updated_at, finished_at"""


@dataclass(frozen=True)
class LabRun:
    id: int
    kind: str
    label: str
    configuration: dict[str, Any]
    gold_set_id: int | None
    gold_version: int | None
    folder: str
    job_id: int | None
    status: str
    attempt: int
    progress: dict[str, Any]
    error: str | None
    created_by: str | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None

    @property
    def active(self) -> bool:
        return self.status in ACTIVE


def _run(row: dict | None) -> LabRun | None:
    return None if row is None else LabRun(**row)


def create_run(db: Database, kind: str, *, label: str, configuration: dict[str, Any], folder: str,
               created_by: str | None, gold_set_id: int | None = None, gold_version: int | None = None) -> LabRun:
    if kind not in KINDS:
        raise ValueError(f"unknown lab run kind {kind!r}")
    with db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            f"""INSERT INTO public.lab_runs (kind, label, configuration, folder, created_by, gold_set_id, gold_version)
                VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}""",
            (kind, label, Jsonb(configuration), folder, created_by, gold_set_id, gold_version)).fetchone()
    run = _run(row)
    assert run is not None
    return run


def set_folder(db: Database, run_id: int, folder: str) -> None:
    with db.connection() as conn:
        conn.execute("UPDATE public.lab_runs SET folder = %s WHERE id = %s", (folder, run_id))


def attach_job(db: Database, run_id: int, job_id: int) -> None:
    with db.connection() as conn:
        conn.execute("UPDATE public.lab_runs SET job_id = %s WHERE id = %s", (job_id, run_id))


def get_run(db: Database, run_id: int) -> LabRun | None:
    with db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
        return _run(cur.execute(f"SELECT {_COLUMNS} FROM public.lab_runs WHERE id = %s", (run_id,)).fetchone())


def run_for_job(db: Database, job_id: int) -> LabRun | None:
    with db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
        return _run(cur.execute(f"SELECT {_COLUMNS} FROM public.lab_runs WHERE job_id = %s", (job_id,)).fetchone())


def list_runs(db: Database, *, limit: int = 100, kind: str | None = None) -> list[LabRun]:
    """Newest first."""
    with db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            f"""SELECT {_COLUMNS} FROM public.lab_runs WHERE %(kind)s::text IS NULL OR kind = %(kind)s
                ORDER BY created_at DESC, id DESC LIMIT %(limit)s""", {"kind": kind, "limit": limit}).fetchall()
    return [LabRun(**row) for row in rows]


def start_attempt(db: Database, run_id: int) -> int:
    """running, attempt + 1; returns the attempt number (part of this attempt's namespace names)."""
    with db.connection() as conn:
        row = conn.execute(
            """UPDATE public.lab_runs SET status = 'running', attempt = attempt + 1, error = NULL, finished_at = NULL,
                                          updated_at = now()
               WHERE id = %s RETURNING attempt""", (run_id,)).fetchone()
    if row is None:
        raise LookupError(f"lab run {run_id} does not exist")
    return row[0]


def write_progress(db: Database, run_id: int, progress: dict[str, Any]) -> None:
    """The page's progress line (stage, configuration, counts); also marks the run as alive."""
    with db.connection() as conn:
        conn.execute("UPDATE public.lab_runs SET progress = %s, updated_at = now() WHERE id = %s",
                     (Jsonb(progress), run_id))


def finish(db: Database, run_id: int, status: str, *, error: str | None = None) -> None:
    with db.connection() as conn:
        conn.execute(
            """UPDATE public.lab_runs SET status = %s, error = %s, finished_at = now(), updated_at = now()
               WHERE id = %s""", (status, error, run_id))


# --------------------------------------------------------------------------- result cache


def cached_results(db: Database, run_id: int) -> dict[tuple[str, str], dict[str, Any]]:
    """{(configuration, item): payload} of everything this run finished before."""
    with db.connection() as conn:
        rows = conn.execute("SELECT configuration, item, payload FROM public.lab_results WHERE run_id = %s",
                            (run_id,)).fetchall()
    return {(row[0], row[1]): row[2] for row in rows}


def store_result(db: Database, run_id: int, configuration: str, item: str, payload: dict[str, Any]) -> None:
    """Keep one finished item; a repeated store (a concurrent zombie attempt) keeps the first."""
    with db.connection() as conn:
        conn.execute(
            """INSERT INTO public.lab_results (run_id, configuration, item, payload) VALUES (%s, %s, %s, %s)
               ON CONFLICT DO NOTHING""", (run_id, configuration, item, Jsonb(payload)))


# --------------------------------------------------------------------------- namespaces


def namespace_name(run_id: int, attempt: int, n: int) -> str:
    return f"{NAMESPACE_PREFIX}{int(run_id)}_{int(attempt)}_{int(n)}"


def lab_namespaces(db: Database) -> list[str]:
    with db.connection() as conn:
        rows = conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'lab\\_%' ORDER BY nspname")
        return [row[0] for row in rows if _NAMESPACE.match(row[0])]


def drop_run_namespaces(db: Database, run_id: int) -> list[str]:
    """Every namespace of this run: at the start of an attempt, what earlier attempts left behind
    (a killed worker); at its end, what this attempt built."""
    dropped = []
    for name in lab_namespaces(db):
        match = _NAMESPACE.match(name)
        assert match is not None
        if int(match.group(1)) == run_id:
            dbmod.drop_namespace(db, name)
            dropped.append(name)
    return dropped


ACTIVE_RUNS_SQL = """
SELECT r.id FROM public.lab_runs r LEFT JOIN public.jobs j ON j.id = r.job_id
WHERE r.id = ANY(%(ids)s) AND (
    (j.id IS NOT NULL AND j.status IN ('queued', 'running'))
    OR (r.status IN ('queued', 'running') AND r.updated_at > now() - make_interval(secs => %(stale)s)))"""


def sweep_stale_namespaces(db: Database, stale_after_s: float = STALE_AFTER_S) -> list[str]:
    """Drop lab namespaces whose run is not active any more (see the module docstring)."""
    names = lab_namespaces(db)
    if not names:
        return []
    ids = sorted({int(_NAMESPACE.match(n).group(1)) for n in names})  # type: ignore[union-attr]
    with db.connection() as conn:
        active = {row[0] for row in conn.execute(ACTIVE_RUNS_SQL, {"ids": ids, "stale": stale_after_s})}
    dropped = []
    for name in names:
        if int(_NAMESPACE.match(name).group(1)) not in active:  # type: ignore[union-attr]
            dbmod.drop_namespace(db, name)
            dropped.append(name)
            log.warning("dropped stale lab namespace %s (its run is not active)", name)
    return dropped
