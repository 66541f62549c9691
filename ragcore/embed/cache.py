"""One content-addressed cache of passage vectors in PostgreSQL, shared by ingest, reembed and the lab.

A vector is looked up by (recorded index name, "p" for a passage, sha256 of the text), so the
same chunk text is embedded once per model, whichever process, worker or machine meets it
first. The cache lives in the database every worker already shares (table
`public.embedding_cache`, migration 006) rather than in files: PostgreSQL makes concurrent
writers safe, and the rows need no cleanup of their own (they are small and never wrong — a changed text has another key). Only admins'
uploads and re-embedding write passages, so the table grows with the documents, not with use.

Questions are not cached here (issue 21). A shared question cache made a text that another user
had asked come back faster than a fresh one (the retrieval time told which texts others had
asked), and it kept every search text for good (a row per distinct search). Nor is there a
per-process memory cache of question vectors: one costs e5 ≈ 18 ms and USE ≈ 3 ms
(median, bench/results/embedders.md), small beside the rest of an answer, and no cache is the
one that cannot leak between users or grow. So a question is embedded by the model on every
call, and no user's timing depends on what others asked (measured by bench/question_timing.py).
The lab's own sweeps and calibration scripts, which embed the same thousands of fixed dev
questions on every run, pass `cache_questions=True` (rows of kind "q"); no user path does, and a
`CachedEmbedder` without it never reads those rows.

Writes are `INSERT … ON CONFLICT DO NOTHING` with the keys in a fixed order, so two writers of
overlapping batches neither fail nor deadlock. A cache that cannot be read or written raises
`EmbeddingCacheError` (an `EmbeddingError`, so an upload fails with its message and leaves
nothing behind) rather than quietly embedding without it: a broken cache is a broken database,
and the next step (storing the document) would fail anyway.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence

import numpy as np
import psycopg

from ragcore.embed.base import Embedder, EmbeddingError
from ragcore.store import Database, DatabaseUnavailable

log = logging.getLogger(__name__)

QUERY, PASSAGE = "q", "p"
READ_BATCH = 1000  # keys per SELECT

_CACHED_SQL = """
SELECT {columns} FROM public.embedding_cache
WHERE model = %(model)s AND kind = %(kind)s AND text_sha256 = ANY(%(keys)s::bytea[])"""
LOOKUP_SQL = _CACHED_SQL.format(columns="text_sha256, dim, vector")
CACHED_KEYS_SQL = _CACHED_SQL.format(columns="text_sha256")  # keys only: no vector is read

# Sorted keys: every writer takes the unique-index entries in the same order, so concurrent
# inserts of overlapping batches wait for each other instead of deadlocking.
STORE_SQL = """
INSERT INTO public.embedding_cache (model, kind, text_sha256, dim, vector)
SELECT %(model)s, %(kind)s, t.key, %(dim)s, t.vector
FROM unnest(%(keys)s::bytea[], %(vectors)s::bytea[]) AS t(key, vector)
ORDER BY t.key
ON CONFLICT DO NOTHING"""


class EmbeddingCacheError(EmbeddingError):
    """The cache table could not be read or written, or holds a vector of the wrong size."""


def text_key(text: str) -> bytes:
    """The cache key of a text: its sha256 (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def _to_bytes(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def _cached_rows(db: Database, sql: str, model: str, kind: str, keys: Sequence[bytes]) -> list[tuple]:
    """The rows `sql` (LOOKUP_SQL or CACHED_KEYS_SQL) finds for the distinct keys, read in batches of
    READ_BATCH on one connection."""
    unique = list(dict.fromkeys(keys))
    try:
        with db.connection() as conn:
            return [row for start in range(0, len(unique), READ_BATCH)
                    for row in conn.execute(sql, {"model": model, "kind": kind, "keys": unique[start : start + READ_BATCH]})]
    except (psycopg.Error, DatabaseUnavailable) as exc:
        raise EmbeddingCacheError(f"Gömme önbelleği okunamadı (public.embedding_cache): {exc}") from exc


def lookup(db: Database, model: str, kind: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
    """Cached vectors for the keys that have one."""
    return {bytes(key): _vector(model, dim, blob) for key, dim, blob in _cached_rows(db, LOOKUP_SQL, model, kind, keys)}


def uncached_passages(db: Database, model: str, texts: Sequence[str]) -> list[str]:
    """The texts without a passage vector of `model` in the cache, each once (keys only: no vector
    is read, so a check over every stored sentence stays cheap)."""
    keys = {text_key(text): text for text in texts}
    present = {bytes(key) for (key,) in _cached_rows(db, CACHED_KEYS_SQL, model, PASSAGE, list(keys))}
    return [text for key, text in keys.items() if key not in present]


def _vector(model: str, dim: int, blob: bytes) -> np.ndarray:
    vector = np.frombuffer(bytes(blob), dtype="<f4")
    if vector.size != dim:  # the table's CHECK makes this impossible unless a row was edited by hand
        raise EmbeddingCacheError(f"Gömme önbelleğinde bozuk bir vektör var ({model}); "
                                  f"`DELETE FROM public.embedding_cache WHERE model = '{model}'` ile temizleyin.")
    return vector.astype(np.float32)


def store(db: Database, model: str, kind: str, keys: Sequence[bytes], vectors: np.ndarray) -> None:
    """Insert vectors that are not cached yet; rows already there (another writer's) are kept."""
    if not len(keys):
        return
    rows = dict(zip(keys, (_to_bytes(v) for v in vectors), strict=True))
    params = {"model": model, "kind": kind, "dim": int(vectors.shape[1]),
              "keys": list(rows), "vectors": list(rows.values())}
    try:
        with db.connection() as conn:
            conn.execute(STORE_SQL, params)
    except (psycopg.Error, DatabaseUnavailable) as exc:
        raise EmbeddingCacheError(f"Gömme önbelleğine yazılamadı (public.embedding_cache): {exc}") from exc


class CachedEmbedder:
    """An `Embedder` that asks the cache first for passages and the wrapped embedder only for what is missing.

    Same protocol as the embedder it wraps (kind, model, name, dim, embed_queries,
    embed_passages). Questions go straight to the wrapped model and never touch the table, unless
    `cache_questions` is set (the lab's runs over fixed question sets; see the module docstring).
    `misses` counts looked-up texts the wrapped model had to embed, `hits` the texts served
    without it (a text repeated within one call is embedded once; its repeats are hits).
    """

    def __init__(self, embedder: Embedder, db: Database, *, cache_questions: bool = False) -> None:
        self.inner = embedder
        self.db = db
        self.cache_questions = cache_questions
        self.kind, self.model, self.name = embedder.kind, embedder.model, embedder.name
        self.hits = 0
        self.misses = 0
        self._count_lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if self.cache_questions:
            return self._embed(texts, QUERY, self.inner.embed_queries)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self.inner.embed_queries(texts), dtype=np.float32)

    def embed_passages(self, texts: Sequence[str], *, write: bool = True) -> np.ndarray:
        """`write=False` reads the cache but stores nothing: for texts a question chose (the
        quoter's sentences), which would otherwise make the table remember what users asked."""
        return self._embed(texts, PASSAGE, self.inner.embed_passages, write=write)

    def _embed(self, texts: Sequence[str], kind: str, compute: Callable[[Sequence[str]], np.ndarray], *,
               write: bool = True) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [text_key(text) for text in texts]
        found = lookup(self.db, self.name, kind, keys)
        if found and {vector.size for vector in found.values()} != {self.dim}:
            raise EmbeddingCacheError(f"Gömme önbelleğindeki {self.name} vektörlerinin boyutu modelinkiyle "
                                      f"({self.dim}) uyuşmuyor: model aynı adla değişmiş olabilir.")
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in found}
        if missing:
            fresh = np.asarray(compute(list(missing.values())), dtype=np.float32)
            if write:
                store(self.db, self.name, kind, list(missing), fresh)
            found.update(zip(missing, fresh, strict=True))
        with self._count_lock:
            self.misses += len(missing)
            self.hits += len(texts) - len(missing)
        return np.vstack([found[key] for key in keys]).astype(np.float32, copy=False)

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}
