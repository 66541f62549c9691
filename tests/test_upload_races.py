"""Two uploads of the same bytes, one of them interrupted; a re-embed racing an upload.

Each upload runs in its own process (its own connections, its own pool), paused at a named
point until the test says how to go on: "placed" (the file is in place, before the insert
transaction), "in-transaction" (rows written, not committed) and "cleanup" (about to remove
the file after a failure). The interrupted process gets a KeyboardInterrupt there, as a
Streamlit rerun or Ctrl-C would deliver it. Whatever the interleaving, the upload that commits
must keep its file. The embedder is a deterministic stand-in in a namespace of its own, so
the processes start fast and the recorded model is under the test's control.
"""

from __future__ import annotations

import hashlib
import os
import queue
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragcore import store as dbmod
from ragcore.documents import IngestError, ingest_pdf, reembed_all, stored_path
from tests import pdfs
from tests.fakes import HashEmbedder

REPO = Path(__file__).resolve().parent.parent
NAMESPACE = "upload_races"
DEADLINE_S = 120  # only bounds a hang; nothing here asserts how long anything takes

_UPLOAD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from ragcore.core import Settings
    from ragcore.store import Database
    from ragcore.documents import ingest_pdf
    from tests.fakes import HashEmbedder

    namespace, pause_at, path = sys.argv[1], set(filter(None, sys.argv[2].split(","))), Path(sys.argv[3])
    settings = Settings.from_env(dotenv=None)
    db = Database(settings.database_url, namespace, max_size=2)

    def pause(point):
        print("AT", point, flush=True)
        if sys.stdin.readline().strip() == "interrupt":
            raise KeyboardInterrupt

    def progress(stage, done, total):
        point = {("store", 0): "placed", ("store", 2): "in-transaction"}.get((stage, done))
        if point in pause_at:
            pause(point)

    if "cleanup" in pause_at:
        unlink = Path.unlink

        def pausing_unlink(self, missing_ok=False):
            if self.suffix == ".pdf" and self.parent == settings.uploads_dir:
                pause("cleanup")
            return unlink(self, missing_ok=missing_ok)

        Path.unlink = pausing_unlink

    try:
        result = ingest_pdf(db, settings, HashEmbedder(), path.read_bytes(), filename=path.name,
                            roles=["isg"], progress=progress)
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
        sys.exit(130)
    print("DONE", result.document_id, flush=True)
    """
)


class Upload:
    """One uploading process; its output lines are read by a thread so the test never blocks."""

    def __init__(self, settings, pdf: Path, pause_at: str) -> None:
        env = os.environ | {"DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _UPLOAD, NAMESPACE, pause_at, str(pdf)], cwd=REPO, env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.put(line.strip())
        self.lines.put("EOF")

    def next_line(self) -> str:
        try:
            return self.lines.get(timeout=DEADLINE_S)
        except queue.Empty:
            pytest.fail(f"upload process silent for {DEADLINE_S} s")

    def expect(self, line: str) -> None:
        got = self.next_line()
        assert got == line, f"expected {line!r}, got {got!r}; stderr: {self._stderr_if_done()}"

    def send(self, command: str) -> None:
        self.proc.stdin.write(command + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def finish(self) -> tuple[int, str]:
        self.proc.wait(timeout=DEADLINE_S)
        return self.proc.returncode, self.proc.stderr.read()  # type: ignore[union-attr]

    def _stderr_if_done(self) -> str:
        return self.proc.stderr.read() if self.proc.poll() is not None else "(still running)"  # type: ignore[union-attr]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _waiting_on_a_lock(db: dbmod.Database) -> bool:
    with db.connection() as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        ).fetchone()[0] > 0


@pytest.fixture()
def space(pg_url: str) -> Iterator[dbmod.Database]:
    """A namespace of its own with the stand-in embedder's space recorded."""
    database = dbmod.Database(pg_url, NAMESPACE, max_size=2)
    dbmod.drop_namespace(database, NAMESPACE)
    database.close()
    database = dbmod.Database(pg_url, NAMESPACE, max_size=2)
    dbmod.migrate(database)
    embedder = HashEmbedder()
    dbmod.ensure_embedding_space(database, embedder.name, embedder.dim)
    yield database
    dbmod.drop_namespace(database, NAMESPACE)
    database.close()


# (where the first upload is paused, what it is told there): an interruption with the file in
# place, one inside the transaction, and a failed upload whose clean-up runs (or is itself
# interrupted) while the second upload of the same bytes is under way.
SCENARIOS = {
    "interrupted with the file in place": ("placed", ["interrupt"]),
    "interrupted inside the transaction": ("in-transaction", ["interrupt"]),
    "clean-up runs while the other uploads": ("in-transaction,cleanup", ["interrupt", "go"]),
    "interrupted during its clean-up": ("in-transaction,cleanup", ["interrupt", "interrupt"]),
}


