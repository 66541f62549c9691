"""How should the two legs' candidates become one ranking? `python -m eval.experiments.fusion_tuning`.

Two settings of `ragcore.retrieval.Fusion`, measured through the app's own retrieval:

- the depth of the pool (candidates per leg): the weighted fusion min-max normalises each leg
  over its own candidates and gives a chunk the other leg did not return 0 there, so the depth
  changes the ranking of the top, not only what can be found;
- the weight of a transitional article's fused score ("Geçici Madde N"), whose words repeat the
  articles they amend while a question asked today rarely means them.

1. The three sample laws go in as an upload puts them (`eval.lab_corpus`, the roles of
   eval/gold/paraphrase_laws.corpus.json), sentence windows included.
2. Every answerable (question, role) case of the everyday set's halves and of the paraphrase set
   is retrieved with `ragcore.retrieval.retrieve` (the chat's mode and windows, top 10) once per
   setting: first each depth (`--depths`) with the transitional weight 1 (as before), then, at the
   depth chosen, each weight (`--weights`).
3. Each setting is chosen on the TRAIN half alone: the highest Recall@5 + MRR@10, the setting
   nearer the previous one on a tie. Dev and the paraphrase set are reported against the previous
   fusion (50 candidates, weight 1) with paired bootstrap CIs and randomization p-values
   (`eval.metrics.compare`, Holm across the settings of a sweep).

Prints a JSON report (written with --out, a run card). Nothing in the app changes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

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
from ragcore.retrieval import FUSION, Fusion, resolve_mode, retrieve

NAMESPACE = "fusion_tuning"
PREVIOUS = Fusion(depth=50, transitional_weight=1.0)
DEPTHS = (50, 80, 120, 160, 200, 250, 400, 600)
WEIGHTS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
REPORTED = ("recall@1", "recall@5", "mrr@10")


def rankings(index, embedder, questions: list[GoldQuestion], documents, *, fusion: Fusion, mode: str,
             windows: bool) -> tuple[list[list[int]], list[set[int]]]:
    """Top-10 chunk ids and relevant ids of every answerable (question, role) case with one fusion."""
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
                                 fusion=fusion)
            ranked.append([s.chunk_id for s in retrieval.sources])
    return ranked, relevant


def chosen(train: dict[str, dict], order: list[str]) -> str:
    """The train half's best Recall@5 + MRR@10; on a tie the setting earlier in `order` (nearer the
    previous fusion)."""
    return min(train, key=lambda name: (-round(train[name]["recall@5"]["mean"] + train[name]["mrr@10"]["mean"], 9),
                                        order.index(name)))


def label(fusion: Fusion) -> str:
    return f"depth {fusion.depth}, transitional weight {fusion.transitional_weight:g}"


def sweep(index, embedder, sets: dict[str, list[GoldQuestion]], documents, fusions: list[Fusion], *, mode: str,
          windows: bool) -> dict:
    """Every fusion on every set, each set against the previous fusion; the train half's choice."""
    results = {}
    for name, questions in sets.items():
        scores = {}
        for fusion in [PREVIOUS, *(f for f in fusions if f != PREVIOUS)]:
            ranked, relevant = rankings(index, embedder, questions, documents, fusion=fusion, mode=mode,
                                        windows=windows)
            scores[label(fusion)] = metrics.per_question(ranked, relevant)
        summary = {key: {m: v for m, v in metrics.summarise(s).items() if m in REPORTED} for key, s in scores.items()}
        rows = metrics.compare(scores, label(PREVIOUS), metrics=REPORTED)
        results[name] = {"cases": len(scores[label(PREVIOUS)]["recall@5"]), "by_fusion": summary,
                         "against_previous": {row["system"]: row["metrics"] for row in rows}}
    order = [label(f) for f in fusions]
    best = chosen({name: results[TRAIN]["by_fusion"][name] for name in order}, order)
    return {"chosen_on_train": best, "results": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default=",".join(map(str, DEPTHS)), help="candidates per leg, comma-separated")
    parser.add_argument("--weights", default=",".join(map(str, WEIGHTS)),
                        help="transitional articles' weights, comma-separated")
    parser.add_argument("--out", type=Path, help="write the JSON report (run card) here")
    args = parser.parse_args(argv)
    depths = [int(x) for x in args.depths.split(",")]
    weights = [float(x) for x in args.weights.split(",")]

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
            run = {"mode": mode, "windows": settings.dense_windows}
            by_depth = [Fusion(depth=d, transitional_weight=PREVIOUS.transitional_weight) for d in depths]
            depth_sweep = sweep(index, embedder, sets, documents, by_depth, **run)
            depth = next(f.depth for f in by_depth if label(f) == depth_sweep["chosen_on_train"])
            weight_sweep = sweep(index, embedder, sets, documents,
                                 [Fusion(depth=depth, transitional_weight=w) for w in weights], **run)
    report = {
        "run": provenance(), "script": "eval/experiments/fusion_tuning.py", "embedder": embedder.name, **run,
        "previous": label(PREVIOUS), "app": label(FUSION),
        "rule": "the train half's highest Recall@5 + MRR@10, the setting nearer the previous one on a tie",
        "depths": depth_sweep, "transitional_weights": weight_sweep,
        "seconds": round(time.time() - started, 1),
    }
    if args.out:
        write_card(args.out, report)
    print(json.dumps(report, ensure_ascii=False, indent=2, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
