"""Retrieval metrics with uncertainty: per-question scores, bootstrap CIs, paired comparisons.

Relevance is binary and a question may have several relevant chunks (its answer can sit in the
15 % overlap of two neighbours). Recall@k and MRR@10 use the first relevant rank only: did the
reader get the answer, and how high. nDCG@10 counts *every* relevant chunk in the top 10 with
gain 1/log2(rank + 1), normalised by the ideal ranking of all the question's relevant chunks
(min(R, 10) of them at the top); so a system that ranks both overlapping chunks first scores 1,
one that ranks only one of them first scores a little less. This is the standard binary nDCG.

Uncertainty: 95 % percentile bootstrap over questions (`scipy.stats.bootstrap`, 2,000 resamples,
fixed seed; the same resample indices for every system, so CIs of differences are paired).
Significance against a baseline: paired sign-flip randomization test on per-question differences
(`scipy.stats.permutation_test`), Holm-corrected across the compared systems per metric.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from scipy import stats

METRICS: tuple[str, ...] = ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")
RESAMPLES = 2000
PERMUTATIONS = 10000
SEED = 0
CONFIDENCE = 0.95
DEPTH = 10


def first_relevant_rank(ranking: Sequence[int], relevant: Iterable[int]) -> int:
    """1-based rank of the first relevant item in `ranking`, or 0 when none is there."""
    wanted = set(relevant)
    for position, item in enumerate(ranking, start=1):
        if item in wanted:
            return position
    return 0


def ndcg(ranking: Sequence[int], relevant: Iterable[int], k: int = DEPTH) -> float:
    """Binary nDCG@k counting every relevant item (see the module docstring)."""
    wanted = set(relevant)
    if not wanted:
        return 0.0
    dcg = sum(1.0 / np.log2(pos + 1) for pos, item in enumerate(ranking[:k], start=1) if item in wanted)
    ideal = sum(1.0 / np.log2(pos + 1) for pos in range(1, min(len(wanted), k) + 1))
    return float(dcg / ideal)


def scores_from_ranks(first_ranks: np.ndarray, ndcg_values: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per-question metric values from first relevant ranks (0 = not in the top 10)."""
    r = np.asarray(first_ranks, dtype=np.int64)
    found = r > 0
    out = {
        "recall@1": (found & (r <= 1)).astype(float),
        "recall@5": (found & (r <= 5)).astype(float),
        "recall@10": (found & (r <= 10)).astype(float),
        "mrr@10": np.where(found & (r <= 10), 1.0 / np.maximum(r, 1), 0.0),
    }
    if ndcg_values is not None:
        out["ndcg@10"] = np.asarray(ndcg_values, dtype=float)
    return out


def per_question(rankings: Sequence[Sequence[int]], relevant: Sequence[Iterable[int]]) -> dict[str, np.ndarray]:
    """All metrics per question for one system, plus its first relevant ranks under "rank"."""
    rel = [set(r) for r in relevant]
    ranks = np.array([first_relevant_rank(list(row)[:DEPTH], s) for row, s in zip(rankings, rel, strict=True)])
    gains = np.array([ndcg(list(row), s, DEPTH) for row, s in zip(rankings, rel, strict=True)])
    out = scores_from_ranks(ranks, gains)
    out["rank"] = ranks
    return out


def recall_curve(first_ranks: np.ndarray, max_k: int = DEPTH) -> list[float]:
    """Recall@k for k = 1..max_k (the Recall@k curve of the lab page)."""
    r = np.asarray(first_ranks)
    return [float(np.mean((r > 0) & (r <= k))) for k in range(1, max_k + 1)]


# --------------------------------------------------------------------------- bootstrap
# scipy.stats does the statistics. The one thing kept by hand is the shared resample matrix:
# every system of a run is resampled with the *same* question indices, so that the CI of a
# difference is paired and a system's own CI and its difference CI come from one draw. That
# matrix is exactly what `scipy.stats.bootstrap` draws for n observations from
# `np.random.default_rng(SEED)` (tests/test_stats.py checks the intervals against scipy's, and
# the sign-flip p-values against `scipy.stats.permutation_test`, on fixed seeds).


