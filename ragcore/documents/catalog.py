"""Stored documents as each role may see them: listing, chunks, download, roles, deletion.

The role predicate sits in every query (admin reads everything, everyone else only documents
whose `allowed_roles` contain their role), so a caller cannot forget it. Deleting a document
cascades to its chunks and postings; the statement triggers keep lexicon and lex_stats exact.
What a user names a document by is its `public_id` (`find_document`); the bigint key is the code's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from ragcore import store as dbmod
from ragcore.core import ADMIN_ROLE, Chunk, Document, Settings, parse_public_id, reader_members
from ragcore.documents import page_images
from ragcore.documents.ingest import stored_path, validate_roles
from ragcore.documents.titles import clean_title

log = logging.getLogger(__name__)

# `role` is a reader key (ragcore.core.reader_key): one role, or a user's roles joined by '+'.
_VISIBLE = "(%(role)s = 'admin' OR d.allowed_roles && string_to_array(%(role)s, '+'))"
_COLUMNS = """d.id, d.title, d.filename, d.sha256, d.page_count, d.allowed_roles, d.uploaded_by,
              d.created_at, (SELECT count(*) FROM chunks c WHERE c.document_id = d.id),
              d.size_bytes, d.skipped_pages, d.public_id::text, d.file_format, d.ocr_pages,
              d.oversized_pages, d.undrawable_pages, d.version_no, d.is_current, d.lineage::text, d.hidden_parts"""


class DocumentNotFound(LookupError):
    """No such document, or the role may not read it (the two are deliberately not told apart)."""

    def __init__(self, document_id: int | str) -> None:
        # No id in the message: a key would be a sequential number, and the caller knows what it asked for.
        super().__init__("Belge bulunamadı ya da bu rolün erişimi yok.")
        self.document_id = document_id


def can_read(doc: Document, role: str) -> bool:
    """Whether the reader (`role`: one role or a reader key of several) may read the document."""
    return role == ADMIN_ROLE or bool(set(reader_members(role)) & set(doc.allowed_roles))


def _document(row: tuple) -> Document:
    return Document(
        id=row[0], title=row[1], filename=row[2], sha256=row[3], page_count=row[4],
        allowed_roles=tuple(row[5]), uploaded_by=row[6], created_at=row[7], chunk_count=row[8],
        size_bytes=row[9], skipped_pages=tuple(row[10] or ()), public_id=row[11], file_format=row[12],
        ocr_pages=tuple(row[13] or ()), oversized_pages=tuple(row[14] or ()), undrawable_pages=tuple(row[15] or ()),
        version_no=row[16], is_current=row[17], lineage=row[18], hidden_parts=tuple(row[19] or ()),
    )


def list_documents(db: dbmod.Database, role: str) -> list[Document]:
    """Documents the role may read, newest first, with their chunk counts: each document's current
    version (its earlier ones: `versions.list_versions`)."""
    with db.connection() as conn:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM documents d WHERE d.is_current AND {_VISIBLE} "
            "ORDER BY d.created_at DESC, d.id DESC",
            {"role": role},
        ).fetchall()
    return [_document(row) for row in rows]


def get_document(db: dbmod.Database, document_id: int, role: str) -> Document | None:
    """The document if it exists and the role may read it, else None."""
    with db.connection() as conn:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM documents d WHERE d.id = %(id)s AND {_VISIBLE}",
            {"id": document_id, "role": role},
        ).fetchone()
    return _document(row) if row else None


def find_document(db: dbmod.Database, public_id: object, role: str) -> Document | None:
    """The document a user names by its public id, if it exists and the role may read it, else None.

    Text that is not a public id at all (a key like "17", a typo) is None as well, without a
    query: the same answer as an unknown id, so a caller learns nothing from the format.
    """
    wanted = parse_public_id(public_id)
    if wanted is None:
        return None
    with db.connection() as conn:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM documents d WHERE d.public_id = %(public_id)s::uuid AND {_VISIBLE}",
            {"public_id": wanted, "role": role},
        ).fetchone()
    return _document(row) if row else None


def readable_chunks(db: dbmod.Database, chunk_ids: Iterable[int], role: str) -> set[int]:
    """Those of `chunk_ids` that still exist and that `role` may read now (one query).

    The chat calls this on every run for the sources it still shows, so a deleted document,
    a document whose roles changed and a user whose role changed take effect on screen too.
    """
    ids = sorted(set(chunk_ids))
    if not ids:
        return set()
    with db.connection() as conn:
        rows = conn.execute(
            f"SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id "
            f"WHERE c.id = ANY(%(ids)s) AND {_VISIBLE}",
            {"ids": ids, "role": role},
        ).fetchall()
    return {row[0] for row in rows}


def readable_passages(db: dbmod.Database, chunk_ids: Iterable[int], role: str) -> dict[int, Chunk]:
    """Those of `chunk_ids` that still exist and that `role` may read now, with their text (one
    query): a reopened conversation stores only where its answers' sources were, and shows
    their passages as the chat did."""
    ids = sorted(set(chunk_ids))
    if not ids:
        return {}
    with db.connection() as conn:
        rows = conn.execute(
            f"""SELECT c.id, c.ordinal, c.text, c.page_start, c.page_end, c.article, c.char_start, c.char_end,
                       c.locator, c.ocr
                FROM chunks c JOIN documents d ON d.id = c.document_id
                WHERE c.id = ANY(%(ids)s) AND {_VISIBLE}""",
            {"ids": ids, "role": role},
        ).fetchall()
    return {row[0]: Chunk(*row[1:]) for row in rows}


def term_document_frequencies(db: dbmod.Database, terms: Iterable[str], role: str) -> tuple[int, dict[str, int]]:
    """How many chunks the role may read, and in how many of them each lexical term occurs.

    Counted over the role's readable chunks of current versions only (never the global lexicon),
    so what the UI derives from it (which words it bolds) depends on nothing the role cannot read.
    `terms` are `ragcore.core.text.lexical_tokens` forms.
    """
    wanted = sorted(set(terms))
    with db.connection() as conn:
        readable = conn.execute(
            f"SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.is_current AND {_VISIBLE}",
            {"role": role},
        ).fetchone()[0]
        if not wanted or not readable:
            return readable, {}
        rows = conn.execute(
            f"""SELECT p.term, count(*) FROM postings p
                JOIN chunks c ON c.id = p.chunk_id JOIN documents d ON d.id = c.document_id
                WHERE p.term = ANY(%(terms)s) AND d.is_current AND {_VISIBLE} GROUP BY p.term""",
            {"terms": wanted, "role": role},
        ).fetchall()
    return readable, {term: count for term, count in rows}


def document_chunks(db: dbmod.Database, document_id: int, role: str) -> list[Chunk]:
    """The document's chunks in order; DocumentNotFound if the role may not read it."""
    if get_document(db, document_id, role) is None:
        raise DocumentNotFound(document_id)
    with db.connection() as conn:
        rows = conn.execute(
            """SELECT ordinal, text, page_start, page_end, article, char_start, char_end, locator, ocr
               FROM chunks WHERE document_id = %s ORDER BY ordinal""",
            (document_id,),
        ).fetchall()
    return [Chunk(*row) for row in rows]


