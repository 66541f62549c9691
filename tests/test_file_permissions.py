"""What Dayanak writes under DATA_DIR is private: uploads 0700, PDFs and temp files 0600,
secrets 0700/0600, and DATA_DIR closed again after the embedded server started (as root too)."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import psutil
import psycopg
import pytest

from ragcore import store as dbmod
from ragcore.core import Settings, cookie_key
from ragcore.documents import ingest
from tests import pdfs
from tests.retrieval_support import make_test_embedder


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


def test_uploads_folder_pdf_and_temp_file_are_private(db, settings: Settings, embedder, monkeypatch) -> None:
    os.umask(0o022)  # the usual umask: without explicit modes files would be 0644, folders 0755
    seen: list[tuple[str, int]] = []
    real_replace = os.replace

    def replace(src, dst):  # the temp file, just before it becomes the stored file
        seen.append((Path(src).name, mode(Path(src))))
        return real_replace(src, dst)

    monkeypatch.setattr(ingest.os, "replace", replace)
    result = ingest.ingest_pdf(db, settings, embedder, pdfs.text_pdf(["Madde 1 - Gizli talimat metni."]),
                               filename="gizli.pdf", roles=["ik"])
    with db.connection() as conn:
        digest = conn.execute("SELECT sha256 FROM documents WHERE id = %s", (result.document_id,)).fetchone()[0]
    stored = ingest.stored_path(settings, digest)
    assert mode(settings.uploads_dir) == 0o700
    assert mode(stored) == 0o600
    assert seen and seen[0][0].endswith(".tmp") and seen[0][1] == 0o600


def test_files_are_0600_whatever_the_umask(tmp_path: Path) -> None:
    from ragcore.core import files

    old = os.umask(0)
    try:
        with files.create_private(tmp_path / "x.pdf") as handle:
            handle.write(b"%PDF")
        assert mode(files.private_dir(tmp_path / "a" / "b")) == 0o700
    finally:
        os.umask(old)
    assert mode(tmp_path / "x.pdf") == 0o600
    with pytest.raises(FileExistsError):
        files.create_private(tmp_path / "x.pdf")


def test_older_installs_are_tightened_at_start(tmp_path: Path) -> None:
    from ragcore.core import files

    settings = Settings(data_dir=tmp_path / "data")
    settings.uploads_dir.mkdir(parents=True)
    settings.secrets_dir.mkdir()
    for folder in (settings.data_dir, settings.uploads_dir, settings.secrets_dir):
        folder.chmod(0o755)
    old_pdf = settings.uploads_dir / ("a" * 64 + ".pdf")
    old_pdf.write_bytes(b"%PDF")
    old_pdf.chmod(0o644)
    changed = files.secure_data_dir(settings)
    assert set(changed) == {settings.data_dir, settings.uploads_dir, settings.secrets_dir, old_pdf}
    assert (mode(settings.data_dir), mode(settings.uploads_dir), mode(old_pdf)) == (0o700, 0o700, 0o600)
    assert files.secure_data_dir(settings) == []


def test_data_dir_is_closed_after_the_embedded_server_starts() -> None:
    """As root, pgserver opens DATA_DIR to everyone at start; afterwards only the owner (and,
    as root, the database server's group) may enter, and the server keeps working.

    Not under pytest's tmp_path: a concurrent pytest run resets its base folder to 0700,
    which would lock the database's system user out of its own data directory."""
    root = Path(tempfile.mkdtemp(prefix="dayanak-perm-"))
    settings = Settings(data_dir=root / "data", cookie_key=None)
    cookie_key(settings)  # a generated secret exists before the server starts
    try:
        url = dbmod.embedded_url(settings.data_dir)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE t AS SELECT generate_series(1, 1000) AS x")
            conn.execute("CHECKPOINT")  # the server re-opens files by absolute path here
            assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 1000
        data_mode = mode(settings.data_dir)
        assert data_mode & 0o007 == 0, oct(data_mode)  # nothing for other users
        server = psutil.Process(int((settings.data_dir / "pg" / "data" / "postmaster.pid").read_text().split()[0]))
        if server.uids().effective != os.geteuid():  # root: the server runs as pgserver
            assert data_mode == 0o710 and settings.data_dir.stat().st_gid == server.gids().effective
        else:
            assert data_mode == 0o700
        assert mode(settings.secrets_dir) == 0o700
        assert mode(settings.secrets_dir / "cookie_key") == 0o600
        with psycopg.connect(url, autocommit=True) as conn:  # new connections still work
            assert conn.execute("SELECT 1").fetchone()[0] == 1
    finally:
        dbmod.stop_embedded(settings.data_dir)
        shutil.rmtree(root, ignore_errors=True)
