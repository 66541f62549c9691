"""Quote ranking: what the quoter's sentence ranking costs one question, as the chat pays it.

Every quoted answer and, since the closest outcome marks each shown passage's nearest sentence,
every closest outcome too ranks the context's sentences (`ragcore.answer.extractive.choose_quote`).
The sentences' vectors are never cached between users (issue 21), so each question embeds its
context's sentences anew; the lab's runs read them from the lab's cache and hide that cost.

Contexts: the everyday development set's dev-half answerable questions (eval/gold), each with
the top-5 chunks of the lab's exact BM25 (prefix-5, the lexical leg's tokens) over the three
sample laws chunked as an upload chunks them (no database: only the ranking is timed). The
question's vector is embedded first and passed in, as retrieval hands it over. Reports the
median and p95 seconds per question, the median number of sentences ranked, and the median time
to embed the question alone (what retrieval costs in embeddings), on a fresh embedder.

    python -m bench.quote_ranking [--questions 60] [--backends e5,use]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

import numpy as np

from bench import percentile, publish
from eval.gold_split import DEV, everyday_split
from eval.goldstore import SAMPLE_CORPUS
from eval.lab_corpus import sample_corpus
from eval.retrievers import BM25Index, tokenize_all, top_indices
from ragcore.answer import candidates, choose_quote
from ragcore.core import Settings, Source
from ragcore.documents import chunk_pages, extract_pages
from ragcore.embed import make_embedder

CONTEXT_K = 5


def law_chunks(settings: Settings) -> list[Source]:
    """The three sample laws' chunks as `Source`s (rank filled in per context)."""
    out = []
    for number, document in enumerate(sample_corpus(settings, SAMPLE_CORPUS), start=1):
        pages = extract_pages(document.path.read_bytes(), use_ocr=False).pages
        for ordinal, chunk in enumerate(chunk_pages(pages, settings.chunk_size, settings.chunk_overlap)):
            out.append(Source(0, number * 100_000 + ordinal, number, document.filename, document.filename,
                              chunk.page_start, chunk.page_end, chunk.article, 0.0, chunk.text))
    return out


def contexts(chunks: list[Source], questions: list[str]) -> list[list[Source]]:
    index = BM25Index(tokenize_all([c.text for c in chunks], "prefix5"))
    scores = np.vstack([index.scores(q) for q in tokenize_all(questions, "prefix5")])
    tops = top_indices(scores, CONTEXT_K)
    return [[dataclasses.replace(chunks[i], rank=rank) for rank, i in enumerate(row, start=1)] for row in tops]


def timed(embedder: object, questions: list[str], ctx: list[list[Source]]) -> dict:
    """One embedder's timings over the contexts (the model loaded first, nothing cached)."""
    embedder.embed_queries(["ısınma"])  # type: ignore[attr-defined]
    embedder.embed_passages(["ısınma cümlesi."])  # type: ignore[attr-defined]
    query_s, rank_s, units = [], [], []
    for question, sources in zip(questions, ctx, strict=True):
        started = time.perf_counter()
        vector = embedder.embed_queries([question])[0]  # type: ignore[attr-defined]
        query_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        choose_quote(question, sources, embedder, vector)
        rank_s.append(time.perf_counter() - started)
        units.append(len(candidates(sources)))
    return {"embedder": getattr(embedder, "name", "?"), "questions": len(questions),
            "rank_s_median": statistics.median(rank_s), "rank_s_p95": percentile(rank_s, 0.95),
            "sentences_median": statistics.median(units), "query_s_median": statistics.median(query_s)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--backends", default="e5,use", help="comma-separated EMBED_BACKEND values, one row each")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    questions = [q.question for q in everyday_split()[DEV] if q.answerable][: args.questions]
    ctx = contexts(law_chunks(settings), questions)
    rows = [timed(make_embedder(settings.replace(embed_backend=b)), questions, ctx) for b in args.backends.split(",")]
    section = "\n".join([
        "## Quote ranking (the sentences of one context, embedded anew per question)",
        "",
        "| embedder | questions | sentences ranked (median) | ranking s median | ranking s p95 | question embedding s median |",
        "|---|---:|---:|---:|---:|---:|",
        *(f"| {r['embedder']} | {r['questions']} | {r['sentences_median']:.0f} | {r['rank_s_median']:.3f} "
          f"| {r['rank_s_p95']:.3f} | {r['query_s_median']:.3f} |" for r in rows),
        "",
        f"Everyday dev-half answerable questions, top-{CONTEXT_K} BM25 chunks of the three sample laws as context; "
        "paid by every quoted answer and every closest outcome (its marks), with any generator.",
    ])
    publish("quote_ranking", section, numbers={"context_k": CONTEXT_K, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
