"""BM25Okapi arithmetic and the exact pruning plan of the SQL lexical leg (no SQL here).

Scores are rank_bm25's BM25Okapi (k1 1.5, b 0.75; a negative idf is replaced by 0.25 × the
mean idf over the role's vocabulary), computed from the role's own statistics. At 100,000
chunks an exhaustive leg reads every posting of every query term; this module decides, from
the per-term statistics alone, which postings can be left unread without changing the
result — MaxScore (Turtle & Flood 1995) over impact tiers, with a guarantee:

* every term has an upper bound on what it can add to any chunk's score (`TermStats.bound`),
  and a tighter one for its low-impact postings (`low_bound`: tf = 1 in a chunk of normal
  length, ~70 % of all postings; migration 003 keeps both bounds' inputs and a partial index
  of the high-impact postings);
* a threshold θ is a lower bound of the `candidates`-th best score: the exact scores of that
  many real chunks (the best chunks of the terms with the shortest posting lists, scored over
  every query term);
* each term is read in full (`ALL`), only its high-impact postings (`HIGH`), or not at all
  (`PROBE`), chosen greedily by bound removed per posting read until what is left unread can
  add less than θ (`rest_bound`): a chunk found in no list read cannot reach θ; a chunk found
  is dropped when its score over what was read plus `rest_bound` stays below θ; the
  survivors' remaining term weights come from index probes.

Every chunk that can be in the top list survives, and every survivor's score is the full sum
in one fixed order, so the result equals exhaustive BM25 bit for bit (tests check it on a
corpus where pruning happens). With a negative effective idf (a collection-wide epsilon floor
can be ≤ 0 in tiny collections) bounds are not monotone and the plan is exhaustive.

A postings budget bounds the work (issue 38, `LEXICAL_POSTINGS_BUDGET`): an exact plan that would
read more postings than the budget is replaced by the greedy reads that fit in it (`capped`), the
`BUDGET_COMPLETE` best chunks by what was read are scored exactly, and that list stands. Such a
list is exact among the chunks it completes; a chunk outside them, or found in no list read, can
be missed. A reader of several roles has longer lists than one role's reader, and without the
budget its leg's work grows with them (docs/scaling.md). A plan within the budget is unchanged.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

K1 = 1.5
B = 0.75
EPSILON = 0.25
# Plans whose terms have at most this many postings in all (the role's) are scored
# exhaustively: pruning would save less than its extra statements cost.
EXHAUSTIVE_POSTINGS = 4000
# The threshold comes from the best chunks of the terms with the shortest lists (up to this
# many postings, read in full) and of every other term's best few postings (`CHAMPIONS`).
SEED_POSTINGS = 4000
CHAMPIONS = 32
SEED_CHUNKS = 4  # × candidates: how many of the best chunks so found are scored exactly
# Each round reads until the postings left unread can add less than a share of the threshold
# (a smaller share: more read, fewer chunks survive), scores the survivors with the highest
# bounds exactly (index probes), and stands if no other survivor's bound reaches the
# candidates-th best exact score. Otherwise the next round raises the threshold to that score
# and reads more; after the last round, the plan is exhaustive.
ROUNDS = ((0.6, 2000), (0.4, 20000))  # (rest share, chunks completed) per round
# A capped plan's chunks completed exactly (index probes of its unread terms): fewer than an exact
# round's, since the capped list stands whatever it finds (chosen on held-out questions at 100k
# chunks: docs/scaling.md).
BUDGET_COMPLETE = 800
# Floating-point slack: bounds are inflated and thresholds deflated by this factor, so that
# rounding can never prune a chunk whose exact score reaches the threshold.
SLACK = 1e-9

ALL, HIGH, PROBE = "all", "high", "probe"


def idf(n: float, df: int) -> float:
    """rank_bm25's idf before the epsilon floor."""
    return math.log(n - df + 0.5) - math.log(df + 0.5)


