"""The connection pool on one namespace and its recovery when the server stops answering.

A "namespace" is a PostgreSQL schema with its own copy of the tables (the evaluation lab
ingests its corpus into one), selected through the connection's search_path so that every
query stays unqualified.

When the server stops answering, a request waits at most `CHECKOUT_TIMEOUT` seconds for a
connection and then gets `DatabaseUnavailable` (never a 30-second `PoolTimeout`); before giving
up, a database opened on the embedded server restarts it if its process died (one process at a
time, see `ragcore.store.server.restart_embedded`) and tries once more on a fresh pool.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from ragcore.core import Settings
from ragcore.store.errors import DatabaseError, DatabaseUnavailable
from ragcore.store.migrations import migrate
from ragcore.store.redaction import redact_dsn, redact_message
from ragcore.store.server import answers, embedded_url, restart_embedded

CHECKOUT_TIMEOUT = 3.0  # seconds a request waits for a pooled connection before the server counts as down
_NAMESPACE_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


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
            if not answers(self.url):
                if self._restart is None:
                    raise DatabaseUnavailable(f"The database does not answer ({redact_dsn(self.url)}).")
                url = self._restart()
                if not answers(url):
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
    def own_connection(self) -> Iterator[psycopg.Connection]:
        """A connection outside the pool, in autocommit mode, closed when the block ends.

        For session-level advisory locks (here and `ragcore.jobs.claims`): a lock ends with its
        connection, so nothing (an exception, Ctrl-C, a killed process) can leave one behind in
        the pool, and no transaction stays open while the locked work runs.
        """
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10, options=self._options)
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(
                f"Database unreachable ({redact_dsn(self.url)}): {redact_message(str(exc), self.url)}") from None
        with conn:
            yield conn

    @contextmanager
    def advisory_lock(self, name: str, *, wait: bool = True) -> Iterator[psycopg.Connection | None]:
        """Hold the session-level advisory lock `name` while the block runs, on a connection of its
        own (`own_connection`): queries on it see what others have committed. With `wait=False`
        the block gets None when someone else holds the lock.
        """
        with self.own_connection() as conn:
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
