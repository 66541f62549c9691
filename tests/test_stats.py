"""The lab's statistics are scipy's: intervals, sign-flip p-values and AUC checked against
scipy.stats (and, for the shared resample matrix, against scipy's own draw) on fixed seeds."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from eval import metrics as m


def _values(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2, n).astype(float)


@pytest.mark.parametrize("n,seed", [(37, 1), (200, 2), (892, 3)])
def test_shared_resamples_are_scipys_draw(n, seed):
    values = _values(n, seed) * np.random.default_rng(seed + 10).random(n)
    ours = values[m.bootstrap_indices(n)].mean(axis=1)
    theirs = stats.bootstrap((values,), np.mean, n_resamples=m.RESAMPLES, method="percentile", vectorized=True,
                             rng=np.random.default_rng(m.SEED)).bootstrap_distribution
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n,seed", [(37, 1), (200, 2), (892, 3)])
def test_interval_with_shared_indices_equals_scipy_bootstrap(n, seed):
    values = _values(n, seed)
    ref = stats.bootstrap((values,), np.mean, n_resamples=m.RESAMPLES, method="percentile", vectorized=True,
                          rng=np.random.default_rng(m.SEED)).confidence_interval
    for got in (m.bootstrap_ci(values, m.bootstrap_indices(n)), m.bootstrap_ci(values)):
        assert got == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_paired_difference_interval_equals_scipy_paired_bootstrap():
    n = 300
    a, b = _values(n, 5), _values(n, 6)
    ref = stats.bootstrap((a, b), lambda x, y, axis=-1: x.mean(axis=axis) - y.mean(axis=axis), paired=True,
                          n_resamples=m.RESAMPLES, method="percentile", vectorized=True,
                          rng=np.random.default_rng(m.SEED)).confidence_interval
    got = m.paired(a, b, m.bootstrap_indices(n))
    assert got["ci"] == pytest.approx([ref.low, ref.high], abs=1e-12)
    assert got["diff"] == pytest.approx(a.mean() - b.mean())


def _flip_p_by_hand(d: np.ndarray, permutations: int, seed: int) -> float:
    """The definition: share of random sign flips with |sum| at least the observed, +1 corrected."""
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(permutations, len(d)))
    hits = np.sum(np.abs(signs @ d) >= abs(d.sum()) - 1e-9)
    return (hits + 1) / (permutations + 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sign_flip_p_is_scipys_permutation_test(seed):
    rng = np.random.default_rng(seed)
    d = rng.integers(-1, 2, 120).astype(float) + (rng.random(120) < 0.1)
    ref = stats.permutation_test((d,), lambda x, axis=-1: np.abs(x.sum(axis=axis)), permutation_type="samples",
                                 alternative="greater", n_resamples=4000, vectorized=True,
                                 rng=np.random.default_rng(m.SEED)).pvalue
    got = m.randomization_p(d, permutations=4000)
    assert got == pytest.approx(ref, abs=1e-12)
    # and it is the textbook sign-flip test (other random flips: agreement within Monte Carlo error)
    assert got == pytest.approx(_flip_p_by_hand(d, 4000, seed + 100), abs=0.03)


def test_sign_flip_p_of_stacked_rows_equals_each_rows_own_call():
    # compare() tests all systems of a metric in one permutation_test call; each row must keep the
    # p-value of its own call (same seed, same flips), and an all-zero row stays p = 1
    rng = np.random.default_rng(7)
    rows = (rng.random((6, 200)) < 0.12).astype(float) - (rng.random((6, 200)) < 0.1)
    rows[2] = 0.0
    stacked = m.randomization_ps(rows, permutations=3000)
    assert stacked == [m.randomization_p(row, permutations=3000) for row in rows]
    assert stacked[2] == 1.0
    assert len(set(stacked)) > 2  # the rows differ, so must their p-values


def test_compare_gives_each_system_its_own_paired_result():
    n = 250
    base = _values(n, 11)
    systems = {"base": {"recall@5": base}, "a": {"recall@5": _values(n, 12)}, "b": {"recall@5": _values(n, 13)}}
    idx = m.bootstrap_indices(n)
    rows = {row["system"]: row["metrics"]["recall@5"] for row in m.compare(systems, "base", ["recall@5"], idx)}
    for name in ("a", "b"):
        alone = m.paired(systems[name]["recall@5"], base, idx)
        assert {k: rows[name][k] for k in alone} == alone
    assert [rows["a"]["p_holm"], rows["b"]["p_holm"]] == m.holm([rows["a"]["p"], rows["b"]["p"]])


def test_sign_flip_small_samples_are_exact():
    # 2**6 = 64 sign patterns ≤ permutations: scipy enumerates them; only the identity and the
    # all-flipped pattern reach |sum| = 6 → p = 2 / 64
    assert m.randomization_p(np.ones(6), permutations=1000) == pytest.approx(2 / 64)


def test_auc_is_mann_whitney_and_counts_ties_half():
    pos, neg = [0.9, 0.8, 0.5, 0.5], [0.5, 0.1, 0.2]
    by_hand = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / (len(pos) * len(neg))
    assert m.auc(pos, neg) == pytest.approx(by_hand)
    assert m.auc([1.0], [0.0]) == 1.0 and m.auc([0.0], [1.0]) == 0.0
    with pytest.raises(ValueError):
        m.auc([], [0.1])