def weight_bound(max_tf: int, min_len_per_tf: float, avgdl: float) -> float:
    """Largest tf·(k1+1)/(tf + k1·(1 − b + b·dl/avgdl)) over postings with tf ≤ max_tf and
    dl/tf ≥ min_len_per_tf.

    The weight's inverse is (1 + k1(1−b)/tf + k1·b·(dl/tf)/avgdl)/(k1+1); it is smallest at
    the largest tf and the smallest dl/tf, whichever postings they come from.
    """
    return (K1 + 1) / (1 + K1 * (1 - B) / max_tf + K1 * B * min_len_per_tf / avgdl)


@dataclass(frozen=True)
class TermRow:
    """A query term's row in the role's lexicon, with the index's posting counts."""

    term: str
    df: int  # the role's chunks containing it
    max_tf: int | None  # over its high-impact postings
    min_len_per_tf: float | None
    low_min_len: int | None  # over its other postings
    postings: int  # postings of the term in the role's index (its df): cost of reading it
    high_postings: int  # high-impact postings in the role's index (its high_df)


@dataclass(frozen=True)
class TermStats:
    """One distinct query term as the role sees it."""

    term: str
    weight: float  # qtf × idf (idf with the epsilon floor)
    bound: float  # upper bound of the term's contribution to any chunk's score
    low_bound: float  # … to a chunk where it is a low-impact posting
    postings: int
    high_postings: int


@dataclass(frozen=True)
class LexicalPlan:
    """How the lexical statement reads each term: in full, its high-impact postings, or by probes."""

    terms: tuple[TermStats, ...]
    reads: tuple[str, ...]  # ALL / HIGH / PROBE per term
    threshold: float  # -inf: no pruning
    rest_bound: float  # what the postings left unread can add to any chunk (inflated by SLACK)
    capped: bool = False  # reads cut to the postings budget: the list stands as found (inexact)

    @property
    def exhaustive(self) -> bool:
        return all(read == ALL for read in self.reads)

    @property
    def postings_read(self) -> int:
        """Postings the lexical statement scans under this plan (probes of single chunks aside): the
        work that grows with the reader's corpus, which the benchmark reports beside the latency."""
        return sum({ALL: t.postings, HIGH: t.high_postings, PROBE: 0}[read]
                   for t, read in zip(self.terms, self.reads, strict=True))

    def params(self) -> dict:
        return {
            "lex_terms": [t.term for t in self.terms],
            "lex_weights": [t.weight for t in self.terms],
            "lex_reads": list(self.reads),
            "lex_low_bounds": [t.low_bound * (1 + SLACK) for t in self.terms],
            "lex_threshold": self.threshold,
            "lex_rest_bound": self.rest_bound,
        }


def term_stats(query: Sequence[str], n: int, avgdl: float, rows: Sequence[TermRow],
               mean_idf: float | None) -> tuple[TermStats, ...]:
    """Weights and bounds of the query's terms that the role's chunks contain (in term order;
    the others add nothing). `mean_idf` is needed only when some idf is negative."""
    counts = Counter(query)
    out = []
    for row in sorted(rows, key=lambda r: r.term):
        raw = idf(n, row.df)
        weight = counts[row.term] * (raw if raw >= 0 else EPSILON * _required(mean_idf))
        high = weight * weight_bound(row.max_tf, row.min_len_per_tf, avgdl) if row.max_tf else 0.0
        low = weight * weight_bound(1, row.low_min_len, avgdl) if row.low_min_len is not None else 0.0
        out.append(TermStats(row.term, weight, max(high, low), low, row.postings, row.high_postings))
    return tuple(out)


def _required(mean_idf: float | None) -> float:
    if mean_idf is None:
        raise ValueError("a term with negative idf needs the mean idf of the vocabulary")
    return mean_idf


def needs_mean_idf(n: int, dfs: Sequence[int]) -> bool:
    """rank_bm25 floors negative idfs with the vocabulary's mean idf; only then is it read."""
    return any(idf(n, df) < 0 for df in dfs)


def exhaustive_plan(terms: Sequence[TermStats]) -> LexicalPlan:
    return LexicalPlan(tuple(terms), tuple(ALL for _ in terms), -math.inf, 0.0)


def can_prune(terms: Sequence[TermStats]) -> bool:
    """Pruning needs positive contributions and enough postings to be worth it."""
    return all(t.weight > 0 for t in terms) and sum(t.postings for t in terms) > EXHAUSTIVE_POSTINGS


