"""Re-embedding: every stored chunk gets a vector of the configured model, and (with
DENSE_WINDOWS on) its sentence windows (`ragcore.documents.windows`) are computed again and
embedded too, and the index records that model with or without windows, in one transaction (CLI
`reembed`, the re-embed job). An index built before windows existed gets them this way; one
built with them loses them when DENSE_WINDOWS is off (later uploads follow the record).

Uploads check the recorded model again inside their own transaction under a lock this one
conflicts with (`ragcore.documents.ingest`), so none can store vectors of the old model after it.
"""

from __future__ import annotations

import logging

from ragcore import store as dbmod
from ragcore.documents.ingest import Progress, embed_passages
from ragcore.documents.windows import chunk_windows
from ragcore.embed import Embedder

log = logging.getLogger(__name__)


def reembed_all(db: dbmod.Database, embedder: Embedder, progress: Progress | None = None, *,
                windows: bool = True) -> int:
    """Re-embed every chunk (and its windows when `windows`: `Settings.dense_windows`) with
    `embedder` and record its model and the windows choice, all in one transaction.

    Writers are locked out while the vectors are computed (readers keep the old index), so no
    chunk can be added with a vector of the old model in between. Returns the chunk count.
    """
    report: Progress = progress or (lambda stage, done, total: None)
    with db.connection() as conn:
        conn.execute("LOCK TABLE chunks IN EXCLUSIVE MODE")
        rows = conn.execute("SELECT id, text, article FROM chunks ORDER BY id").fetchall()
        spans = [window for index, (_, text, article) in enumerate(rows)
                 for window in chunk_windows(text, article, index)] if windows else []
        vectors = embed_passages(embedder, [text for _, text, _ in rows] + [w.text for w in spans], report)
        total = len(rows)
        dbmod.replace_embedding_space(conn, embedder.name, embedder.dim, windows=windows)
        conn.execute(f"CREATE TEMP TABLE reembed (id bigint PRIMARY KEY, embedding vector({int(embedder.dim)})) "
                     "ON COMMIT DROP")
        with conn.cursor().copy("COPY reembed (id, embedding) FROM STDIN") as copy:
            for (chunk_id, _, _), vector in zip(rows, vectors[:total], strict=True):
                copy.write_row((chunk_id, vector))
        conn.execute("UPDATE chunks c SET embedding = r.embedding FROM reembed r WHERE c.id = r.id")
        with conn.cursor().copy(
                "COPY chunk_windows (chunk_id, position, char_start, char_end, embedding) FROM STDIN") as copy:
            for window, vector in zip(spans, vectors[total:], strict=True):
                copy.write_row((rows[window.chunk][0], window.position, window.char_start, window.char_end, vector))
        report("store", 1, 1)
    log.info("re-embedded %d chunks and %d windows with %s (%d-d)", total, len(spans), embedder.name, embedder.dim)
    return total
