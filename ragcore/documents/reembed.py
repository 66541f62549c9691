"""Re-embedding: every stored chunk gets a vector of the configured model, and the index records
that model, in one transaction (CLI `reembed`, the re-embed job).

Uploads check the recorded model again inside their own transaction under a lock this one
conflicts with (`ragcore.documents.ingest`), so none can store vectors of the old model after it.
"""

from __future__ import annotations

import logging

import numpy as np

from ragcore import store as dbmod
from ragcore.documents.ingest import EMBED_BATCH, Progress
from ragcore.embed import Embedder

log = logging.getLogger(__name__)


def reembed_all(db: dbmod.Database, embedder: Embedder, progress: Progress | None = None) -> int:
    """Re-embed every chunk with `embedder` and record its model, all in one transaction.

    Writers are locked out while the vectors are computed (readers keep the old index), so no
    chunk can be added with a vector of the old model in between. Returns the chunk count.
    """
    report: Progress = progress or (lambda stage, done, total: None)
    with db.connection() as conn:
        conn.execute("LOCK TABLE chunks IN EXCLUSIVE MODE")
        rows = conn.execute("SELECT id, text FROM chunks ORDER BY id").fetchall()
        total = len(rows)
        vectors = np.zeros((total, embedder.dim), dtype=np.float32)
        report("embed", 0, total)
        for start in range(0, total, EMBED_BATCH):
            batch = rows[start : start + EMBED_BATCH]
            vectors[start : start + len(batch)] = embedder.embed_passages([text for _, text in batch])
            report("embed", start + len(batch), total)
        dbmod.replace_embedding_space(conn, embedder.name, embedder.dim)
        conn.execute(f"CREATE TEMP TABLE reembed (id bigint PRIMARY KEY, embedding vector({int(embedder.dim)})) "
                     "ON COMMIT DROP")
        with conn.cursor().copy("COPY reembed (id, embedding) FROM STDIN") as copy:
            for (chunk_id, _), vector in zip(rows, vectors, strict=True):
                copy.write_row((chunk_id, vector))
        conn.execute("UPDATE chunks c SET embedding = r.embedding FROM reembed r WHERE c.id = r.id")
        report("store", 1, 1)
    log.info("re-embedded %d chunks with %s (%d-d)", total, embedder.name, embedder.dim)
    return total
