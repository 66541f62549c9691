"""SIGKILL the ingesting process at each stage: the database must be as it was, and the
upload must succeed when repeated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragcore.documents import ingest_pdf, remove_orphan_files, stored_path
from ragcore.embed import make_embedder
from tests.conftest import LAW_6331

REPO = Path(__file__).resolve().parent.parent

_INGEST_UNTIL = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from ragcore.core import Settings
    from ragcore.store import open_database
    from ragcore.embed import make_embedder
    from ragcore.documents import ingest_pdf

    target_stage, target_done, path = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    settings = Settings.from_env(dotenv=None)
    db = open_database(settings)
    embedder = make_embedder(settings)

    def progress(stage, done, total):
        if stage == target_stage and done >= target_done:
            print("REACHED", stage, done, total, flush=True)
            time.sleep(600)  # wait here to be killed

    ingest_pdf(db, settings, embedder, path.read_bytes(), filename=path.name, roles=["isg"], progress=progress)
    print("FINISHED", flush=True)
    """
)


def _counts(db) -> dict[str, int]:
    with db.connection() as conn:
        counts = {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("documents", "chunks", "postings", "lexicon")
        }
        counts["lex_stats"] = conn.execute("SELECT sum(chunk_count + total_length) FROM lex_stats").fetchone()[0]
    return counts


# (stage, progress count at which to kill): during extraction, during embedding, and inside the
# insert transaction after the document row and its chunks were written but before commit.
@pytest.mark.needs_data("laws")
@pytest.mark.parametrize(("stage", "done"), [("extract", 5), ("embed", 1), ("store", 2)])
def test_sigkill_during_ingest_leaves_no_partial_document(db, settings, stage, done):
    env = os.environ | {
        "DATABASE_URL": settings.database_url,
        "DATA_DIR": str(settings.data_dir),
        "EMBED_BACKEND": "use",
        "LLM_BACKEND": "extractive",
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", _INGEST_UNTIL, stage, str(done), str(LAW_6331)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"REACHED {stage}"), proc.stderr.read() if not line else line
        if stage == "store":
            with db.connection() as conn:  # the transaction is open but invisible to others
                assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    assert _counts(db) == {"documents": 0, "chunks": 0, "postings": 0, "lexicon": 0, "lex_stats": 0}
    # At most an unreferenced file is left (the file goes in place just before the transaction);
    # the orphan sweep collects it and anything else the killed process left in the uploads folder.
    remove_orphan_files(db, settings, min_age_s=0)
    assert not settings.uploads_dir.exists() or list(settings.uploads_dir.iterdir()) == []

    result = ingest_pdf(db, settings, make_embedder(settings), LAW_6331.read_bytes(), filename=LAW_6331.name,
                        roles=["isg"])
    assert result.pages == 24
    counts = _counts(db)
    assert counts["documents"] == 1 and counts["chunks"] == result.chunks
    with db.connection() as conn:
        digest = conn.execute("SELECT sha256 FROM documents").fetchone()[0]
    assert stored_path(settings, digest).read_bytes() == LAW_6331.read_bytes()
    assert remove_orphan_files(db, settings, min_age_s=0) == []  # a referenced file is never collected
