"""Re-indexing the lexical leg of documents stored before their lexical text changed.

A document's postings and its chunks' BM25 lengths are built at upload from the chunks'
lexical texts (`chunking.lexical_texts`); `documents.lexical_version` records which definition
built them (migration 016, `ingest.LEXICAL_VERSION`). A document of an older version gets them
again here, from its stored chunks, by ingest's own posting writer: in one transaction per
document, holding the document's row so that a concurrent role change or deletion waits, its
postings are deleted, its chunks' lengths updated and its postings written again. The
statistics triggers (migration 003) count each step, so every role's statistics stay exact;
a reader sees the document's old postings or its new ones, never a mix.

Run where the public database is opened for the product: the app's start, the API's first
connection and every command line call (one small query once every document is current).
"""

from __future__ import annotations

import logging

import psycopg

from ragcore import store as dbmod
from ragcore.core import lexical_tokens
from ragcore.documents.chunking import lexical_texts
from ragcore.documents.ingest import LEXICAL_VERSION, Progress, insert_postings

log = logging.getLogger(__name__)


def stale_documents(conn: psycopg.Connection) -> list[int]:
    """Ids of the documents whose postings predate the current lexical text, oldest first."""
    rows = conn.execute("SELECT id FROM documents WHERE lexical_version < %s ORDER BY id", (LEXICAL_VERSION,))
    return [row[0] for row in rows]


def reindex_document(conn: psycopg.Connection, document_id: int) -> bool:
    """Inside the caller's transaction: rebuild one document's postings and lengths from its
    chunks' lexical texts. False when it is gone or already current (another process did it)."""
    row = conn.execute("SELECT lexical_version FROM documents WHERE id = %s FOR UPDATE",
                       (document_id,)).fetchone()
    if row is None or row[0] >= LEXICAL_VERSION:
        return False
    chunks = conn.execute("SELECT id, text, article, lex_length FROM chunks WHERE document_id = %s ORDER BY ordinal",
                          (document_id,)).fetchall()
    ids = [chunk[0] for chunk in chunks]
    texts = lexical_texts([chunk[1] for chunk in chunks], [chunk[2] for chunk in chunks])
    lengths = [len(lexical_tokens(text)) for text in texts]
    conn.execute("DELETE FROM postings WHERE chunk_id = ANY(%s)", (ids,))
    conn.execute(
        """UPDATE chunks c SET lex_length = x.lex_length
           FROM unnest(%s::bigint[], %s::integer[]) AS x(id, lex_length)
           WHERE c.id = x.id AND c.lex_length <> x.lex_length""",
        (ids, lengths),
    )
    insert_postings(conn, ids, texts)
    conn.execute("UPDATE documents SET lexical_version = %s WHERE id = %s", (LEXICAL_VERSION, document_id))
    return True


def reindex_stale(db: dbmod.Database, progress: Progress | None = None) -> int:
    """Re-index every document of an older lexical version, one transaction each; returns how many."""
    report: Progress = progress or (lambda stage, done, total: None)
    with db.connection() as conn:
        stale = stale_documents(conn)
    done = 0
    for n, document_id in enumerate(stale):
        with db.connection() as conn:
            done += reindex_document(conn, document_id)
        report("store", n + 1, len(stale))
    if done:
        log.info("re-indexed the postings of %d documents (lexical version %d)", done, LEXICAL_VERSION)
    return done