@pytest.mark.parametrize("case", SCENARIOS)
def test_an_interrupted_upload_never_removes_the_file_of_one_that_commits(space, settings, tmp_path, case) -> None:
    pause_at, commands = SCENARIOS[case]
    data = pdfs.law_pdf()
    pdf = tmp_path / "yonetmelik.pdf"
    pdf.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()

    first = Upload(settings, pdf, pause_at)
    second = None
    try:
        first.expect(f"AT {pause_at.split(',')[0]}")
        if len(commands) == 2:  # interrupted inside the transaction; now it is cleaning up
            first.send(commands[0])
            first.expect("AT cleanup")

        # The second upload of the same bytes runs until it is either inside its own transaction
        # or waiting for a lock the first one holds.
        second = Upload(settings, pdf, "in-transaction")
        deadline = time.monotonic() + DEADLINE_S
        second_line = None
        while second_line is None and not _waiting_on_a_lock(space):
            try:
                second_line = second.lines.get(timeout=0.05)
            except queue.Empty:
                assert time.monotonic() < deadline, "the second upload neither waited nor reached its transaction"

        first.send(commands[-1])
        assert first.next_line() == "INTERRUPTED"
        code, stderr = first.finish()
        assert code == 130, stderr

        if second_line is None:
            second_line = second.next_line()
        assert second_line == "AT in-transaction", second_line
        second.send("go")
        done = second.next_line()
        code, stderr = second.finish()
        assert code == 0 and done.startswith("DONE"), stderr
    finally:
        first.kill()
        if second is not None:
            second.kill()

    with space.connection() as conn:
        rows = conn.execute("SELECT sha256 FROM documents").fetchall()
    assert rows == [(digest,)]
    stored = stored_path(settings, digest)
    assert stored.is_file(), "the committed document lost its file"
    assert stored.read_bytes() == data
    assert [p.name for p in settings.uploads_dir.iterdir()] == [stored.name]  # no temp files left


# ----------------------------------------------------------------------------- re-embedding


def _vectors_match(database: dbmod.Database, embedder: HashEmbedder) -> bool:
    with database.connection() as conn:
        rows = conn.execute("SELECT text, embedding::real[] FROM chunks ORDER BY id").fetchall()
    expected = embedder.embed_passages([text for text, _ in rows])
    return bool(rows) and all(np.allclose(vector, row) for (_, vector), row in zip(rows, expected, strict=True))


def _upload_in_thread(database, settings, embedder, data: bytes, pause: tuple[str, int]):
    reached, go, outcome = threading.Event(), threading.Event(), {}

    def progress(stage: str, done: int, total: int) -> None:
        if (stage, done) == pause:
            reached.set()
            go.wait(DEADLINE_S)

    def run() -> None:
        try:
            outcome["result"] = ingest_pdf(database, settings, embedder, data, filename="ikinci.pdf",
                                           roles=["isg"], progress=progress)
        except Exception as exc:  # the test inspects what the upload ended with
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    assert reached.wait(DEADLINE_S), "the upload never reached its pause point"
    return thread, go, outcome


SECOND = pdfs.text_pdf(["MADDE 1 - (1) Ikinci belge: calisanlara egitim verilir.\n"
                        "MADDE 2 - (1) Egitim kayit altina alinir."])


def test_a_reembed_committed_while_an_upload_embeds_refuses_that_upload(space, settings) -> None:
    old, new = HashEmbedder(), HashEmbedder("hash-64-new")
    ingest_pdf(space, settings, old, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    # The upload has its vectors (old model) and its file in place; the re-embed commits now.
    thread, go, outcome = _upload_in_thread(space, settings, old, SECOND, ("store", 0))
    try:
        assert reembed_all(space, new) > 0
    finally:
        go.set()
        thread.join(DEADLINE_S)
    error = outcome.get("error")
    assert isinstance(error, IngestError), outcome
    assert "başka bir gömme modeline geçirildi" in str(error) and "yeniden yükleyin" in str(error)
    with space.connection() as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 1
        assert conn.execute("SELECT model FROM embedding_index").fetchone()[0] == new.name
    assert _vectors_match(space, new)  # no chunk carries an old-model vector
    assert not stored_path(settings, hashlib.sha256(SECOND).hexdigest()).exists()


def test_a_reembed_started_during_the_insert_waits_and_covers_the_new_chunks(space, settings) -> None:
    old, new = HashEmbedder(), HashEmbedder("hash-64-new")
    ingest_pdf(space, settings, old, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    thread, go, outcome = _upload_in_thread(space, settings, old, SECOND, ("store", 2))
    reembedded: dict = {}
    reembed = threading.Thread(target=lambda: reembedded.setdefault("count", reembed_all(space, new)))
    try:
        reembed.start()
        deadline = time.monotonic() + DEADLINE_S
        while not _waiting_on_a_lock(space):  # the re-embed waits for the upload's transaction
            assert time.monotonic() < deadline and reembed.is_alive(), "the re-embed did not wait for the upload"
            time.sleep(0.05)
    finally:
        go.set()
        thread.join(DEADLINE_S)
        reembed.join(DEADLINE_S)
    assert "result" in outcome, outcome
    with space.connection() as conn:
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 2
    assert reembedded["count"] == chunks  # the re-embed saw the upload's chunks
    assert _vectors_match(space, new)