def delete_document(db: dbmod.Database, settings: Settings, document_id: int) -> Document:
    """Delete the document with every version of it (chunks and postings cascade), then their
    stored files and page images. Admin-only: check before."""
    doc = get_document(db, document_id, "admin")
    if doc is None:
        raise DocumentNotFound(document_id)
    with db.connection() as conn:
        gone = conn.execute("DELETE FROM documents WHERE lineage = %s::uuid RETURNING sha256, file_format",
                            (doc.lineage,)).fetchall()
    for sha256, file_format in gone:
        stored_path(settings, sha256, file_format).unlink(missing_ok=True)
        page_images.remove_cache(settings, sha256)
    log.info("deleted document %d (%s) with %d version(s)", document_id, doc.title, len(gone))
    return doc


def set_document_roles(db: dbmod.Database, document_id: int, roles: Iterable[str]) -> Document:
    """Change who may read a document; a trigger copies the roles onto its chunks."""
    allowed = validate_roles(db, roles)
    with db.connection() as conn:
        updated = conn.execute(
            "UPDATE documents SET allowed_roles = %s WHERE id = %s RETURNING id", (allowed, document_id)
        ).fetchone()
    if updated is None:
        raise DocumentNotFound(document_id)
    return get_document(db, document_id, "admin")  # type: ignore[return-value]


def set_document_title(db: dbmod.Database, document_id: int, title: str) -> Document:
    """Rename a document (admin-only: check before); the title is validated by `titles.clean_title`.

    Raises `TitleError` (Turkish message) for an empty or too long title, DocumentNotFound when
    the document is gone. Citations already on screen keep the old title until the next answer.
    """
    cleaned = clean_title(title)
    with db.connection() as conn:
        updated = conn.execute(
            "UPDATE documents SET title = %s WHERE id = %s RETURNING id", (cleaned, document_id)
        ).fetchone()
    if updated is None:
        raise DocumentNotFound(document_id)
    log.info("document %d renamed to %r", document_id, cleaned)
    return get_document(db, document_id, "admin")  # type: ignore[return-value]


def document_file(settings: Settings, doc: Document, role: str) -> Path | None:
    """Path of the stored file (PDF or .docx) for download, only if the role may read it and the file exists."""
    if not can_read(doc, role):
        return None
    path = stored_path(settings, doc.sha256, doc.file_format)
    return path if path.is_file() else None
