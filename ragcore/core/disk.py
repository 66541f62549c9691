"""Free disk space where Dayanak writes, measured the one way every caller shares.

A full DATA_DIR is not a slow failure: PostgreSQL panics when it cannot write its write-ahead
log (16 MB a segment) and then cannot even start, so uploads are refused well before that
(MIN_FREE_DISK_MB, `ragcore.documents.check_free_space`), and `doctor`, the status panel and
the embedded server's start-failure message report what is left (`ragcore.store.storage_space`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

MB = 1024 * 1024


@dataclass(frozen=True)
class DiskSpace:
    """Free space of the file system holding `path`. `place` says what the folder is for:
    "data" (DATA_DIR: uploads, secrets, caches) or "database" (the embedded server's folder)."""

    place: str
    path: Path
    free_bytes: int
    total_bytes: int

    @property
    def free_mb(self) -> int:
        return self.free_bytes // MB

    def below(self, floor_bytes: int) -> bool:
        return self.free_bytes < floor_bytes


def nearest_existing(path: Path) -> Path:
    """`path`, or its closest ancestor that exists (DATA_DIR is created on first use; its disk is
    the one it will be created on)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def disk_space(place: str, path: Path) -> DiskSpace:
    """Measure the file system `path` is (or will be) on; raises OSError when it cannot be read."""
    usage = shutil.disk_usage(nearest_existing(path))
    return DiskSpace(place, path, usage.free, usage.total)
