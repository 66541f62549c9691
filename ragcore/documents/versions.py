"""A document's versions (migration 024): which ones are kept, which one answers, rolling back.

A revised file is stored as the next version of its document by the one upload path
(`ingest.ingest_file(new_version_of=…)`), which retires the current version in the transaction
that stores the new one. Here: the versions a role may see (the document card), rolling back (or
forward) to a kept version — one transaction under the lineage's lock, so a question sees one
version, never both or neither — and the stored document an upload looks like a revision of (the
"Yeni sürüm olarak yükle" offer).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from ragcore import store as dbmod
from ragcore.core import Document, turkish_lower, version_label
from ragcore.documents.catalog import DocumentNotFound, get_document, list_documents
from ragcore.documents.ingest import carry_collections, current_version_id, lock_lineage
from ragcore.documents.titles import TitleError, clean_title

log = logging.getLogger(__name__)

ALREADY_CURRENT = "Bu sürüm zaten güncel sürüm; bir değişiklik yapılmadı."


@dataclass(frozen=True)
class Version:
    """One kept version of a document, as the document card lists it."""

    document_id: int  # its documents row (database key)
    public_id: str
    version_no: int
    is_current: bool
    uploaded_at: datetime
    uploaded_by: str | None
    filename: str
    chunk_count: int
    retired_at: datetime | None = None

    @property
    def label(self) -> str:
        """"sürüm 2 · 06.12.2026"."""
        return version_label(self.version_no, self.uploaded_at)

    def as_dict(self) -> dict:
        return {"document_id": self.public_id, "version": self.version_no, "current": self.is_current,
                "uploaded_at": self.uploaded_at.isoformat(), "uploaded_by": self.uploaded_by,
                "filename": self.filename, "chunks": self.chunk_count, "label": self.label,
                "retired_at": self.retired_at.isoformat() if self.retired_at else None}


class VersionError(ValueError):
    """A roll-back that cannot be done; `str(exc)` is a Turkish message."""


def list_versions(db: dbmod.Database, document_id: int, role: str) -> list[Version]:
    """Every kept version of the document `document_id` belongs to, newest first, that `role` may
    read (each version has its own roles); DocumentNotFound when the role may not read the document."""
    doc = get_document(db, document_id, role)
    if doc is None:
        raise DocumentNotFound(document_id)
    with db.connection() as conn:
        rows = conn.execute(
            """SELECT d.id, d.public_id::text, d.version_no, d.is_current, d.created_at, d.uploaded_by, d.filename,
                      (SELECT count(*) FROM chunks c WHERE c.document_id = d.id), d.retired_at
               FROM documents d
               WHERE d.lineage = %(lineage)s::uuid AND (%(role)s = 'admin' OR %(role)s = ANY(d.allowed_roles))
               ORDER BY d.version_no DESC""",
            {"lineage": doc.lineage, "role": role}).fetchall()
    return [Version(*row) for row in rows]


def make_current(db: dbmod.Database, document_id: int) -> Document:
    """Make the kept version `document_id` its document's current one (a roll-back, or forward
    again). Admin-only: check before.

    One transaction under the lineage's lock (the one a new version's store takes): the current
    row is retired, then this one made current; migration 024's trigger moves the roles of their
    chunks, so every reader's snapshot holds one version of the document, and the per-role
    statistics follow in the same transaction."""
    doc = get_document(db, document_id, "admin")
    if doc is None:
        raise DocumentNotFound(document_id)
    with db.connection() as conn:
        lock_lineage(conn, doc.lineage)
        row = conn.execute("SELECT is_current FROM documents WHERE id = %s", (document_id,)).fetchone()
        if row is None:
            raise DocumentNotFound(document_id)
        if row[0]:
            raise VersionError(ALREADY_CURRENT)
        previous = current_version_id(conn, doc.lineage)
        conn.execute("UPDATE documents SET is_current = false, retired_at = now() "
                     "WHERE lineage = %s::uuid AND is_current", (doc.lineage,))
        conn.execute("UPDATE documents SET is_current = true WHERE id = %s", (document_id,))
        if previous is not None:  # the collections follow the document to its new current version
            carry_collections(conn, previous, document_id)
    log.info("document %s: version %d made current", doc.lineage, doc.version_no)
    return get_document(db, document_id, "admin")  # type: ignore[return-value]


def retire(db: dbmod.Database, document_id: int) -> bool:
    """Stop a document answering without deleting it: its current version is retired (kept, with
    every other version, for the audit trail; `make_current` brings one back). The watched
    folder's answer to a file removed from the share. Admin-only: check before. False when the
    document had no current version (retired already)."""
    doc = get_document(db, document_id, "admin")
    if doc is None:
        raise DocumentNotFound(document_id)
    with db.connection() as conn:
        lock_lineage(conn, doc.lineage)
        retired = conn.execute("UPDATE documents SET is_current = false, retired_at = now() "
                               "WHERE lineage = %s::uuid AND is_current RETURNING id", (doc.lineage,)).fetchall()
    if retired:
        log.info("document %s retired", doc.lineage)
    return bool(retired)


def revision_of(db: dbmod.Database, *, title: str | None = None, filename: str | None = None) -> Document | None:
    """The stored document (current version) an upload looks like a revision of: the same typed
    title (letter case aside, after the upload form's cleaning), or with no title typed the same
    file name; None when none does. A typed title names the document, so a different one means
    a different document even from a file of the same name. Admins upload: every document counts.
    (A title read from the file itself is known only once the job has read it: not matched here.)"""
    wanted_title = turkish_lower(_clean(title))
    wanted_name = (filename or "").strip()
    if not wanted_title and not wanted_name:
        return None
    for doc in list_documents(db, "admin"):
        if turkish_lower(doc.title) == wanted_title if wanted_title else doc.filename == wanted_name:
            return doc
    return None


def _clean(title: str | None) -> str:
    try:
        return clean_title(title or "")
    except TitleError:  # empty or too long: matches nothing
        return ""
