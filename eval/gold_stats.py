"""The statistics a gold run adds on top of `eval.metrics`: which retrieved sources count as right,
the abstention curve, latency percentiles, rates with bootstrap intervals, and the recommendation.

Retrieval metrics (Recall@k, MRR@10, nDCG@10, bootstrap CIs, paired tests, Holm, win/tie/loss)
are `eval.metrics`' own functions; this module only feeds them and reads their results.

- **Relevance**: a retrieved chunk is right for a gold question when it comes from one of the
  question's expected documents (matched by sha256 when the gold line gives one, else by file
  name) and its page range overlaps the expected pages, or its article label is the expected one;
  an expected entry with neither pages nor article accepts any chunk of its document. Only
  chunks the asking role may read count (the others are leaks, counted apart).
- **Abstention curve**: each case has its evidence score (the app's signal for the embedder,
  `ragcore.retrieval.calibration`) and the outcome its answer gets when the gate lets it through. At a
  threshold t a case is answered when its score ≥ t (and something was permitted) and the answer
  was not itself a refusal; coverage = share answered, selective accuracy = share of the
  answered that are correct (an answered unanswerable question is wrong), accuracy = share of
  every case handled right (a refused unanswerable question is right). It describes the single
  threshold; with a three-outcome model the gate is the next curve.
- **Three-outcome curve**: the gate's model gives each case a probability p and answers at
  p ≥ answer_at, shows the closest passages at closest_at ≤ p < answer_at, and refuses below
  (unless the single threshold would have answered: then closest passages too,
  `ragcore.retrieval.abstention.decide`). As answer_at moves over the cases' probabilities
  (closest_at kept at the model's), each group's shares of correct answers, wrong answers, closest
  passages and refusals; the model's own answer_at is the operating point, and there the shares
  are the run's own.
- **Recommendation**: the best configuration on the primary metric, and every other one whose
  paired bootstrap 95 % interval of the difference to it contains 0 ("the data cannot separate
  them"); of those, the cheapest: the lowest p95 answer latency measured in the run, then the
  shortest index build. The sentence gives the gap, its interval and the Holm-corrected
  permutation p of `eval.metrics.compare`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from eval import metrics
from eval.goldset import Expected
from eval.numbers import ci_text, number, signed
from ragcore.retrieval import quote_held_back

CONFIDENCE = metrics.CONFIDENCE


# --------------------------------------------------------------------------- relevance


def normalise_article(label: str | None) -> str:
    return " ".join((label or "").casefold().split())


@dataclass(frozen=True)
class ChunkInfo:
    """What relevance needs of an indexed chunk."""

    id: int
    sha256: str
    filename: str
    page_start: int
    page_end: int
    article: str | None


def matching_documents(expected: Expected, documents: Mapping[str, str]) -> set[str]:
    """sha256 of the corpus documents an expected entry names ({sha256: filename} of the corpus)."""
    if expected.sha256:
        return {expected.sha256} if expected.sha256 in documents else set()
    exact = {sha for sha, name in documents.items() if name == expected.document}
    if exact:
        return exact
    folded = expected.document.casefold()
    return {sha for sha, name in documents.items() if name.casefold() == folded}


def chunk_matches(chunk: ChunkInfo, expected: Expected, shas: set[str]) -> bool:
    if chunk.sha256 not in shas:
        return False
    if not expected.pages and expected.article is None:
        return True
    if expected.pages and any(chunk.page_start <= p <= chunk.page_end for p in expected.pages):
        return True
    return expected.article is not None and normalise_article(chunk.article) == normalise_article(expected.article)


def relevant_chunks(chunks: Sequence[ChunkInfo], expected: Sequence[Expected], documents: Mapping[str, str],
                    readable: set[str]) -> set[int]:
    """Ids of the chunks that answer the question and that the asking role may read (`readable`: sha256s)."""
    out: set[int] = set()
    for entry in expected:
        shas = matching_documents(entry, documents) & readable
        out |= {c.id for c in chunks if chunk_matches(c, entry, shas)}
    return out


def case_scores(ranking: Sequence[int], relevant: set[int]) -> dict[str, float]:
    """Recall@1/5/10, MRR@10, nDCG@10 and the first relevant rank of one case (`eval.metrics`)."""
    scores = metrics.per_question([list(ranking)], [relevant])
    return {name: float(values[0]) for name, values in scores.items()}


# --------------------------------------------------------------------------- rates and latency


def rate(values: Sequence[bool] | np.ndarray, indices: np.ndarray | None = None) -> dict:
    """Share of True with its bootstrap CI (the shared resample indices when given), and the count."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return {"mean": None, "ci": [None, None], "count": 0, "n": 0}
    lo, hi = metrics.bootstrap_ci(v, indices)
    return {"mean": float(v.mean()), "ci": [lo, hi], "count": int(v.sum()), "n": int(v.size)}