def seed_terms(terms: Sequence[TermStats]) -> list[TermStats]:
    """The terms with the shortest posting lists, within the posting budget (at least one)."""
    chosen: list[TermStats] = []
    postings = 0
    for term in sorted(terms, key=lambda t: (t.postings, t.term)):
        if chosen and postings + term.postings > SEED_POSTINGS:
            break
        chosen.append(term)
        postings += term.postings
    return chosen


def _unread(term: TermStats, read: str) -> float:
    """What a term read this way can still add to a chunk it was not found in (inflated)."""
    bound = {ALL: 0.0, HIGH: term.low_bound, PROBE: term.bound}[read]
    return bound * (1 + SLACK)


def pruned_plan(terms: Sequence[TermStats], threshold: float, share: float = 1.0,
                budget: int = 0) -> LexicalPlan:
    """Reads chosen greedily (bound removed per posting read) until what stays unread can add
    less than `share` × `threshold`, a lower bound of the candidates-th best score. `budget` > 0:
    a plan that would read more postings than that is cut to the greedy reads that fit (`capped`)."""
    if not threshold > 0:
        return exhaustive_plan(terms)
    limit = threshold * (1 - SLACK)
    plan = _greedy_plan(terms, limit, share, budget=None)
    if budget > 0 and plan.postings_read > budget:
        return _greedy_plan(terms, limit, share, budget=budget)
    return plan


def fallback_plan(terms: Sequence[TermStats], budget: int = 0) -> LexicalPlan:
    """The plan when pruning cannot settle (no threshold, or the rounds ran out): every posting, or
    the reads that fit in `budget` when that is less and every term weighs above zero (bounds are
    monotone only then)."""
    plan = exhaustive_plan(terms)
    if budget > 0 and plan.postings_read > budget and all(t.weight > 0 for t in terms):
        return budget_plan(terms, budget)
    return plan


def budget_plan(terms: Sequence[TermStats], budget: int) -> LexicalPlan:
    """The greedy reads that fit in `budget` postings when there is no threshold to prune by (too
    few seed chunks): every chunk found stays a candidate, ranked by what was read."""
    plan = _greedy_plan(terms, 0.0, 1.0, budget=budget)  # a zero limit: read while anything fits
    return replace(plan, threshold=-math.inf, rest_bound=0.0)


def _greedy_plan(terms: Sequence[TermStats], limit: float, share: float, *, budget: int | None) -> LexicalPlan:
    """MaxScore's greedy reads, within `budget` postings when one is given (a read that does not fit
    is passed over for one that does)."""
    reads = [PROBE] * len(terms)
    spent = 0
    while sum(_unread(t, r) for t, r in zip(terms, reads, strict=True)) >= share * limit:
        best: tuple[float, int, str, int] | None = None
        for i, (term, read) in enumerate(zip(terms, reads, strict=True)):
            for new, cost in _read_options(term, read):
                if budget is not None and spent + cost > budget:
                    continue
                value = (_unread(term, read) - _unread(term, new)) / (cost + 1)
                if best is None or value > best[0]:
                    best = (value, i, new, cost)
        if best is None:  # every term read in full, or nothing more fits the budget
            break
        reads[best[1]] = best[2]
        spent += best[3]
    rest = sum(_unread(t, r) for t, r in zip(terms, reads, strict=True))
    return LexicalPlan(tuple(terms), tuple(reads), limit, rest, capped=budget is not None)


def _read_options(term: TermStats, read: str) -> list[tuple[str, int]]:
    """The next ways to read a term, each with the postings it adds."""
    if read == PROBE:
        options = [(ALL, term.postings)]
        if term.low_bound < term.bound:
            options.append((HIGH, term.high_postings))
        return options
    if read == HIGH:
        return [(ALL, term.postings - term.high_postings)]
    return []


def settled(scores: Sequence[float], next_bound: float | None, candidates: int) -> bool:
    """Whether the exactly scored chunks are the top list: no survivor left unscored has a
    bound reaching the candidates-th best exact score."""
    if next_bound is None:
        return True
    return len(scores) >= candidates and next_bound * (1 + SLACK) < scores[candidates - 1] * (1 - SLACK)
