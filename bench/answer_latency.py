"""Answer latency with the reader: how long a warm extractive answer takes, end to end.

In a scratch embedded database (a temporary DATA_DIR, removed at the end) Law 6331 is stored
with e5, then the everyday gold set's 6331 questions (both halves; their text only) are asked by
an isg user through the answer service, the chat's own code, after a few warm-up questions.
Reports the median and p95 of the whole answer (`total_ms`), of retrieval and of the reader
(`extra.reading.ms`), and how many windows the reader read per question. A benchmark, not a
test: its figures are medians and percentiles of one run on this machine, with its run card.

    python -m bench.answer_latency [--questions 60] [--candidates 12]

READER_MODEL_DIR measures another model than the shipped one; the card names the model by its
sha256 either way (`numbers.reader`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench import percentile, publish
from ragcore.access import create_user, get_user
from ragcore.answer import AnswerService, make_generator
from ragcore.core import Settings
from ragcore.documents import ingest_pdf
from ragcore.embed import CachedEmbedder, make_embedder
from ragcore.store import database_url, ensure_embedding_space, open_database, stop_embedded

LAW = "6331-is-sagligi-ve-guvenligi-kanunu.pdf"
GOLD = Path(__file__).resolve().parent.parent / "eval" / "gold" / "everyday_laws.jsonl"
WARM_UP = 3


def questions(limit: int) -> list[str]:
    rows = [json.loads(line) for line in GOLD.read_text(encoding="utf-8").splitlines()]
    asked = [r["question"] for r in rows if any(e["document"] == LAW for e in r["expected"])]
    asked += [r["question"] for r in rows if not r["answerable"]]
    return asked[: limit + WARM_UP]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--candidates", type=int, default=None, help="READER_CANDIDATES (default: the setting's)")
    args = parser.parse_args(argv)
    base = Settings.from_env(dotenv=None)
    scratch = Path(tempfile.mkdtemp(prefix="dayanak-answer-latency-"))
    settings = base.replace(database_url=None, data_dir=scratch, embed_backend="e5", llm_backend="extractive",
                          ollama_base_url="http://127.0.0.1:9", answer_policy="reader")
    if args.candidates:
        settings = settings.replace(reader_candidates=args.candidates)
    try:
        settings = settings.replace(database_url=database_url(settings))
        db = open_database(settings)
        model = make_embedder(settings)
        ensure_embedding_space(db, model.name, model.dim)
        embedder = CachedEmbedder(model, db)
        ingest_pdf(db, settings, embedder, (base.documents_dir / LAW).read_bytes(), filename=LAW,
                   roles=["isg"], uploaded_by="bench")
        create_user(db, "soran", "isg", "cevap-suresi-parola")
        user = get_user(db, "soran")
        service = AnswerService(db, settings, embedder, make_generator(settings, embedder))
        asked = questions(args.questions)
        for text in asked[:WARM_UP]:
            service.ask(user, text)
        answers = [service.ask(user, text) for text in asked[WARM_UP:]]
        reader = service.reader.describe()
        db.close()
    finally:
        stop_embedded(scratch)
        shutil.rmtree(scratch, ignore_errors=True)
    total = [a.total_ms for a in answers]
    retrieval = [a.retrieval_ms for a in answers]
    reading = [a.extra["reading"]["ms"] for a in answers if a.extra.get("reading")]
    windows = [len(a.extra["reading"]["scores"]) for a in answers if a.extra.get("reading")]
    outcomes = {o: sum(a.outcome == o for a in answers) for o in ("answer", "closest", "refused")}
    numbers = {"questions": len(answers), "candidates": settings.reader_candidates, "policy": settings.answer_policy,
               "reader": reader,
               "total_ms": {"p50": statistics.median(total), "p95": percentile(total, 0.95)},
               "retrieval_ms": {"p50": statistics.median(retrieval), "p95": percentile(retrieval, 0.95)},
               "reader_ms": {"p50": statistics.median(reading), "p95": percentile(reading, 0.95)},
               "candidates_read": statistics.median(windows), "outcomes": outcomes}
    lines = ["## Answer latency with the reader (extractive, warm)", "",
             "| | p50 ms | p95 ms |", "|---|---:|---:|",
             f"| whole answer | {numbers['total_ms']['p50']:.0f} | {numbers['total_ms']['p95']:.0f} |",
             f"| retrieval | {numbers['retrieval_ms']['p50']:.0f} | {numbers['retrieval_ms']['p95']:.0f} |",
             f"| reader | {numbers['reader_ms']['p50']:.0f} | {numbers['reader_ms']['p95']:.0f} |", "",
             f"{len(answers)} everyday questions on Law 6331 (e5), ANSWER_POLICY=reader, "
             f"{settings.reader_candidates} candidates read per question, after {WARM_UP} warm-up questions; outcomes {outcomes}; the reader "
             f"{reader['model']} (sha256 {reader['onnx_sha256'][:8]}…)."]
    publish(card_name(settings.reader_candidates, base.reader_candidates), "\n".join(lines),
            numbers=numbers)
    return 0


def card_name(candidates: int, default_candidates: int) -> str:
    """One card per candidate count: they are compared, none replaces another. (The cards of the
    `rules-reader` policy, measured until round 24, keep their names: answer_latency-rules-reader*.)"""
    return "answer_latency" if candidates == default_candidates else f"answer_latency-{candidates}"


if __name__ == "__main__":
    sys.exit(main())