def latency(values_ms: Sequence[float]) -> dict:
    """p50 / p95 / mean in milliseconds (numpy's linear percentile)."""
    v = np.asarray([x for x in values_ms if x is not None], dtype=float)
    if v.size == 0:
        return {"p50": None, "p95": None, "mean": None, "n": 0}
    p50, p95 = np.percentile(v, [50, 95])
    return {"p50": float(p50), "p95": float(p95), "mean": float(v.mean()), "n": int(v.size)}


# --------------------------------------------------------------------------- abstention


@dataclass(frozen=True)
class AbstentionCase:
    score: float  # the gate's signal; -inf when nothing was permitted (always refused)
    answerable: bool
    answered_if_passed: bool  # the answer behind the gate was not itself a refusal
    correct_if_answered: bool  # answerable and its key facts are in that answer


def abstention_point(cases: Sequence[AbstentionCase], threshold: float) -> dict:
    score = np.array([c.score for c in cases], dtype=float)
    answerable = np.array([c.answerable for c in cases], dtype=bool)
    answered = (score >= threshold) & np.array([c.answered_if_passed for c in cases], dtype=bool)
    good = np.array([c.correct_if_answered for c in cases], dtype=bool) & answerable
    right = np.where(answerable, answered & good, ~answered)
    n = len(cases)
    return {
        "threshold": float(threshold),
        "coverage": float(answered.mean()) if n else None,
        "selective_accuracy": float(good[answered].mean()) if answered.any() else None,
        "accuracy": float(right.mean()) if n else None,
        "answered": int(answered.sum()),
        "n": n,
    }


def abstention_curve(cases: Sequence[AbstentionCase], operating: float) -> dict:
    """Coverage / selective accuracy / accuracy at every distinct score (and the operating point)."""
    finite = sorted({c.score for c in cases if np.isfinite(c.score)})
    grid = sorted({0.0, float(operating), *finite, (finite[-1] + 1e-6) if finite else 1.0})
    return {"points": [abstention_point(cases, t) for t in grid],
            "operating_point": abstention_point(cases, operating)}


def score_separation(cases: Sequence[AbstentionCase]) -> float | None:
    """AUC of the gate's score between answerable and unanswerable cases (Mann–Whitney U / n₁n₂)."""
    pos = [c.score for c in cases if c.answerable and np.isfinite(c.score)]
    neg = [c.score if np.isfinite(c.score) else -1.0 for c in cases if not c.answerable]
    if not pos or not neg:
        return None
    u = stats.mannwhitneyu(pos, neg, alternative="two-sided").statistic
    return float(u / (len(pos) * len(neg)))


# --------------------------------------------------------------------------- three outcomes

RESULTS = ("correct", "wrong", "closest", "refused")  # what a user met; eval.answers.RESULTS alike