def bootstrap_indices(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(resamples, n) question indices; shared by all systems so that comparisons are paired.

    The same draw as `scipy.stats.bootstrap(..., n_resamples=resamples, rng=default_rng(seed))`."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def percentile_ci(samples: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The percentile interval of a bootstrap distribution, as scipy.stats.bootstrap computes it
    (`method="percentile"`: `scipy.stats.quantile` at (1 − c)/2 and (1 + c)/2)."""
    tail = (1.0 - confidence) / 2.0
    lo, hi = stats.quantile(np.asarray(samples, dtype=float), np.array([tail, 1.0 - tail]))
    return float(lo), float(hi)


def scipy_bootstrap_ci(values: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED,
                       confidence: float = CONFIDENCE) -> tuple[float, float]:
    """95 % percentile bootstrap CI of the mean by `scipy.stats.bootstrap` itself."""
    values = np.asarray(values, dtype=float)
    if len(values) and np.all(values == values[0]):  # scipy warns on a degenerate sample; the CI is the value
        return float(values[0]), float(values[0])
    result = stats.bootstrap((values,), np.mean, n_resamples=resamples, method="percentile",
                             confidence_level=confidence, vectorized=True, rng=np.random.default_rng(seed))
    ci = result.confidence_interval
    return float(ci.low), float(ci.high)


def bootstrap_ci(values: np.ndarray, indices: np.ndarray | None = None) -> tuple[float, float]:
    """95 % percentile bootstrap CI of the mean of `values`.

    Without `indices`: `scipy.stats.bootstrap`. With the run's shared `indices` (one draw for
    every system, see above): the percentile interval of the means over those resamples, which
    is scipy's result whenever `indices` is `bootstrap_indices(len(values))`."""
    values = np.asarray(values, dtype=float)
    if indices is None:
        return scipy_bootstrap_ci(values)
    return percentile_ci(values[indices].mean(axis=1))


def summarise(scores: Mapping[str, np.ndarray], indices: np.ndarray | None = None) -> dict[str, dict]:
    """{"metric": {"mean", "ci": [lo, hi]}} for each metric in METRICS present in `scores`."""
    out: dict[str, dict] = {}
    for name in METRICS:
        if name in scores:
            values = np.asarray(scores[name], dtype=float)
            lo, hi = bootstrap_ci(values, indices)
            out[name] = {"mean": float(values.mean()), "ci": [lo, hi]}
    return out


# --------------------------------------------------------------------------- paired comparison


def _abs_sum(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.abs(np.sum(x, axis=axis))


def randomization_p(diffs: np.ndarray, permutations: int = PERMUTATIONS, seed: int = SEED) -> float:
    """Two-sided paired sign-flip test of mean(diffs) = 0: `scipy.stats.permutation_test` on one
    sample (`permutation_type="samples"` flips signs) with the statistic |sum|, so that "as
    extreme" means |sum of flipped| ≥ |observed sum|. Random flips have scipy's +1 correction
    (never 0); with 2**n ≤ permutations scipy enumerates every sign pattern (exact p)."""
    return randomization_ps(diffs, permutations, seed)[0]


def randomization_ps(diffs: np.ndarray, permutations: int = PERMUTATIONS, seed: int = SEED) -> list[float]:
    """`randomization_p` of every row of `diffs` (systems × questions) in one
    `scipy.stats.permutation_test` call along the last axis.

    Why one call: scipy draws the sign flips once and applies them to every row, so a sweep's
    comparisons cost one draw instead of one each (the warm sweep spent 17 s in 55 separate
    calls). Each row's p-value is the one its own call would give (same seed, same draw; tested);
    rows share their flips, which Holm's correction allows (it assumes no independence)."""
    d = np.atleast_2d(np.asarray(diffs, dtype=float))
    pvalues = [1.0] * len(d)
    varying = [i for i, row in enumerate(d) if np.any(row)]
    if not varying:
        return pvalues
    # batch bounds the flipped copy scipy holds in memory: batch × rows × questions floats
    batch = max(1, min(2000, 2_000_000 // (len(varying) * d.shape[1])))
    result = stats.permutation_test((d[varying],), _abs_sum, permutation_type="samples", alternative="greater",
                                    n_resamples=permutations, vectorized=True, batch=batch, axis=-1,
                                    rng=np.random.default_rng(seed))
    for i, p in zip(varying, np.atleast_1d(result.pvalue), strict=True):
        pvalues[i] = float(p)
    return pvalues


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (monotone, capped at 1), in the input order.

    Kept by hand: scipy.stats has only false-discovery-rate control (`false_discovery_control`,
    Benjamini-Hochberg/Yekutieli), not Holm's family-wise step-down; statsmodels is not a
    dependency for these eight lines."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for step, i in enumerate(order):
        running = max(running, min(1.0, (m - step) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def win_tie_loss(system: np.ndarray, baseline: np.ndarray) -> dict[str, int]:
    s, b = np.asarray(system, dtype=float), np.asarray(baseline, dtype=float)
    return {"wins": int(np.sum(s > b)), "ties": int(np.sum(s == b)), "losses": int(np.sum(s < b))}


def paired(system: np.ndarray, baseline: np.ndarray, indices: np.ndarray | None = None,
           p: float | None = None) -> dict:
    """Mean difference, its paired bootstrap CI, raw randomization p and win/tie/loss.

    `p`: the randomization p already computed for this difference (`compare` does all of a
    metric's comparisons in one call)."""
    d = np.asarray(system, dtype=float) - np.asarray(baseline, dtype=float)
    idx = bootstrap_indices(len(d)) if indices is None else indices
    lo, hi = percentile_ci(d[idx].mean(axis=1))
    return {"diff": float(d.mean()), "ci": [lo, hi], "p": randomization_p(d) if p is None else p,
            **win_tie_loss(system, baseline)}


def compare(
    systems: Mapping[str, Mapping[str, np.ndarray]],
    baseline: str,
    metrics: Sequence[str] = METRICS,
    indices: np.ndarray | None = None,
) -> list[dict]:
    """Every system against `baseline`: per metric diff, CI, p, Holm-adjusted p, wins/ties/losses.

    Holm runs per metric across the compared systems (the family is "which systems differ from
    the baseline on this metric").
    """
    others = [name for name in systems if name != baseline]
    rows = {name: {"system": name, "baseline": baseline, "metrics": {}} for name in others}
    for metric in metrics:
        if metric not in systems[baseline] or not others:
            continue
        base = np.asarray(systems[baseline][metric], dtype=float)
        pvalues = randomization_ps(np.stack([np.asarray(systems[name][metric], dtype=float) - base
                                             for name in others]))
        results = {name: paired(systems[name][metric], base, indices, p)
                   for name, p in zip(others, pvalues, strict=True)}
        adjusted = holm(pvalues)
        for name, p_holm in zip(others, adjusted, strict=True):
            results[name]["p_holm"] = p_holm
            rows[name]["metrics"][metric] = results[name]
    return [rows[name] for name in others]


# --------------------------------------------------------------------------- separation


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """P(a random positive scores above a random negative), ties counted half: the Mann-Whitney
    U statistic of the positives over n_pos × n_neg (`scipy.stats.mannwhitneyu`)."""
    pos, neg = np.asarray(positives, dtype=float), np.asarray(negatives, dtype=float)
    if not len(pos) or not len(neg):
        raise ValueError("AUC needs at least one positive and one negative score")
    return float(stats.mannwhitneyu(pos, neg, alternative="two-sided").statistic / (len(pos) * len(neg)))
