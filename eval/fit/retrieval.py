"""Tune what RETRIEVAL_MODE=auto uses for the configured embedder: `python -m eval fit retrieval`.

The dense weight of the weighted mode is tuned on TQuAD train questions through the app's own
retrieval (`eval.retrievers.tune_production_weight`: `ragcore.retrieval.search` over the corpus
stored once in a namespace, the weight passed explicitly); the mode is the best of the four
production modes on the same train questions; dev is only reported (`eval.sweep.tune_fusion`).
With `--write` the result becomes the embedder's entry in ragcore/measured/retrieval.json.

    EMBED_BACKEND=e5 python -m eval fit retrieval --write

Embeddings go through the app database's embedding cache, so a rerun embeds nothing new.
`--articles N` restricts the corpus to its first N articles (a quick look; such a run can write
only to `--measured-dir`, never to the real file).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from eval.fit.setup import subset
from eval.report import write_card
from ragcore.core import Settings
from ragcore.retrieval import MEASURED_DIR, RETRIEVAL_FILE, write_measured


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunk-size", type=int, default=1000)
    parser.add_argument("--train-questions", type=int, default=1000)
    parser.add_argument("--dev-limit", type=int, help="report on the first N dev questions only")
    parser.add_argument("--articles", type=int, help="first N articles only (quick look; see above)")
    parser.add_argument("--write", action="store_true", help="record the entry in retrieval.json")
    parser.add_argument("--measured-dir", type=Path, help="folder of the measured files (default ragcore/measured)")
    parser.add_argument("--out", type=Path, help="also write the JSON report here, with its run card")
    parser.add_argument("--quiet", action="store_true")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from eval.progress import TqdmProgress
    from eval.sweep import make_workspace, tune_fusion
    from eval.tquad import cached_corpus

    partial = args.articles is not None or args.dev_limit is not None
    if args.write and partial and args.measured_dir is None:
        raise ValueError("a partial run (--articles/--dev-limit) may only --write into --measured-dir")
    corpus = cached_corpus(str(settings.tquad_dir))
    if args.articles is not None:
        corpus = subset(corpus, args.articles)
    progress = TqdmProgress(disable=args.quiet)
    ws = make_workspace(settings, progress, corpus=corpus)
    try:
        report = tune_fusion(settings, ws, args.chunk_size, args.train_questions, args.dev_limit)
    finally:
        progress.close()
        ws.close()
    if args.articles is not None:
        report["entry"]["on"] += f", first {args.articles} articles only"
    card = write_card(args.out, report) if args.out else None  # before --write: the card describes the code that ran
    if args.write:
        path = write_measured(RETRIEVAL_FILE, report["embedder"], report["entry"],
                                           args.measured_dir or MEASURED_DIR)
        report["written"] = str(path)
    print(json.dumps(report, ensure_ascii=False, indent=1))
    if card:
        print(f"written: {card}")
    return 0