@dataclass(frozen=True)
class GateCase:
    """One case as the three-outcome gate saw it, and what its answer was when one was given."""

    probability: float | None  # the model's p; None: nothing permitted (always refused)
    answerable: bool
    # Below closest_at the gate refused, or showed the closest passages because the single
    # threshold would have answered: what it did for this case, read off the run.
    rescued_by_threshold: bool
    answer_result: str  # the answer given (or the one behind the gate): "correct", "wrong" or "refused"
    quote_probability: float | None = None  # the gate's quote check on that answer; None: not checked


def gate_result(case: GateCase, answer_at: float, closest_at: float, quote_at: float | None = None) -> str:
    """What the user meets for this case with the answer cut at `answer_at` (RESULTS); with
    `quote_at`, an answer whose quote check falls below it becomes the closest passages, as in the chat."""
    p = case.probability
    if p is None:
        return "refused"
    if p >= answer_at:
        return "closest" if quote_held_back(case.quote_probability, quote_at) else case.answer_result
    if p >= closest_at or case.rescued_by_threshold:
        return "closest"
    return "refused"


def outcome_point(cases: Sequence[GateCase], answer_at: float, closest_at: float,
                  quote_at: float | None = None) -> dict:
    """Per group (answerable, unanswerable) its n and the share of each of RESULTS at this cut."""
    point: dict = {"answer_at": float(answer_at)}
    for group, answerable in (("answerable", True), ("unanswerable", False)):
        got = [gate_result(c, answer_at, closest_at, quote_at) for c in cases if c.answerable == answerable]
        point[group] = {"n": len(got), **{r: (got.count(r) / len(got) if got else None) for r in RESULTS}}
    return point


def outcome_curve(cases: Sequence[GateCase], answer_at: float, closest_at: float,
                  quote_at: float | None = None) -> dict:
    """The shares at every cut where one changes (each case's probability), at 0 and 1 and at the
    model's answer_at (the operating point); the points are in order of the cut. The quote check
    (`quote_at`) stays at the model's value along the curve."""
    probabilities = {c.probability for c in cases if c.probability is not None}
    grid = sorted({0.0, 1.0, float(answer_at), *probabilities})
    return {"answer_at": float(answer_at), "closest_at": float(closest_at), "quote_at": quote_at,
            "points": [outcome_point(cases, a, closest_at, quote_at) for a in grid],
            "operating_point": outcome_point(cases, answer_at, closest_at, quote_at)}


# --------------------------------------------------------------------------- recommendation


@dataclass(frozen=True)
class Cost:
    p95_ms: float | None
    index_seconds: float | None

    def key(self) -> tuple[float, float]:
        return (self.p95_ms if self.p95_ms is not None else float("inf"),
                self.index_seconds if self.index_seconds is not None else float("inf"))


COST_RULE = ("Ucuz: bu çalıştırmada ölçülen en yavaş %5 cevap süresi en düşük olan, eşitlikte dizin kurma süresi "
             "en kısa olan")


def recommend(systems: Mapping[str, Mapping[str, np.ndarray]], costs: Mapping[str, Cost], labels: Mapping[str, str],
              primary: str, indices: np.ndarray | None = None) -> dict:
    """The cheapest configuration the data cannot separate from the best on `primary` (see the module docstring)."""
    names = [n for n in systems if primary in systems[n] and len(systems[n][primary])]
    if not names:
        return {"text": "Öneri yapılamadı: birincil ölçü için cevaplanabilir soru yok.", "primary": primary}
    means = {n: float(np.mean(systems[n][primary])) for n in names}
    best = max(names, key=lambda n: (means[n], tuple(-x for x in costs[n].key())))
    comparisons = {row["system"]: row["metrics"][primary]
                   for row in metrics.compare({n: systems[n] for n in names}, best, [primary], indices)}
    tied = [n for n, m in comparisons.items() if m["ci"][0] <= 0.0 <= m["ci"][1]]
    chosen = min([best, *tied], key=lambda n: (costs[n].key(), -means[n]))
    out = {"primary": primary, "best": best, "chosen": chosen, "tied_with_best": tied, "cost_rule": COST_RULE,
           "means": means, "comparisons": comparisons,
           "costs": {n: {"p95_ms": costs[n].p95_ms, "index_seconds": costs[n].index_seconds} for n in names}}
    out["text"] = _sentence(out, labels, primary, len(names))
    return out


