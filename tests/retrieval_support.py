"""Helpers for the retrieval/answer tests: the embedded embedder and direct chunk inserts.

Direct inserts write exactly what ingestion writes (chunks with lex_length, postings with tf,
the embedding, the sentence windows with theirs), so the SQL legs can be tested without
depending on the PDF pipeline.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from hashlib import sha256

from ragcore import store as dbmod
from ragcore.core import Settings, lexical_tokens
from ragcore.documents import chunk_windows, ingest_pdf
from ragcore.embed import make_embedder
from tests.conftest import reset_tables


def make_test_embedder():
    """The app's own embedded embedder (USE), as `EMBED_BACKEND=use` makes it."""
    return make_embedder(Settings(embed_backend="use"))


@dataclass(frozen=True)
class DocSpec:
    title: str
    roles: tuple[str, ...]
    chunks: tuple[tuple[str, int, str | None], ...]  # (text, page, article)


def insert_document(database: dbmod.Database, embedder, spec: DocSpec) -> int:
    """Insert a document with its chunks, embeddings and postings; return the document id."""
    dbmod.ensure_embedding_space(database, embedder.name, embedder.dim)
    texts = [text for text, _, _ in spec.chunks]
    vectors = embedder.embed_passages(texts) if texts else []
    digest = sha256(("|".join(texts) + spec.title).encode()).hexdigest()
    with database.connection() as conn:
        doc_id = conn.execute(
            "INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
            "VALUES (%s, %s, %s, 1, %s, %s) RETURNING id",
            (spec.title, spec.title if spec.title.endswith(".pdf") else f"{spec.title}.pdf", digest, max([p for _, p, _ in spec.chunks] or [1]), list(spec.roles)),
        ).fetchone()[0]
        for ordinal, ((text, page, article), vector) in enumerate(zip(spec.chunks, vectors, strict=True)):
            tokens = lexical_tokens(text)
            chunk_id = conn.execute(
                "INSERT INTO chunks (document_id, ordinal, page_start, page_end, article, text, char_start,"
                " char_end, lex_length, allowed_roles, embedding) VALUES (%s,%s,%s,%s,%s,%s,0,%s,%s,%s,%s)"
                " RETURNING id",
                (doc_id, ordinal, page, page, article, text, len(text), len(tokens), list(spec.roles), vector),
            ).fetchone()[0]
            windows = chunk_windows(text, article)
            if windows:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO chunk_windows (chunk_id, position, char_start, char_end, embedding) "
                        "VALUES (%s, %s, %s, %s, %s)",
                        [(chunk_id, w.position, w.char_start, w.char_end, v)
                         for w, v in zip(windows, embedder.embed_passages([w.text for w in windows]), strict=True)])
            counts = Counter(tokens)
            if counts:
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO postings (term, chunk_id, tf) VALUES (%s, %s, %s)",
                        [(term, chunk_id, tf) for term, tf in counts.items()],
                    )
    return doc_id


def ingest_law(database: dbmod.Database, settings, embedder, path, roles: Sequence[str]) -> int:
    """Ingest a real PDF the way an upload does."""
    result = ingest_pdf(database, settings, embedder, path.read_bytes(), filename=path.name, roles=list(roles))
    return result.document_id


def bit_of(database: dbmod.Database, reader: str) -> int:
    """The reader's bit in role_bits (migration 021: a role, or a set of roles a user holds)."""
    with database.connection() as conn:
        return dbmod.reader_bit(conn, reader)


def hnsw_index(database: dbmod.Database, reader: str, table: str = "chunks") -> str:
    """The HNSW index the reader's dense leg reads: the global one for admin, else its partial one."""
    indexes = dbmod.embedding_indexes if table == "chunks" else dbmod.window_embedding_indexes
    if reader == "admin":
        return f"{table}_embedding_hnsw"
    return next(name for name in indexes([bit_of(database, reader)]) if name != f"{table}_embedding_hnsw")


def clean(database: dbmod.Database) -> None:
    """The `db` fixture's clean state (`tests.conftest.reset_tables`), for module-scoped corpora."""
    reset_tables(database)
