"""Retrieval latency with the role filter: `python -m bench.retrieval [--chunks 10000,100000]`.

Builds a private namespace of N chunks (TQuAD text, re-mixed to reach N; documents of 50
chunks with random allowed_roles; vectors = the real USE vector of the base chunk plus noise,
so the HNSW graph has realistic neighbourhoods without embedding N texts), then times
`ragcore.retrieval.retrieve` for TQuAD dev questions, per mode and role. Prints a markdown
section (p50/p95 in ms). Question embedding is timed separately from the SQL.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench import percentile, publish
from ragcore import db as dbmod
from ragcore.config import ROLES, Settings
from ragcore.retrieval import MODES, retrieve
from ragcore.text import lexical_tokens

CHUNK_COLUMNS = (
    "document_id, ordinal, page_start, page_end, article, text, char_start, char_end, lex_length, "
    "allowed_roles, embedding"
)


def bulk_insert(
    db: dbmod.Database,
    title: str,
    roles: Sequence[str],
    chunks: Sequence[tuple[str, int, str | None]],
    vectors: np.ndarray,
) -> int:
    """One document with its chunks, vectors and postings via COPY (fast for large corpora).

    Writes what ingestion writes (lex_length = prefix-5 token count, postings with tf), so the
    triggers keep lexicon and lex_stats exact.
    """
    with db.connection() as conn:
        doc_id = conn.execute(
            "INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
            "VALUES (%s, %s, encode(sha256(convert_to(%s || clock_timestamp()::text || random()::text, 'UTF8')),"
            " 'hex'), 1, %s, %s) RETURNING id",
            (title, f"{title}.pdf", title, max([p for _, p, _ in chunks] or [1]), list(roles)),
        ).fetchone()[0]
        tokens = [lexical_tokens(text) for text, _, _ in chunks]
        with conn.cursor() as cur:
            with cur.copy(f"COPY chunks ({CHUNK_COLUMNS}) FROM STDIN") as copy:
                for ordinal, ((text, page, article), toks, vec) in enumerate(zip(chunks, tokens, vectors, strict=True)):
                    copy.write_row((doc_id, ordinal, page, page, article, text, 0, len(text), len(toks),
                                    list(roles), vec))
            ids = dict(cur.execute("SELECT ordinal, id FROM chunks WHERE document_id = %s", (doc_id,)).fetchall())
            with cur.copy("COPY postings (term, chunk_id, tf) FROM STDIN") as copy:
                for ordinal, toks in enumerate(tokens):
                    for term, tf in Counter(toks).items():
                        copy.write_row((term, ids[ordinal], tf))
    return doc_id


def _base_corpus(settings: Settings, embedder) -> tuple[list[str], np.ndarray, list[str]]:
    from eval.tquad import chunk_corpus, load_corpus

    corpus = load_corpus(settings.tquad_dir)
    chunks = chunk_corpus(corpus, 1000)
    texts = [c.text for c in chunks.chunks]
    vectors = embedder.embed_passages(texts)
    return texts, vectors, [q.question for q in corpus.dev_questions]


def build(db: dbmod.Database, n_chunks: int, texts: list[str], vectors: np.ndarray, seed: int = 0) -> None:
    """N chunks in documents of 50 with random role sets; beyond the base corpus, re-mixed text."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    roles = [r for r in ROLES if r != "admin"]
    for start in range(0, n_chunks, 50):
        picks = [rng.randrange(len(texts)) for _ in range(min(50, n_chunks - start))]
        if start + len(picks) <= len(texts):
            picks = list(range(start, start + len(picks)))
        rows, vecs = [], []
        for i in picks:
            text = texts[i]
            if start >= len(texts):  # re-mix: the base text with a sentence of another chunk
                other = texts[rng.randrange(len(texts))].split(". ")
                text = f"{text} {rng.choice(other)}"
            rows.append((text, 1, None))
            vec = vectors[i] + nrng.normal(0, 0.02, vectors.shape[1]).astype(np.float32)
            vecs.append(vec / np.linalg.norm(vec))
        allowed = rng.sample(roles, rng.randint(1, 2))
        bulk_insert(db, f"bench-{start // 50}", allowed, rows, np.asarray(vecs, dtype=np.float32))


class KnownQuestions:
    """The embedder with the benchmark's question vectors computed beforehand: the timings
    below measure the SQL path, not the model or the cache lookup."""

    def __init__(self, embedder, questions: Sequence[str]):
        self.kind, self.model, self.name, self.dim = embedder.kind, embedder.model, embedder.name, embedder.dim
        self.inner = embedder
        self.known = dict(zip(questions, embedder.embed_queries(list(questions)), strict=True))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.vstack([self.known[t] for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)


def run(n_chunks: int, n_queries: int, settings: Settings) -> str:
    from ragcore.embedding_cache import CachedEmbedder
    from ragcore.embeddings import make_embedder

    root = Path(tempfile.mkdtemp(prefix="dayanak-bench-"))
    url = settings.database_url or dbmod.embedded_url(root / "server")
    namespace = f"bench_retrieval_{n_chunks}"
    db = dbmod.Database(url, namespace)
    try:
        dbmod.drop_namespace(db, namespace)
        db.close()
        db = dbmod.Database(url, namespace)
        dbmod.migrate(db)
        cached = CachedEmbedder(make_embedder(settings.with_(embed_backend="use")), db)  # public.embedding_cache
        texts, vectors, questions = _base_corpus(settings, cached)
        questions = questions[:n_queries]
        embedder = KnownQuestions(cached, questions)
        dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
        started = time.perf_counter()
        build(db, n_chunks, texts, vectors)
        build_s = time.perf_counter() - started
        with db.connection() as conn:
            conn.execute("ANALYZE")
        lines = [f"## retrieval latency ({n_chunks} chunks)", "",
                 f"Built in {build_s:.1f} s. {len(questions)} TQuAD dev questions per cell, top-5, "
                 "question vectors computed beforehand (embedding excluded). pgvector "
                 f"{'.'.join(map(str, db.info.pgvector_version))}.", "",
                 "| mode | role | p50 ms | p95 ms |", "|---|---|---|---|"]
        for mode in MODES:
            for role in ("admin", "isg", "personel"):
                times = []
                for q in questions:
                    times.append(retrieve(db, embedder, q, role, k=5, mode=mode).ms)
                lines.append(f"| {mode} | {role} | {statistics.median(times):.1f} | {percentile(times, 0.95):.1f} |")
        return "\n".join(lines)
    finally:
        dbmod.drop_namespace(db, namespace)
        db.close()
        if not settings.database_url:
            dbmod.stop_embedded(root / "server")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="10000,100000", help="comma-separated chunk counts")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    sections = [run(int(n), args.queries, settings) for n in args.chunks.split(",")]
    publish("retrieval", "\n\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
