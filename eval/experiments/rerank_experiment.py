"""Would a learned reranker beat the single fusion weight? `python -m eval.experiments.rerank_experiment`.

Issue 20 asks for a learned fusion over per-candidate features in place of the single dense
weight "where it wins". This script measures that before any of it goes into the app:

1. The three sample laws go in as an upload puts them (`eval.lab_corpus`, the roles of
   eval/gold/paraphrase_laws.corpus.json), sentence windows included.
2. Every answerable (question, role) case of the everyday development set is retrieved through
   the app (`ragcore.retrieval.retrieve`, the chat's mode and windows) with a deep candidate list
   (`--candidates`, default 30), and each candidate gets features from that one retrieval: its
   dense cosine, its lexical score relative to the list's best, both legs' reciprocal ranks,
   whether each leg found it, and its fused rank.
3. A logistic regression (scikit-learn, L2, standardised) of "this candidate answers the
   question" is fitted on the TRAIN half only (eval.gold_split, seed 0); candidates are
   re-ordered by its probability.
4. Recall@5 and MRR@10 of the app's order and of the re-ordered list, on the dev half and on the
   paraphrase set (reported only), with a paired bootstrap CI of the difference (eval.metrics).

Prints a JSON report (written with --out, a run card). Nothing in the app changes.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

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
from ragcore.retrieval import Retrieval, resolve_mode, retrieve

NAMESPACE = "rerank_experiment"
FEATURES = ("dense_score", "lexical_relative", "dense_reciprocal_rank", "lexical_reciprocal_rank",
            "in_dense", "in_lexical", "fused_reciprocal_rank")


def candidate_features(retrieval: Retrieval) -> np.ndarray:
    """(candidates, FEATURES) for one retrieval, every value from that retrieval alone."""
    hits = retrieval.hits
    dense = np.array([h.dense_score if h.dense_score is not None else np.nan for h in hits], dtype=float)
    lexical = np.array([h.lexical_score if h.lexical_score is not None else np.nan for h in hits], dtype=float)

    def reciprocal_rank(scores: np.ndarray) -> np.ndarray:
        order = np.argsort(-np.nan_to_num(scores, nan=-np.inf), kind="stable")
        ranks = np.empty(len(scores))
        ranks[order] = np.arange(1, len(scores) + 1)
        return np.where(np.isnan(scores), 0.0, 1.0 / ranks)

    best_lexical = np.nanmax(lexical) if np.isfinite(lexical).any() else 0.0
    return np.column_stack([
        np.nan_to_num(dense, nan=0.0),
        np.nan_to_num(lexical / best_lexical, nan=0.0) if best_lexical > 0 else np.zeros(len(hits)),
        reciprocal_rank(dense), reciprocal_rank(lexical),
        (~np.isnan(dense)).astype(float), (~np.isnan(lexical)).astype(float),
        1.0 / np.arange(1, len(hits) + 1),
    ]) if hits else np.zeros((0, len(FEATURES)))


def collect(index, embedder, questions: list[GoldQuestion], documents, *, depth: int, mode: str,
            windows: bool) -> list[dict]:
    """One record per answerable (question, role): candidate ids, features, relevant ids."""
    chunks = index_chunks(index)
    names = {d.sha256: d.filename for d in documents}
    out = []
    for question in questions:
        if not question.answerable:
            continue
        for role in question.roles:
            readable = {d.sha256 for d in documents if d.readable_by(role)}
            relevant = relevant_chunks(chunks, question.expected, names, readable)
            retrieval = retrieve(index.db, embedder, question.question, role, k=depth, mode=mode, windows=windows)
            out.append({"qid": question.id, "role": role, "ids": [s.chunk_id for s in retrieval.sources],
                        "x": candidate_features(retrieval), "relevant": relevant})
    return out


def fit(train: list[dict]):
    from sklearn.linear_model import LogisticRegression

    x = np.vstack([c["x"] for c in train])
    y = np.concatenate([[i in c["relevant"] for i in c["ids"]] for c in train]).astype(int)
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales == 0] = 1.0
    model = LogisticRegression(C=1.0, max_iter=2000).fit((x - means) / scales, y)
    return model, means, scales


def scores(cases: list[dict], model=None, means=None, scales=None) -> dict[str, np.ndarray]:
    rankings = []
    for c in cases:
        ids = list(c["ids"])
        if model is not None and len(ids):
            p = model.predict_proba((c["x"] - means) / scales)[:, 1]
            ids = [ids[i] for i in np.argsort(-p, kind="stable")]
        rankings.append(ids)
    return metrics.per_question(rankings, [c["relevant"] for c in cases])


def compare(cases: list[dict], model, means, scales) -> dict:
    base, reranked = scores(cases), scores(cases, model, means, scales)
    out = {"cases": len(cases)}
    for name in ("recall@5", "mrr@10"):
        diff = reranked[name] - base[name]
        lo, hi = metrics.bootstrap_ci(diff)
        out[name] = {"app": round(float(base[name].mean()), 4), "reranked": round(float(reranked[name].mean()), 4),
                     "difference": round(float(diff.mean()), 4), "difference_ci": [round(lo, 4), round(hi, 4)]}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=30, help="candidate list the reranker re-orders")
    parser.add_argument("--out", type=Path, help="write the JSON report (run card) here")
    args = parser.parse_args(argv)

    from ragcore.embed import CachedEmbedder, make_embedder

    settings = Settings.from_env()
    started = time.time()
    with dbmod.open_database(settings) as public:
        embedder = CachedEmbedder(make_embedder(settings), public, cache_questions=True)
        documents = sample_corpus(settings, SAMPLE_CORPUS)
        with built_index(settings, public, embedder, NAMESPACE, documents) as index:
            mode = resolve_mode(settings, embedder)
            halves = everyday_split()
            paraphrase = parse_jsonl(SAMPLE_FILE.read_text(encoding="utf-8"))
            cases = {name: collect(index, embedder, qs, documents, depth=args.candidates, mode=mode,
                                   windows=settings.dense_windows)
                     for name, qs in ((TRAIN, halves[TRAIN]), (DEV, halves[DEV]), ("paraphrase", paraphrase))}
            model, means, scales = fit(cases[TRAIN])
            report = {
                "run": provenance(), "script": "eval/experiments/rerank_experiment.py", "embedder": embedder.name, "mode": mode,
                "windows": settings.dense_windows, "candidates": args.candidates, "features": list(FEATURES),
                "coefficients": [round(float(c), 4) for c in model.coef_[0]],
                "seconds": round(time.time() - started, 1),
                "results": {name: compare(cs, model, means, scales) for name, cs in cases.items()},
            }
    if args.out:
        write_card(args.out, report)
    print(json.dumps(report, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
