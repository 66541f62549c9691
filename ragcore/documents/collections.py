"""Collections: admin-defined groups of documents a question can be restricted to (issue 39.2).

A document belongs to any number of collections (migration 025). Collections are names, not
permissions: what a user sees of one is only what their roles read anyway. A collection is
listed to a reader only when it holds a document they may read, and its count is the count of
those documents, so neither its listing nor its size says anything about documents they cannot
read; one that holds none of theirs is, to them, the same as a missing one (`find_collection`
is None). Admin sees every collection, empty ones too. Users and the API name a collection by
its `public_id`; the bigint key stays inside.

Restricting a question is a filter inside the retrieval SQL (`ragcore.retrieval.hybrid`,
`scope_predicate`), never a second permission check: `Scope` only says which documents.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg

from ragcore import store as dbmod
from ragcore.core import parse_public_id
from ragcore.documents.catalog import DocumentNotFound

log = logging.getLogger(__name__)

NAME_MAX_CHARS = 60
DESCRIPTION_MAX_CHARS = 300

# Readable by a reader holding `roles` (a text[]): admin reads everything, anyone else the
# documents whose allowed_roles share a role with theirs. Written for several roles per user
# (issue 38) so that it needs no change when `User.roles` holds more than one.
# Only a current version counts (migration 024: a retired version is never retrieved); memberships
# follow the lineage to its current row (`ingest.carry_collections`).
_READABLE = "(d.is_current AND ('admin' = ANY(%(roles)s::text[]) OR d.allowed_roles && %(roles)s::text[]))"
_COLUMNS = f"""k.id, k.public_id::text, k.name, k.description, k.created_at,
    (SELECT count(*) FROM collection_documents m JOIN documents d ON d.id = m.document_id
     WHERE m.collection_id = k.id AND {_READABLE})"""


class CollectionError(ValueError):
    """A collection's name or description cannot be stored as given; the message is Turkish."""


class CollectionNotFound(LookupError):
    """No such collection, or none of its documents is readable (deliberately not told apart)."""

    def __init__(self) -> None:
        super().__init__("Koleksiyon bulunamadı ya da içinde rolünüzün okuyabildiği belge yok.")


@dataclass(frozen=True)
class Collection:
    """A collection as one reader sees it: `documents` counts only the documents they may read."""

    id: int
    public_id: str
    name: str
    description: str
    created_at: datetime
    documents: int


@dataclass(frozen=True)
class Scope:
    """Where a question is searched: every readable document (both None), one collection, or one
    document (public ids). The question's own, never the user's: each question brings its scope."""

    collection: str | None = None
    document: str | None = None

    def __post_init__(self) -> None:
        if self.collection is not None and self.document is not None:
            raise CollectionError("Soru ya bir koleksiyonla ya da bir belgeyle sınırlanır, ikisiyle birden değil.")

    @property
    def everything(self) -> bool:
        return self.collection is None and self.document is None


EVERYTHING = Scope()


def _collection(row: tuple) -> Collection:
    return Collection(id=row[0], public_id=row[1], name=row[2], description=row[3], created_at=row[4],
                      documents=int(row[5]))


def clean_name(name: object) -> str:
    """The name as stored: surrounding spaces and runs of spaces removed, 1 … NAME_MAX_CHARS characters."""
    cleaned = " ".join(str(name or "").split())
    if not cleaned:
        raise CollectionError("Koleksiyon adı boş olamaz. Bir ad yazın (ör. “Talimatlar”).")
    if len(cleaned) > NAME_MAX_CHARS:
        raise CollectionError(f"Koleksiyon adı en fazla {NAME_MAX_CHARS} karakter olabilir (şu an {len(cleaned)}). "
                              "Daha kısa bir ad yazın.")
    return cleaned


def clean_description(description: object) -> str:
    cleaned = " ".join(str(description or "").split())
    if len(cleaned) > DESCRIPTION_MAX_CHARS:
        raise CollectionError(f"Açıklama en fazla {DESCRIPTION_MAX_CHARS} karakter olabilir "
                              f"(şu an {len(cleaned)}). Kısaltın.")
    return cleaned


def _duplicate(name: str) -> CollectionError:
    return CollectionError(f"Bu adda bir koleksiyon zaten var: {name}. Başka bir ad seçin.")


def create_collection(db: dbmod.Database, name: str, description: str = "", *,
                      created_by: str | None = None) -> Collection:
    """A new, empty collection (admin-only: check before). CollectionError for a bad or taken name."""
    cleaned, about = clean_name(name), clean_description(description)
    try:
        with db.connection() as conn:
            key = conn.execute("INSERT INTO collections (name, description, created_by) VALUES (%s, %s, %s) "
                               "RETURNING public_id::text", (cleaned, about, created_by)).fetchone()[0]
    except psycopg.errors.UniqueViolation:
        raise _duplicate(cleaned) from None
    log.info("collection %r created by %s", cleaned, created_by)
    return find_collection(db, key, ("admin",))  # type: ignore[return-value]


def update_collection(db: dbmod.Database, public_id: str, name: str, description: str | None = None) -> Collection:
    """Rename a collection (and change its description when given); admin-only: check before."""
    cleaned = clean_name(name)
    about = None if description is None else clean_description(description)
    wanted = parse_public_id(public_id)
    if wanted is None:
        raise CollectionNotFound()
    try:
        with db.connection() as conn:
            row = conn.execute("UPDATE collections SET name = %s, description = coalesce(%s, description) "
                               "WHERE public_id = %s::uuid RETURNING id", (cleaned, about, wanted)).fetchone()
    except psycopg.errors.UniqueViolation:
        raise _duplicate(cleaned) from None
    if row is None:
        raise CollectionNotFound()
    return find_collection(db, wanted, ("admin",))  # type: ignore[return-value]


