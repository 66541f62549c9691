"""The embedding space: which model's vectors chunks.embedding holds, and its HNSW indexes.

One HNSW index for admin (every chunk) and one partial index per other role, defined and
created with the per-role posting indexes in `role_indexes`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from ragcore.store.errors import DatabaseError
from ragcore.store.role_indexes import create_role_indexes

if TYPE_CHECKING:
    from ragcore.store.database import Database

log = logging.getLogger(__name__)


class EmbeddingModelMismatch(DatabaseError):
    """The index was built with another embedding model than the configured one."""


@dataclass(frozen=True)
class EmbeddingSpace:
    model: str
    dim: int


def current_embedding_space(db: Database) -> EmbeddingSpace | None:
    with db.connection() as conn:
        row = conn.execute("SELECT model, dim FROM embedding_index").fetchone()
    return EmbeddingSpace(*row) if row else None


def ensure_embedding_space(db: Database, model: str, dim: int) -> EmbeddingSpace:
    """Make chunks.embedding a vector(dim) with its HNSW index, or refuse a different model.

    The first start records the model; a later start with another model fails with a message
    naming both and the command that re-embeds, instead of mixing vector spaces. An index
    built before the per-role HNSW indexes existed gets them here (once; it takes a while on
    a large corpus).
    """
    with db.connection() as conn:
        conn.execute("LOCK TABLE embedding_index IN EXCLUSIVE MODE")
        row = conn.execute("SELECT model, dim FROM embedding_index").fetchone()
        if row is None:
            _create_embedding_column(conn, dim)
            conn.execute("INSERT INTO embedding_index (model, dim) VALUES (%s, %s)", (model, dim))
            return EmbeddingSpace(model, dim)
        existing = EmbeddingSpace(*row)
        if existing != EmbeddingSpace(model, dim):
            raise EmbeddingModelMismatch(
                f"The document index was built with embedding model {existing.model!r} ({existing.dim}-d), "
                f"but the configured model is {model!r} ({dim}-d). Either configure {existing.model!r} again "
                f"or re-embed every chunk with the new model: `python -m ragcore reembed`."
            )
        created = create_role_indexes(conn)
    if created:
        log.info("created per-role indexes %s in namespace %s", ", ".join(created), db.namespace)
    return existing


def lock_embedding_space(conn: psycopg.Connection) -> EmbeddingSpace | None:
    """Inside a writer's transaction: the recorded embedding space, held steady until commit.

    ROW EXCLUSIVE on chunks conflicts with the EXCLUSIVE lock `ingest.reembed_all` takes first:
    a re-embed that is running makes this wait until it has committed (and the model read next
    is the new one), and a re-embed that starts later waits for this transaction and then
    re-embeds its chunks too. The caller compares the result with the model it embedded with.
    """
    conn.execute("LOCK TABLE chunks IN ROW EXCLUSIVE MODE")
    row = conn.execute("SELECT model, dim FROM embedding_index").fetchone()
    return EmbeddingSpace(*row) if row else None


def _create_embedding_column(conn: psycopg.Connection, dim: int) -> None:
    conn.execute(sql.SQL("ALTER TABLE chunks ADD COLUMN embedding vector({})").format(sql.Literal(dim)))
    create_role_indexes(conn)


def replace_embedding_space(conn: psycopg.Connection, model: str, dim: int) -> None:
    """Inside the caller's transaction: drop the old vectors and index, create new ones (re-embed)."""
    conn.execute("ALTER TABLE chunks DROP COLUMN IF EXISTS embedding")  # drops its indexes too
    _create_embedding_column(conn, dim)
    conn.execute("DELETE FROM embedding_index")
    conn.execute("INSERT INTO embedding_index (model, dim) VALUES (%s, %s)", (model, dim))