def _cost_text(cost: Mapping[str, float | None]) -> str:
    p95 = "—" if cost["p95_ms"] is None else f"{number(cost['p95_ms'], 0)} ms"
    build = "—" if cost["index_seconds"] is None else f"{number(cost['index_seconds'], 1)} sn"
    return f"en yavaş %5 cevap süresi {p95}, dizin {build}"


def _sentence(r: dict, labels: Mapping[str, str], primary: str, count: int) -> str:
    best, chosen = r["best"], r["chosen"]
    metric = metric_label(primary)
    if count == 1:
        return (f"Tek yapılandırma ölçüldü ({labels[best]}): {metric} {number(r['means'][best])}. "
                "Karşılaştırma için en az iki yapılandırma seçin.")
    if chosen == best:
        cheaper = [n for n in r["tied_with_best"] if n != best]
        reason = ("ondan ayrılamayan yapılandırmaların hiçbiri daha ucuz değil" if cheaper
                  else "diğer bütün yapılandırmalar ondan anlamlı biçimde ayrılıyor (farkın %95 güven aralığı sıfırı "
                       "içermiyor)")
        return (f"Önerilen yapılandırma: {labels[best]}. {metric} en yüksek ({number(r['means'][best])}; "
                f"{_cost_text(r['costs'][best])}) ve {reason}. {COST_RULE}.")
    m = r["comparisons"][chosen]
    return (f"Önerilen yapılandırma: {labels[chosen]}. En yüksek {metric} {labels[best]} yapılandırmasında "
            f"({number(r['means'][best])}); önerilen {signed(m['diff'])} fark ile "
            f"(%95 güven aralığı {ci_text(m['ci'], signed_values=True)}, düzeltilmiş p = {number(m['p_holm'])}, "
            f"kazanç/eşit/kayıp {m['wins']}/{m['ties']}/{m['losses']}) veriyle ondan ayrılamıyor ve daha ucuz: "
            f"{_cost_text(r['costs'][chosen])}; en iyisinde {_cost_text(r['costs'][best])}. {COST_RULE}.")


# What a reader of the lab sees for each metric: a plain Turkish name; the code (Recall@5, MRR@10)
# is in the help text, for whoever looks it up.
METRIC_LABELS = {"recall@1": "İlk sırada bulma oranı", "recall@5": "İlk 5'te bulma oranı",
                 "recall@10": "İlk 10'da bulma oranı", "mrr@10": "Sıra puanı (ilk 10)",
                 "ndcg@10": "Sıralama kalitesi (ilk 10)"}
METRIC_HELP = {
    "recall@1": "Doğru parçanın ilk sırada geldiği soruların payı (Recall@1).",
    "recall@5": "Doğru parçanın ilk 5 sonuç arasında geldiği soruların payı (Recall@5).",
    "recall@10": "Doğru parçanın ilk 10 sonuç arasında geldiği soruların payı (Recall@10).",
    "mrr@10": "Doğru parça 1. sıradaysa 1, 2. sıradaysa 1/2, 3. sıradaysa 1/3 … puan alır, ilk 10'da yoksa 0; "
              "soruların ortalaması (MRR@10).",
    "ndcg@10": "Doğru parçaların ilk 10 sonuç içinde ne kadar üstte olduğu: 1 en iyisi, 0 hiç bulunamadı (nDCG@10).",
}


def metric_label(name: str) -> str:
    return METRIC_LABELS.get(name, name)


def metrics_help(names: Sequence[str] = tuple(METRIC_HELP)) -> str:
    """One help text for a metric picker: each plain name with what it measures."""
    return "\n\n".join(f"{metric_label(n)}: {METRIC_HELP[n]}" for n in names if n in METRIC_HELP)