def delete_collection(db: dbmod.Database, public_id: str) -> None:
    """Delete a collection and its memberships (the documents stay); admin-only: check before."""
    wanted = parse_public_id(public_id)
    with db.connection() as conn:
        row = None if wanted is None else conn.execute(
            "DELETE FROM collections WHERE public_id = %s::uuid RETURNING name", (wanted,)).fetchone()
    if row is None:
        raise CollectionNotFound()
    log.info("collection %r deleted", row[0])


def set_members(db: dbmod.Database, public_id: str, document_ids: Iterable[int]) -> Collection:
    """Make the collection hold exactly these documents (database keys); admin-only: check before.
    Keys of documents that no longer exist are skipped (deleted meanwhile)."""
    wanted = parse_public_id(public_id)
    ids = sorted(set(document_ids))
    with db.connection() as conn:
        row = None if wanted is None else conn.execute(
            "SELECT id FROM collections WHERE public_id = %s::uuid FOR UPDATE", (wanted,)).fetchone()
        if row is None:
            raise CollectionNotFound()
        conn.execute("DELETE FROM collection_documents WHERE collection_id = %s AND NOT (document_id = ANY(%s))",
                     (row[0], ids))
        conn.execute("INSERT INTO collection_documents (collection_id, document_id) "
                     "SELECT %s, d.id FROM documents d WHERE d.id = ANY(%s) ON CONFLICT DO NOTHING", (row[0], ids))
    return find_collection(db, wanted, ("admin",))  # type: ignore[return-value]


def set_document_collections(db: dbmod.Database, document_id: int, public_ids: Iterable[str]) -> None:
    """Make a document belong to exactly these collections; admin-only: check before."""
    wanted = sorted({p for p in map(parse_public_id, public_ids) if p is not None})
    with db.connection() as conn:
        conn.execute("DELETE FROM collection_documents m USING collections k WHERE m.collection_id = k.id "
                     "AND m.document_id = %s AND NOT (k.public_id::text = ANY(%s))", (document_id, wanted))
        conn.execute("INSERT INTO collection_documents (collection_id, document_id) "
                     "SELECT k.id, d.id FROM collections k JOIN documents d ON d.id = %s "
                     "WHERE k.public_id::text = ANY(%s) ON CONFLICT DO NOTHING", (document_id, wanted))


def list_collections(db: dbmod.Database, roles: Sequence[str]) -> list[Collection]:
    """The collections the reader can use, by name: admin every one, anyone else those holding a
    document they may read, each with the count of those documents only."""
    with db.connection() as conn:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM collections k ORDER BY lower(k.name), k.id",
                            {"roles": list(roles)}).fetchall()
    return [c for c in map(_collection, rows) if c.documents or "admin" in roles]


def find_collection(db: dbmod.Database, public_id: object, roles: Sequence[str]) -> Collection | None:
    """The collection named by its public id if the reader can use it (see `list_collections`), else None."""
    wanted = parse_public_id(public_id)
    if wanted is None:
        return None
    with db.connection() as conn:
        row = conn.execute(f"SELECT {_COLUMNS} FROM collections k WHERE k.public_id = %(id)s::uuid",
                           {"id": wanted, "roles": list(roles)}).fetchone()
    found = None if row is None else _collection(row)
    return found if found and (found.documents or "admin" in roles) else None


def collection_document_ids(db: dbmod.Database, public_id: str, roles: Sequence[str]) -> list[int]:
    """Keys of the collection's documents the reader may read, in order (the documents page's ticks)."""
    wanted = parse_public_id(public_id)
    if wanted is None:
        return []
    with db.connection() as conn:
        rows = conn.execute(
            f"SELECT d.id FROM collection_documents m JOIN collections k ON k.id = m.collection_id "
            f"JOIN documents d ON d.id = m.document_id WHERE k.public_id = %(id)s::uuid AND {_READABLE} "
            f"ORDER BY d.id", {"id": wanted, "roles": list(roles)}).fetchall()
    return [row[0] for row in rows]


def document_collection_ids(db: dbmod.Database, document_id: int) -> list[str]:
    """Public ids of the collections holding the document (admin's document card)."""
    with db.connection() as conn:
        rows = conn.execute("SELECT k.public_id::text FROM collection_documents m JOIN collections k "
                            "ON k.id = m.collection_id WHERE m.document_id = %s ORDER BY lower(k.name)",
                            (document_id,)).fetchall()
    return [row[0] for row in rows]


def checked_scope(db: dbmod.Database, roles: Sequence[str], *, collection: str | None = None,
                  document: str | None = None) -> Scope:
    """The question's scope after checking the reader may use it: CollectionError when both are
    named, CollectionNotFound / DocumentNotFound for a missing one and an unreadable one alike
    (empty text: no restriction). The retrieval applies the scope again inside its SQL, with the
    role predicate, so a document revoked after this check still yields nothing."""
    scope = Scope(collection or None, document or None)
    if scope.collection is not None and find_collection(db, scope.collection, roles) is None:
        raise CollectionNotFound()
    if scope.document is not None and not _readable_document(db, scope.document, roles):
        raise DocumentNotFound(scope.document)
    return scope


def _readable_document(db: dbmod.Database, public_id: str, roles: Sequence[str]) -> bool:
    wanted = parse_public_id(public_id)
    if wanted is None:
        return False
    with db.connection() as conn:
        return conn.execute(f"SELECT EXISTS (SELECT FROM documents d WHERE d.public_id = %(id)s::uuid AND {_READABLE})",
                            {"id": wanted, "roles": list(roles)}).fetchone()[0]
