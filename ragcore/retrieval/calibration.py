"""Refusal thresholds: when the best permitted evidence is too weak, Dayanak refuses unasked.

Evidence (ragcore.retrieval.hybrid.Evidence) is computed over the permitted candidates of BOTH legs,
whatever the ranking mode, so one threshold per embedding model serves every mode (the table
below lists each mode explicitly so a later per-mode measurement can differ):

- `cosine`: best dense cosine of a permitted chunk (depends on the embedding model);
- `coverage`: idf-weighted share of the question's content terms (question words removed)
  present in the best BM25 chunk (model-independent);
- `mean` of the two — the signal chosen for USE.

How it was measured (`python -m eval fit threshold`, 2026-11-30, embedded USE, chunks 1000/150):
Laws 6331 (isg, personel) and 4857 (ik, personel) ingested. Answerable: the 32 hand-written
questions of eval/gold/law_questions.json asked by every role that may read the answer
(64 cases). Unanswerable (242 cases): 20 off-topic company questions × roles isg/ik/personel,
each law question asked by the role that cannot read that law (32), and 150 TQuAD dev history
questions (seed 0) as personel.

Separation (AUC = P(answerable scores above unanswerable)):
    signal    AUC    answerable median / p10   unanswerable median / p90
    cosine    0.949  0.418 / 0.290             0.184 / 0.311
    coverage  0.970  0.816 / 0.606             0.184 / 0.485
    mean      0.979  0.638 / 0.505             0.182 / 0.369
At mean ≥ 0.38: 63/64 answerable answered (98.4 %), 91.3 % of unanswerable refused
(TQuAD 100 %, off-topic 88.3 %, other-law 56.2 %). The balanced-accuracy optimum (0.457:
95.3 % / 94.6 %) refuses three answerable questions; we prefer answering, because a weak but
permitted context still goes to the model, whose own refusal (the fallback sentence) is the
second line. "Other-law" cases are hard by nature: Law 4857 still carries the headings of its
repealed safety articles, so an ik user's safety question finds genuinely related text.
For embedders not measured here (bge-m3 via Ollama) the model-independent coverage signal is
used: coverage ≥ 0.45 answered 98.4 % and refused 88.4 % on the same cases.
REFUSAL_THRESHOLD overrides the value (of the signal in force).

The values in force are data: `ragcore/measured/thresholds.json` (an entry per recorded index
name, written by `python -m eval fit threshold`, and the model-independent default for
embedders without one, e.g. e5 until it is calibrated).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ragcore.core import Settings
from ragcore.retrieval import measurements
from ragcore.retrieval.hybrid import Evidence


def _cosine(e: Evidence) -> float:
    return e.best_cosine or 0.0


SIGNALS: dict[str, Callable[[Evidence], float]] = {
    "cosine": _cosine,
    "coverage": lambda e: e.coverage,
    "max": lambda e: max(_cosine(e), e.coverage),
    "mean": lambda e: (_cosine(e) + e.coverage) / 2,
    "min": lambda e: min(_cosine(e), e.coverage),
}


@dataclass(frozen=True)
class Threshold:
    value: float
    signal: str
    measured: str

    def score(self, evidence: Evidence) -> float:
        return SIGNALS[self.signal](evidence)


def threshold_for(embedder_name: str, mode: str, settings: Settings | None = None) -> Threshold:
    """The calibrated threshold for this embedding model; REFUSAL_THRESHOLD overrides its value.

    One threshold per model serves every mode (the evidence covers both legs whatever the
    ranking); `mode` stays in the signature for a later per-mode calibration.
    """
    measured = measurements.threshold_default(embedder_name)
    if measured.signal not in SIGNALS:
        raise measurements.MeasuredDataError(
            f"thresholds.json: unknown signal {measured.signal!r} for {embedder_name!r}; one of {', '.join(SIGNALS)}")
    if settings is not None and settings.refusal_threshold is not None:
        return Threshold(settings.refusal_threshold, measured.signal, "REFUSAL_THRESHOLD")
    return Threshold(measured.value, measured.signal, measured.measured)


def should_refuse(evidence: Evidence, threshold: Threshold) -> bool:
    if evidence.permitted_hits == 0:
        return True
    return threshold.score(evidence) < threshold.value
