"""How many candidates per leg should the fusion see? `python scripts/candidate_depth.py`.

The weighted fusion min-max normalises each leg over its own candidates and gives a chunk the
other leg did not return 0 there, so the depth of the pool changes the ranking of its top, not
only what can be found. This script measures that through the app's own retrieval:

1. The three sample laws go in as an upload puts them (`eval.lab_corpus`, the roles of
   eval/gold/paraphrase_laws.corpus.json), sentence windows included.
2. Every answerable (question, role) case of the everyday set's halves and of the paraphrase set
   is retrieved with `ragcore.retrieval.retrieve` (the chat's mode and windows, top 10) once per
   depth (`--depths`, candidates per leg).
3. The depth is chosen on the TRAIN half alone: the highest Recall@5 + MRR@10, the smaller depth on
   a tie. Dev and the paraphrase set are reported against the previous depth (50) with paired
   bootstrap CIs and randomization p-values (`eval.metrics.compare`, Holm across depths).

Prints a JSON report (written with --out, a run card). Nothing in the app changes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from eval import metrics
from eval.gold_run import index_chunks
from eval.gold_split import DEV, TRAIN, everyday_split
from eval.gold_stats import relevant_chunks
from eval.goldset import GoldQuestion, parse_jsonl
from eval.goldstore import SAMPLE_CORPUS, SAMPLE_FILE
from eval.lab_corpus import built_index, sample_corpus
from eval.report import provenance, write_card
from ragcore import store as dbmod
from ragcore.core import Settings
from ragcore.retrieval import MIN_CANDIDATES, resolve_mode, retrieve

NAMESPACE = "candidate_depth"
PREVIOUS = 50
DEPTHS = (50, 80, 120, 160, 200, 250, 400, 600)
REPORTED = ("recall@1", "recall@5", "mrr@10")


def rankings(index, embedder, questions: list[GoldQuestion], documents, *, depth: int, mode: str,
             windows: bool) -> tuple[list[list[int]], list[set[int]]]:
    """Top-10 chunk ids and relevant ids of every answerable (question, role) case at one depth."""
    chunks = index_chunks(index)
    names = {d.sha256: d.filename for d in documents}
    ranked, relevant = [], []
    for question in questions:
        if not question.answerable:
            continue
        for role in question.roles:
            readable = {d.sha256 for d in documents if d.readable_by(role)}
            relevant.append(relevant_chunks(chunks, question.expected, names, readable))
            retrieval = retrieve(index.db, embedder, question.question, role, k=10, mode=mode, windows=windows,
                                 depth=depth)
            ranked.append([s.chunk_id for s in retrieval.sources])
    return ranked, relevant


def chosen_depth(train: dict[int, dict]) -> int:
    """The train half's best Recall@5 + MRR@10 (the smaller depth on a tie)."""
    return min(train, key=lambda d: (-round(train[d]["recall@5"]["mean"] + train[d]["mrr@10"]["mean"], 9), d))


def report_split(scores: dict[int, dict]) -> dict:
    summary = {depth: {m: v for m, v in metrics.summarise(s).items() if m in REPORTED} for depth, s in scores.items()}
    rows = metrics.compare({str(d): s for d, s in scores.items()}, str(PREVIOUS), metrics=REPORTED)
    return {"cases": len(next(iter(scores.values()))["recall@5"]), "by_depth": summary,
            "against_previous": {row["system"]: row["metrics"] for row in rows}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default=",".join(map(str, DEPTHS)), help="candidates per leg, comma-separated")
    parser.add_argument("--out", type=Path, help="write the JSON report (run card) here")
    args = parser.parse_args(argv)
    depths = sorted({int(x) for x in args.depths.split(",")} | {PREVIOUS})

    from ragcore.embed import CachedEmbedder, make_embedder

    settings = Settings.from_env()
    started = time.time()
    with dbmod.open_database(settings) as public:
        embedder = CachedEmbedder(make_embedder(settings), public, cache_questions=True)
        documents = sample_corpus(settings, SAMPLE_CORPUS)
        with built_index(settings, public, embedder, NAMESPACE, documents) as index:
            mode = resolve_mode(settings, embedder)
            halves = everyday_split()
            sets = {TRAIN: halves[TRAIN], DEV: halves[DEV],
                    "paraphrase": parse_jsonl(SAMPLE_FILE.read_text(encoding="utf-8"))}
            results = {}
            for name, questions in sets.items():
                scores = {}
                for depth in depths:
                    ranked, relevant = rankings(index, embedder, questions, documents, depth=depth, mode=mode,
                                                windows=settings.dense_windows)
                    scores[depth] = metrics.per_question(ranked, relevant)
                results[name] = report_split(scores)
    report = {
        "run": provenance(), "script": "scripts/candidate_depth.py", "embedder": embedder.name, "mode": mode,
        "windows": settings.dense_windows, "depths": depths, "previous_depth": PREVIOUS,
        "chosen_on_train": chosen_depth(results[TRAIN]["by_depth"]), "app_depth": MIN_CANDIDATES,
        "rule": "the train half's highest Recall@5 + MRR@10, the smaller depth on a tie",
        "seconds": round(time.time() - started, 1), "results": results,
    }
    if args.out:
        write_card(args.out, report)
    print(json.dumps(report, ensure_ascii=False, indent=2, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
