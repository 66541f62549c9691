"""Orphan clean-up: stored uploads (and temporary files) that no document refers to, left by a
process killed mid-upload; run at app start. An upload in progress holds its file's upload lock
(`ragcore.documents.ingest.upload_lock`), so its file is never collected.
"""

from __future__ import annotations

import time
from pathlib import Path

from ragcore import store as dbmod
from ragcore.core import Settings
from ragcore.documents.ingest import find_by_sha256, upload_lock


def remove_orphan_files(db: dbmod.Database, settings: Settings, min_age_s: float = 3600) -> list[Path]:
    """Delete stored files (and temp files) that no document refers to and that are older than
    `min_age_s` — leftovers of a process killed mid-upload. A file whose upload lock is held
    belongs to an upload in progress and stays, whatever its age."""
    if not settings.uploads_dir.is_dir():
        return []
    with db.connection() as conn:
        known = {row[0] for row in conn.execute("SELECT sha256 FROM documents")}
    cutoff = time.time() - min_age_s
    removed = []
    for path in settings.uploads_dir.iterdir():
        digest = path.name.lstrip(".").split(".")[0]
        if not (path.is_file() and path.stat().st_mtime < cutoff and (path.suffix == ".tmp" or digest not in known)):
            continue
        with db.advisory_lock(upload_lock(digest), wait=False) as lock:
            if lock is None or (path.suffix != ".tmp" and find_by_sha256(lock, digest)):
                continue  # being uploaded right now, or committed since the listing above
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed
