"""Metrics on hand-computed cases: ranks, nDCG with several relevant chunks, bootstrap, tests, Holm."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eval import metrics as m


def test_first_relevant_rank_is_one_based_and_zero_when_missing():
    assert m.first_relevant_rank([7, 3, 9], {3}) == 2
    assert m.first_relevant_rank([7, 3, 9], {9, 7}) == 1
    assert m.first_relevant_rank([7, 3, 9], {4}) == 0


def test_rank_based_metrics_by_hand():
    # ranks 1, 3, 7, none → R@1 = 1/4, R@5 = 2/4, R@10 = 3/4, MRR = (1 + 1/3 + 1/7 + 0) / 4
    scores = m.scores_from_ranks(np.array([1, 3, 7, 0]))
    assert scores["recall@1"].mean() == 0.25
    assert scores["recall@5"].mean() == 0.5
    assert scores["recall@10"].mean() == 0.75
    assert scores["mrr@10"].mean() == pytest.approx((1 + 1 / 3 + 1 / 7) / 4)


def test_rank_beyond_ten_counts_as_miss_for_mrr():
    assert m.scores_from_ranks(np.array([11]))["mrr@10"][0] == 0.0


def test_ndcg_single_relevant_is_inverse_log_rank():
    assert m.ndcg([5, 1, 2], {5}) == 1.0
    assert m.ndcg([5, 1, 2], {2}) == pytest.approx(1 / math.log2(4))
    assert m.ndcg([5, 1, 2], {9}) == 0.0


def test_ndcg_counts_every_relevant_chunk():
    # two relevant chunks (an answer inside the overlap): ranks 1 and 3 vs ideal ranks 1 and 2
    dcg = 1 + 1 / math.log2(4)
    ideal = 1 + 1 / math.log2(3)
    assert m.ndcg([10, 11, 12], {10, 12}) == pytest.approx(dcg / ideal)
    assert m.ndcg([10, 12, 11], {10, 12}) == pytest.approx(1.0)
    # only one of the two found, at rank 1: less than perfect
    assert m.ndcg([10, 11], {10, 99}) == pytest.approx(1 / ideal)


def test_ndcg_ignores_ranks_beyond_depth():
    ranking = list(range(20))
    assert m.ndcg(ranking, {15}) == 0.0


def test_per_question_bundles_ranks_and_metrics():
    out = m.per_question([[1, 2, 3], [4, 5, 6]], [{2}, {9}])
    assert list(out["rank"]) == [2, 0]
    assert list(out["recall@1"]) == [0.0, 0.0]
    assert list(out["recall@5"]) == [1.0, 0.0]
    assert out["mrr@10"][0] == 0.5


def test_recall_curve_is_monotone():
    curve = m.recall_curve(np.array([1, 2, 2, 0, 10]), 10)
    assert curve[0] == 0.2 and curve[1] == 0.6 and curve[9] == 0.8
    assert all(a <= b for a, b in zip(curve, curve[1:], strict=False))


def test_bootstrap_ci_of_a_constant_is_the_constant_and_is_reproducible():
    assert m.bootstrap_ci(np.ones(50)) == (1.0, 1.0)
    values = np.array([0, 1] * 100, dtype=float)
    assert m.bootstrap_ci(values) == m.bootstrap_ci(values)
    lo, hi = m.bootstrap_ci(values)
    assert lo < 0.5 < hi and hi - lo < 0.2


def test_bootstrap_uses_2000_resamples():
    assert m.bootstrap_indices(10).shape == (2000, 10)


def test_summarise_shape():
    out = m.summarise(m.scores_from_ranks(np.array([1, 2, 0, 4]), np.array([1.0, 0.6, 0.0, 0.4])))
    assert set(out) == set(m.METRICS)
    assert out["recall@1"]["mean"] == 0.25
    lo, hi = out["recall@5"]["ci"]
    assert lo <= 0.75 <= hi


def test_randomization_p_identical_systems_is_one():
    assert m.randomization_p(np.zeros(30)) == 1.0


def test_randomization_p_all_positive_differences_is_tiny():
    # every sign flip but the identity gives a smaller |mean|: p = (hits + 1) / (R + 1) with few hits
    p = m.randomization_p(np.ones(40), permutations=2000)
    assert p < 0.002


def test_randomization_p_balanced_differences_is_large():
    d = np.array([1.0, -1.0] * 20)
    assert m.randomization_p(d, permutations=2000) == 1.0


def test_holm_by_hand():
    # sorted p: 0.01 (×3 = 0.03), 0.02 (×2 = 0.04), 0.04 (×1 = 0.04, monotone)
    assert m.holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert m.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert m.holm([]) == []


def test_win_tie_loss():
    assert m.win_tie_loss(np.array([1, 0, 1, 0]), np.array([0, 0, 1, 1])) == {"wins": 1, "ties": 2, "losses": 1}


def test_compare_against_baseline_with_holm():
    base = {"recall@5": np.array([1, 0, 0, 1] * 25, dtype=float)}
    better = {"recall@5": np.ones(100)}
    same = {"recall@5": base["recall@5"].copy()}
    rows = m.compare({"base": base, "better": better, "same": same}, "base", metrics=["recall@5"])
    by_name = {r["system"]: r["metrics"]["recall@5"] for r in rows}
    assert by_name["better"]["diff"] == pytest.approx(0.5)
    assert by_name["better"]["ci"][0] > 0
    assert by_name["better"]["wins"] == 50 and by_name["better"]["losses"] == 0
    assert by_name["better"]["p_holm"] < 0.01
    assert by_name["same"]["diff"] == 0 and by_name["same"]["p"] == 1.0 and by_name["same"]["p_holm"] == 1.0
    assert by_name["better"]["p_holm"] >= by_name["better"]["p"]
