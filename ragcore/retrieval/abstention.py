"""Three outcomes instead of a yes/no refusal: answer, show the closest passages, or refuse.

One cosine cut, calibrated on questions worded like the laws, told employees "not in your
documents" for most everyday-worded questions whose answer was there. The gate now reads
several signals of the retrieval (best cosine, lexical coverage, score margins, whether the two
legs agree) through a logistic model fitted on the development set's
train half (`python -m eval fit abstention` → ragcore/measured/abstention.json), with two
operating points chosen on that half:

- p ≥ answer_at: *answer*, as before, with citations (with the extractive quoter, the quote
  check's own answer cut, below);
- closest_at ≤ p < answer_at: *closest* — the best two or three permitted passages, labelled as
  the closest sections, no quoted or generated answer, and the question goes to review;
- p < closest_at, or nothing permitted at all: *refuse* with the fixed sentence — unless the
  single calibrated threshold (thresholds.json) sees enough evidence to answer: then closest.

With the extractive quoter (no language model), an *answer* has a second condition, the quote
check (`QuoteCheck`): a second logistic model, over the gate's probability and signals and the
quoter's own (its best sentence's probability, the margin over the runner-up, the rank of the
source it quotes), that the quote carries the asked fact; below its cut the user gets the closest
passages instead of a quote that probably misses it. Its gate cut (`QuoteCheck.answer_at`) is
chosen together with it, lower than the gate's own: a language model's answer has no such check,
so with a language model the gate's own `answer_at` decides. The quoter's confidence alone told right
from wrong quotes poorly (ROC AUC 0.54 on dev); together with the retrieval's signals it does
better. It is applied by the answer service (`ragcore.answer.service`) and lives here because it
is fitted with the gate, whose answer cut is chosen together with it.

Every signal comes from the role's own retrieval (its permitted candidates and statistics), so
the outcome cannot depend on documents the role cannot read. An embedder without a measured
entry keeps the single calibrated threshold (answer or refuse).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path

from ragcore.core import OUTCOME_ANSWER, OUTCOME_CLOSEST, OUTCOME_REFUSED
from ragcore.retrieval import measurements
from ragcore.retrieval.calibration import Threshold, should_refuse
from ragcore.retrieval.hybrid import Retrieval

ABSTENTION_FILE = measurements.ABSTENTION_FILE
ANSWER, CLOSEST, REFUSED = OUTCOME_ANSWER, OUTCOME_CLOSEST, OUTCOME_REFUSED
# Signals whose scale does not grow with the corpus: an absolute BM25 score does (its idf grows
# with N), so a model fitted on three laws would refuse a small company corpus's clear answers.
# The question's length is left out too: it separated the development set's (short) small talk,
# and then held back short, clearly answered questions ("Isveren is kazasini hangi kuruma bildirir?").
FEATURE_NAMES = ("cosine", "coverage", "dense_margin", "lexical_ratio", "legs_agree")
# The quote check's signals: the gate's (as a logit, so that a linear model can weigh it), the
# quoter's ranking of the context's sentences, and what its best sentence itself shares with the
# question (its cosine, its words, the kind of fact asked): the quoter's probability is relative
# to the context, so a best sentence among poor ones can look as sure as a right one.
QUOTE_FEATURE_NAMES = ("gate_logit", "best_sentence", "sentence_margin", "source_rank", "cosine", "coverage",
                       "legs_agree", "sentence_cosine", "sentence_overlap", "sentence_overlap4", "type_match",
                       "asks_type", "source_overlap")


def _top_two(values: list[float]) -> tuple[float, float]:
    """The best two scores; with a single candidate, it is its own runner-up (no margin to read)."""
    ordered = sorted(values, reverse=True) or [0.0]
    return ordered[0], ordered[1] if len(ordered) > 1 else ordered[0]


def features(retrieval: Retrieval) -> dict[str, float]:
    """The signals the model reads, from one retrieval (all over the role's permitted chunks)."""
    evidence = retrieval.evidence
    dense = [h.dense_score for h in retrieval.hits if h.dense_score is not None]
    lexical = [h.lexical_score for h in retrieval.hits if h.lexical_score is not None]
    dense1, dense2 = _top_two(dense)
    lex1, lex2 = _top_two(lexical)
    best_dense = max(retrieval.hits, key=lambda h: h.dense_score or -1.0, default=None)
    best_lexical = max(retrieval.hits, key=lambda h: h.lexical_score or -1.0, default=None)
    agree = float(best_dense is not None and best_lexical is not None and best_lexical.lexical_score is not None
                  and best_dense.source.chunk_id == best_lexical.source.chunk_id)
    return {
        "cosine": float(evidence.best_cosine or 0.0),
        "coverage": float(evidence.coverage),
        "dense_margin": dense1 - dense2,
        "lexical_ratio": (lex2 / lex1) if lex1 > 0 else 1.0,
        "legs_agree": agree,
    }


def _logistic(values: dict[str, float], names, coefficients, intercept, means, scales) -> float:
    z = intercept + sum(c * (values[n] - m) / s for n, c, m, s in zip(names, coefficients, means, scales, strict=True))
    return 1.0 / (1.0 + math.exp(-max(min(z, 50.0), -50.0)))


@dataclass(frozen=True)
class QuoteSignals:
    """What the extractive quoter saw: its best and second-best sentence probabilities, the 1-based
    rank of the source its best sentence comes from, and that sentence's own features
    (`ragcore.answer.extractive_model.FEATURES`: its cosine with the question, its idf-weighted
    word overlap at 5- and 4-letter prefixes, whether it has the kind of fact asked, its source
    chunk's overlap) and whether the question asks for a particular kind of fact. Records of
    older runs have the first three only: the rest default to 0."""

    best: float
    second: float
    source: int
    sentence_cosine: float = 0.0
    sentence_overlap: float = 0.0
    sentence_overlap4: float = 0.0
    type_match: float = 0.0
    asks_type: float = 0.0
    source_overlap: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def quote_features(gate_probability: float, signals: dict[str, float], quoted: QuoteSignals) -> dict[str, float]:
    """The quote check's inputs for one answer: the gate's probability and signals, the quoter's."""
    p = min(max(gate_probability, 1e-6), 1 - 1e-6)
    return {"gate_logit": math.log(p / (1 - p)), "best_sentence": quoted.best,
            "sentence_margin": quoted.best - quoted.second, "source_rank": 1.0 / max(quoted.source, 1),
            "cosine": signals["cosine"], "coverage": signals["coverage"], "legs_agree": signals["legs_agree"],
            "sentence_cosine": quoted.sentence_cosine, "sentence_overlap": quoted.sentence_overlap,
            "sentence_overlap4": quoted.sentence_overlap4, "type_match": quoted.type_match,
            "asks_type": quoted.asks_type, "source_overlap": quoted.source_overlap}


@dataclass(frozen=True)
class QuoteCheck:
    """A fitted logistic model of "this quote carries the asked fact" and the cut a quote needs."""

    names: tuple[str, ...]
    coefficients: tuple[float, ...]
    intercept: float
    means: tuple[float, ...]
    scales: tuple[float, ...]
    at: float
    answer_at: float | None = None  # the gate's answer cut when this check follows it; None: the gate's own

    def probability(self, values: dict[str, float]) -> float:
        return _logistic(values, self.names, self.coefficients, self.intercept, self.means, self.scales)

    def as_entry(self) -> dict:
        entry = {"features": list(self.names), "coefficients": list(self.coefficients), "intercept": self.intercept,
                 "means": list(self.means), "scales": list(self.scales), "at": self.at}
        return entry if self.answer_at is None else {**entry, "answer_at": self.answer_at}

    @classmethod
    def from_entry(cls, entry: dict) -> QuoteCheck:
        check = cls(tuple(entry["features"]), tuple(float(c) for c in entry["coefficients"]), float(entry["intercept"]),
                    tuple(float(m) for m in entry["means"]), tuple(float(s) for s in entry["scales"]),
                    float(entry["at"]), None if entry.get("answer_at") is None else float(entry["answer_at"]))
        if set(check.names) - set(QUOTE_FEATURE_NAMES) or not (
                len(check.names) == len(check.coefficients) == len(check.means) == len(check.scales)):
            raise ValueError(f"the quote check does not match the signals this code computes "
                             f"({', '.join(QUOTE_FEATURE_NAMES)})")
        return check


@dataclass(frozen=True)
class AbstentionModel:
    """A fitted logistic model over `features` and its two operating points (`answer_at` with a
    language model; with the extractive quoter, `answer_cut(quoting=True)`)."""

    names: tuple[str, ...]
    coefficients: tuple[float, ...]
    intercept: float
    means: tuple[float, ...]
    scales: tuple[float, ...]
    answer_at: float
    closest_at: float
    measured: str
    quote_check: QuoteCheck | None = None  # None: every answer outcome is quoted

    def probability(self, values: dict[str, float]) -> float:
        return _logistic(values, self.names, self.coefficients, self.intercept, self.means, self.scales)

    def quote_probability(self, gate_probability: float, signals: dict[str, float],
                          quoted: QuoteSignals) -> float | None:
        """The quote check's probability for one quote; None without a check."""
        if self.quote_check is None:
            return None
        return self.quote_check.probability(quote_features(gate_probability, signals, quoted))

    @property
    def quote_at(self) -> float | None:
        return None if self.quote_check is None else self.quote_check.at

    def answer_cut(self, *, quoting: bool) -> float:
        """The probability an answer needs: the quote check's gate cut when the extractive quoter
        answers and the check has one, else the gate's own."""
        if quoting and self.quote_check is not None and self.quote_check.answer_at is not None:
            return self.quote_check.answer_at
        return self.answer_at

    def as_entry(self) -> dict:
        entry = {"features": list(self.names), "coefficients": list(self.coefficients), "intercept": self.intercept,
                 "means": list(self.means), "scales": list(self.scales), "answer_at": self.answer_at,
                 "closest_at": self.closest_at}
        return entry if self.quote_check is None else {**entry, "quote_check": self.quote_check.as_entry()}


def model_for(embedder_name: str, folder: Path = measurements.MEASURED_DIR) -> AbstentionModel | None:
    """The model measured for this embedding index, or None (then the single threshold decides)."""
    try:
        data = measurements.load(ABSTENTION_FILE, folder)
    except measurements.MeasuredDataError:
        return None
    entry = data["entries"].get(embedder_name)
    if entry is None:
        return None
    try:
        model = AbstentionModel(tuple(entry["features"]), tuple(float(c) for c in entry["coefficients"]),
                                float(entry["intercept"]), tuple(float(m) for m in entry["means"]),
                                tuple(float(s) for s in entry["scales"]), float(entry["answer_at"]),
                                float(entry["closest_at"]), str(entry["measured"]),
                                None if entry.get("quote_check") is None else QuoteCheck.from_entry(entry["quote_check"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise measurements.MeasuredDataError(f"{ABSTENTION_FILE}: malformed entry for {embedder_name!r}: {exc}") from exc
    unknown = set(model.names) - set(FEATURE_NAMES)
    if unknown or not (len(model.names) == len(model.coefficients) == len(model.means) == len(model.scales)):
        raise measurements.MeasuredDataError(f"{ABSTENTION_FILE}: entry for {embedder_name!r} does not match "
                                             f"the features this code computes ({', '.join(FEATURE_NAMES)})")
    return model


def quote_held_back(probability: float | None, quote_at: float | None) -> bool:
    """The quote check: an extractive answer whose quote check probability falls below `quote_at`
    is shown as the closest passages instead (no cut, or no quote to judge: nothing is held back)."""
    return quote_at is not None and probability is not None and probability < quote_at


@dataclass(frozen=True)
class Decision:
    outcome: str
    probability: float | None  # None: decided by the single threshold (no model for this embedder)
    signals: dict[str, float]


def decide(retrieval: Retrieval, model: AbstentionModel | None, threshold: Threshold, *,
           quoting: bool = False) -> Decision:
    """Answer, closest passages or refusal for one retrieval (`quoting`: the extractive quoter
    answers, so the quote check's answer cut applies; the check itself is the service's)."""
    signals = features(retrieval)
    if not retrieval.hits or retrieval.evidence.permitted_hits == 0:
        return Decision(REFUSED, None, signals)
    if model is None:
        return Decision(REFUSED if should_refuse(retrieval.evidence, threshold) else ANSWER, None, signals)
    p = model.probability(signals)
    if p >= model.answer_cut(quoting=quoting):
        return Decision(ANSWER, p, signals)
    if p >= model.closest_at or not should_refuse(retrieval.evidence, threshold):
        # Never a flat refusal where the single calibrated threshold saw enough evidence to answer:
        # "not in your documents" is said only when nothing permitted is related.
        return Decision(CLOSEST, p, signals)
    return Decision(REFUSED, p, signals)
