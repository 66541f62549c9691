"""The embedding space: which model's vectors chunks.embedding (and chunk_windows.embedding)
holds, whether the index was built with sentence windows, and the HNSW indexes.

One HNSW index for admin (every chunk) and one partial index per other role, on chunks and on
their windows, defined and created with the per-role posting indexes in `role_indexes`.

An index records `windows`, and that record, not the setting, governs every upload: built with
windows, every chunk stored has its windows; built without, none has (retrieval would otherwise
score some documents by their windows and others not). DENSE_WINDOWS decides the record when the
index is built — the first start or upload (`ensure_embedding_space`) and every `reembed`
(`replace_embedding_space`) — and, at question time, whether the dense leg uses the windows. A
setting changed later takes effect on uploads after the next `reembed`; until then a warning in
the log says so. An index built before windows existed records none.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from ragcore.store.errors import DatabaseError
from ragcore.store.role_indexes import create_role_indexes

if TYPE_CHECKING:
    from ragcore.store.database import Database

log = logging.getLogger(__name__)


REEMBED_COMMAND = "python -m ragcore reembed"


class EmbeddingModelMismatch(DatabaseError):
    """The index was built with another embedding model than the configured one (English, with
    the command that re-embeds; `recorded` and `configured` name the two models)."""

    def __init__(self, recorded: EmbeddingSpace, model: str, dim: int) -> None:
        super().__init__(
            f"The document index was built with embedding model {recorded.model!r} ({recorded.dim}-d), "
            f"but the configured model is {model!r} ({dim}-d). Either configure {recorded.model!r} again "
            f"or re-embed every chunk with the new model: `{REEMBED_COMMAND}`."
        )
        self.recorded = recorded.model
        self.configured = model


@dataclass(frozen=True)
class EmbeddingSpace:
    model: str
    dim: int
    # The chunks' sentence windows are stored with them (migration 012). Not part of equality: two
    # records of one model are the same vector space; writers compare `windows` themselves.
    windows: bool = field(default=False, compare=False)

    def same_model(self, model: str, dim: int) -> bool:
        return (self.model, self.dim) == (model, dim)


_SPACE_SQL = "SELECT model, dim, windows FROM embedding_index"


def current_embedding_space(db: Database) -> EmbeddingSpace | None:
    with db.connection() as conn:
        row = conn.execute(_SPACE_SQL).fetchone()
    return EmbeddingSpace(*row) if row else None


def ensure_embedding_space(db: Database, model: str, dim: int, *, windows: bool = True) -> EmbeddingSpace:
    """Make chunks.embedding and chunk_windows.embedding vector(dim) columns with their HNSW
    indexes, or refuse a different model.

    The first start records the model, and whether the index has sentence windows (`windows`:
    the caller's `Settings.dense_windows`); a later start with another model fails with a message
    naming both and the command that re-embeds, instead of mixing vector spaces. An existing
    index keeps its windows record (see the module docstring). An index built before the per-role
    HNSW indexes (or the windows) existed gets the missing indexes and an empty window column here
    (once; it takes a while on a large corpus); it records no windows until `reembed` computes them.
    """
    with db.connection() as conn:
        conn.execute("LOCK TABLE embedding_index IN EXCLUSIVE MODE")
        row = conn.execute(_SPACE_SQL).fetchone()
        if row is None:
            _create_embedding_columns(conn, dim)
            conn.execute("INSERT INTO embedding_index (model, dim, windows) VALUES (%s, %s, %s)", (model, dim, windows))
            return EmbeddingSpace(model, dim, windows=windows)
        existing = EmbeddingSpace(*row)
        if not existing.same_model(model, dim):
            raise EmbeddingModelMismatch(existing, model, dim)
        if not _has_window_column(conn):
            _add_window_column(conn, dim)
        created = create_role_indexes(conn)
    if created:
        log.info("created per-role indexes %s in namespace %s", ", ".join(created), db.namespace)
    if existing.windows != windows:
        log.warning("DENSE_WINDOWS is %s but the document index in namespace %s was built %s sentence windows; "
                    "uploads follow the index until `python -m ragcore reembed` rebuilds it with the setting",
                    "on" if windows else "off", db.namespace, "with" if existing.windows else "without")
    return existing


def lock_embedding_space(conn: psycopg.Connection) -> EmbeddingSpace | None:
    """Inside a writer's transaction: the recorded embedding space, held steady until commit.

    ROW EXCLUSIVE on chunks conflicts with the EXCLUSIVE lock `ingest.reembed_all` takes first:
    a re-embed that is running makes this wait until it has committed (and the model read next
    is the new one), and a re-embed that starts later waits for this transaction and then
    re-embeds its chunks too. The caller compares the result with the model it embedded with.
    """
    conn.execute("LOCK TABLE chunks IN ROW EXCLUSIVE MODE")
    row = conn.execute(_SPACE_SQL).fetchone()
    return EmbeddingSpace(*row) if row else None


def _has_window_column(conn: psycopg.Connection) -> bool:
    return conn.execute(
        "SELECT EXISTS (SELECT FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'chunk_windows' AND column_name = 'embedding')").fetchone()[0]


def _add_window_column(conn: psycopg.Connection, dim: int) -> None:
    conn.execute(sql.SQL("ALTER TABLE chunk_windows ADD COLUMN embedding vector({})").format(sql.Literal(dim)))


def _create_embedding_columns(conn: psycopg.Connection, dim: int) -> None:
    """New vector columns for a new index: chunks', and the windows' (whose old rows, if an
    earlier index left any, belong to no index any more)."""
    conn.execute(sql.SQL("ALTER TABLE chunks ADD COLUMN embedding vector({})").format(sql.Literal(dim)))
    conn.execute("DELETE FROM chunk_windows")
    conn.execute("ALTER TABLE chunk_windows DROP COLUMN IF EXISTS embedding")  # drops its indexes too
    _add_window_column(conn, dim)
    create_role_indexes(conn)


def replace_embedding_space(conn: psycopg.Connection, model: str, dim: int, *, windows: bool = True) -> None:
    """Inside the caller's transaction: drop the old vectors, windows and indexes, create new
    columns and record the model, with or without windows (re-embed stores every chunk's
    windows next when `windows`)."""
    conn.execute("ALTER TABLE chunks DROP COLUMN IF EXISTS embedding")  # drops its indexes too
    _create_embedding_columns(conn, dim)
    conn.execute("DELETE FROM embedding_index")
    conn.execute("INSERT INTO embedding_index (model, dim, windows) VALUES (%s, %s, %s)", (model, dim, windows))
