"""Questions asked while the database was down, kept on local disk until it is back.

The questions log is how an admin learns what the documents do not answer; an outage must not
make questions disappear from it. While the database does not answer, the answer service
appends each question (with its outcome: usually an `error` row) to DATA_DIR/spool/questions.jsonl;
the next question that reaches the database writes them into the questions table in one
transaction, keeping the moment each was asked.

One JSON object per line, appended with fsync under a file lock (several app processes share
DATA_DIR). A flush repeated after a crash between commit and truncation inserts nothing twice
(`SPOOLED_INSERT_SQL` skips a row that is already there).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import fasteners

from ragcore.answer.questions import SPOOLED_INSERT_SQL
from ragcore.core import Settings
from ragcore.store import Database

log = logging.getLogger(__name__)

# fasteners' file lock is per process; threads of one process take this one too.
_THREADS = threading.Lock()


def spool_path(settings: Settings) -> Path:
    return settings.data_dir / "spool" / "questions.jsonl"


class QuestionSpool:
    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _THREADS, fasteners.InterProcessLock(str(self.path.with_suffix(".lock"))):
            yield

    def append(self, record: dict) -> None:
        """Keep one question record (`ragcore.answer.questions.question_record`) until the database is back."""
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._locked(), open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        log.warning("database unavailable: question of %s kept in %s", record.get("username"), self.path)

    def pending(self) -> bool:
        try:
            return self.path.stat().st_size > 0
        except FileNotFoundError:
            return False

    def records(self) -> tuple[list[dict], list[str]]:
        """The kept records in order, and any line that is not a whole record (cut short by a
        crash mid-append)."""
        records: list[dict] = []
        broken: list[str] = []
        lines = self.path.read_text(encoding="utf-8").splitlines() if self.path.exists() else []
        for line in filter(str.strip, lines):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                broken.append(line)
        return records, broken

    def flush(self, db: Database) -> int:
        """Write every kept question into the questions table (one transaction), then empty the
        spool. Returns how many were written; raises DatabaseUnavailable (spool kept) if the
        database is still down."""
        if not self.pending():
            return 0
        with self._locked():
            records, broken = self.records()
            written = 0
            if records:
                with db.connection() as conn:
                    for record in records:
                        written += conn.execute(SPOOLED_INSERT_SQL, {"asker_roles": None, **record}).rowcount
            if broken:
                unreadable = self.path.with_suffix(".unreadable")
                log.error("%d line(s) of %s are not whole records; moved to %s", len(broken), self.path, unreadable)
                with open(unreadable, "a", encoding="utf-8") as handle:
                    handle.write("".join(line + "\n" for line in broken))
            os.truncate(self.path, 0)
        log.info("wrote %d question(s) kept while the database was down", written)
        return written
