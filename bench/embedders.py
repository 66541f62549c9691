"""Raw embedder throughput: `python -m bench.embedders [--backends e5,use] [--chunks 160] [--questions 100]`.

No database, no cache: the embedder alone, as ingestion and retrieval call it. Passages are the
first N TQuAD 1000-character chunks (the lab's chunking), embedded through `embed_passages` in the
embedder's own batches; questions are the first M dev questions, one `embed_queries` call each
(as retrieval asks them). The model is loaded and warmed before timing. Reports chunks/s (and
characters/s), ms per question (median, p95) and the CPU time of the process, so the figures
can be read on a shared machine. Prints a markdown section and writes bench/results/embedders.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from bench import percentile, publish
from ragcore.core import Settings
from ragcore.embed import make_embedder


def measure(backend: str, chunks: list[str], questions: list[str], batch: int | None) -> dict:
    embedder = make_embedder(Settings(embed_backend=backend))
    if batch:
        embedder.batch_size = batch
    embedder.embed_passages(["ısınma turu"])  # load the weights first
    embedder.embed_queries(["ısınma sorusu?"])
    cpu, started = time.process_time(), time.perf_counter()
    embedder.embed_passages(chunks)
    passage_s, passage_cpu = time.perf_counter() - started, time.process_time() - cpu
    times = []
    for question in questions:
        t = time.perf_counter()
        embedder.embed_queries([question])
        times.append((time.perf_counter() - t) * 1000)
    return {
        "backend": backend, "name": embedder.name, "batch": getattr(embedder, "batch_size", None),
        "chunks": len(chunks), "chars": sum(map(len, chunks)), "passage_s": passage_s, "passage_cpu": passage_cpu,
        "q_p50": statistics.median(times), "q_p95": percentile(times, 0.95), "questions": len(questions),
    }


def table(rows: list[dict]) -> str:
    lines = [
        "## Embedders (raw, no database or cache)",
        "",
        "| embedder | batch | chunks | mean chars | chunks/s | chars/s | CPU s / chunk | ms per question p50 / p95 |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['batch']} | {r['chunks']} | {r['chars'] / r['chunks']:.0f} "
            f"| {r['chunks'] / r['passage_s']:.2f} | {r['chars'] / r['passage_s']:.0f} "
            f"| {r['passage_cpu'] / r['chunks']:.2f} | {r['q_p50']:.1f} / {r['q_p95']:.1f} |"
        )
    lines += ["", f"TQuAD 1000-character chunks and dev questions; load average after the run "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (the machine may be shared)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from eval.tquad import chunk_corpus, load_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="e5,use")
    parser.add_argument("--chunks", type=int, default=160)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--batch", type=int, help="override the embedder's batch size")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    corpus = load_corpus(settings.tquad_dir)
    chunks = [c.text for c in chunk_corpus(corpus, 1000).chunks[: args.chunks]]
    questions = [q.question for q in corpus.dev_questions[: args.questions]]
    rows = []
    for backend in args.backends.split(","):
        rows.append(measure(backend, chunks, questions, args.batch))
        print(f"{backend}: {rows[-1]['chunks'] / rows[-1]['passage_s']:.2f} chunks/s", file=sys.stderr, flush=True)
    publish("embedders", table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
