"""Tune what RETRIEVAL_MODE=auto uses for the configured embedder: `python scripts/tune_retrieval.py`.

The dense weight of the weighted mode is tuned on TQuAD train questions by the lab's one tuning
function (`eval.retrievers.tune_weight`, exact fusion over every chunk); the mode is the best of
the four on the same train questions; dev is only reported (`eval.sweep.tune_fusion`). With
`--write` the result becomes the embedder's entry in ragcore/measured/retrieval.json.

    EMBED_BACKEND=e5 python scripts/tune_retrieval.py --write

Embeddings go through the app database's embedding cache, so a rerun embeds nothing new.
`--articles N` restricts the corpus to its first N articles (a quick look; such a run can write
only to `--measured-dir`, never to the real file).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from eval.report import write_card
from ragcore.core import Settings
from ragcore.retrieval import measurements


def subset(corpus, n_articles: int):
    """The first n/2 dev and n/2 train articles with their questions, re-indexed (quick looks
    and tests; not comparable with a full run)."""
    from dataclasses import replace

    from eval.tquad import Corpus

    dev = [a for a in corpus.articles if a.split == "dev"][: (n_articles + 1) // 2]
    train = [a for a in corpus.articles if a.split == "train"][: n_articles // 2]
    new = {a.index: i for i, a in enumerate(dev + train)}
    articles = [replace(a, index=new[a.index]) for a in dev + train]

    def keep(questions):
        return [replace(q, article=new[q.article]) for q in questions if q.article in new]

    return Corpus(articles, keep(corpus.dev_questions), keep(corpus.train_questions), corpus.excluded_train,
                  corpus.kept_train, corpus.unmapped_train_answers, corpus.file_hashes)


def main(argv: list[str] | None = None) -> int:
    from eval.progress import TqdmProgress
    from eval.sweep import make_workspace, tune_fusion
    from eval.tquad import cached_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk-size", type=int, default=1000)
    parser.add_argument("--train-questions", type=int, default=1000)
    parser.add_argument("--dev-limit", type=int, help="report on the first N dev questions only")
    parser.add_argument("--articles", type=int, help="first N articles only (quick look; see above)")
    parser.add_argument("--write", action="store_true", help="record the entry in retrieval.json")
    parser.add_argument("--measured-dir", type=Path, help="folder of the measured files (default ragcore/measured)")
    parser.add_argument("--out", type=Path, help="also write the JSON report here")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    partial = args.articles is not None or args.dev_limit is not None
    if args.write and partial and args.measured_dir is None:
        parser.error("a partial run (--articles/--dev-limit) may only --write into --measured-dir")
    settings = Settings.from_env()
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
    if args.write:
        path = measurements.write_measured(measurements.RETRIEVAL_FILE, report["embedder"], report["entry"],
                                           args.measured_dir or measurements.MEASURED_DIR)
        report["written"] = str(path)
    print(json.dumps(report, ensure_ascii=False, indent=1))
    if args.out:
        write_card(args.out, report)  # the report with its run card (commit, dirty, machine, date, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
