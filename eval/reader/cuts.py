"""`python -m eval reader cuts`: the reader's one cut pair, chosen on questions it never saw.

Input: a gold run of the everyday train half under the reader policy (every case records the
reader's top score; a case not answered also records what the reader would have quoted, the
lab's "ungated" answer). Only the questions held back from training (`calibration_ids.json` of
the pairs) count. Then:
* the answer cut is the lowest score at which the answers above it stay within the wrong-answer
  budgets (answerable answered wrongly, unanswerable answered) — each a share of its questions —
  with the most right answers;
* the closest cut is where an answerable question's best window still earns the closest
  passages: the `closest_recall` quantile of the answerable questions' top scores (at most the
  answer cut); below it, the refusal. The default, 0, is the lowest held-back answerable score:
  round 19 found questions worded unlike the training set scoring lower (r3 refused 22 of the
  paraphrase set's 62 answerable questions at the 5 % quantile), and a refusal shows nothing,
  while the closest passages of an unanswerable question are no wrong answer.
* the weight of retrieval's rank in the order (`reading.read`: the reader's score plus
  weight / retrieval rank) is the one of `FUSION_WEIGHTS` with the best Recall@1 + MRR@10 on the
  same held-back questions; 0 keeps the reader's order alone.
* how the order holds when the reader reads fewer candidates (`READER_CANDIDATES`, the lever on
  its time): the same measures with only retrieval's first n read and the rest kept in
  retrieval's order after them, as `service.py` places them.
The dev half and the paraphrase set are never read here; they are where the cuts are reported.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from eval.report import read_text

WRONG_BUDGET = 0.06  # answerable answered wrongly, share of the answerable (the target is 0.08)
UNANSWERABLE_BUDGET = 0.04  # unanswerable answered, share of the unanswerable (the target is 0.05)
CLOSEST_RECALL = 0.0  # the share of held-back answerable questions let fall below the closest cut (round 19: 0.05)


@dataclass(frozen=True)
class CalibrationCase:
    qid: str
    answerable: bool
    top: float
    right: bool  # the reader's quote (answered or behind the cut) carries every key fact


@dataclass(frozen=True)
class Cuts:
    answer: float
    closest: float
    cases: int
    answerable: int
    right_above: int
    wrong_above: int
    unanswerable_above: int
    closest_recall: float


def calibration_cases(cases_file: Path, held: set[str]) -> list[CalibrationCase]:
    out = []
    for line in read_text(cases_file).splitlines():
        case = json.loads(line)
        if case["qid"] not in held or case["answer"].get("probability") is None:
            continue
        answer = case["answer"]
        seen = answer if answer["status"] == "answered" else (case.get("ungated") or {})
        out.append(CalibrationCase(case["qid"], case["answerable"], float(answer["probability"]),
                                   seen.get("outcome") == "correct"))
    return out


def choose_cuts(cases: Sequence[CalibrationCase], closest_recall: float = CLOSEST_RECALL) -> Cuts:
    answerable = [c for c in cases if c.answerable]
    unanswerable = [c for c in cases if not c.answerable]
    best: tuple[int, float] | None = None
    for cut in sorted({c.top for c in cases} | {1.0}):
        above = [c for c in cases if c.top >= cut]
        right = sum(c.right for c in above if c.answerable)
        wrong = sum(not c.right for c in above if c.answerable)
        loose = sum(1 for c in above if not c.answerable)
        if (wrong <= WRONG_BUDGET * max(1, len(answerable)) and loose <= UNANSWERABLE_BUDGET * max(1, len(unanswerable))
                and (best is None or right > best[0])):
            best = (right, cut)
    answer_cut = best[1] if best else 1.0
    tops = np.array([c.top for c in answerable]) if answerable else np.array([0.0])
    closest_cut = float(min(np.quantile(tops, closest_recall), answer_cut))
    above = [c for c in cases if c.top >= answer_cut]
    return Cuts(round(float(answer_cut), 4), round(closest_cut, 4), len(cases), len(answerable),
                sum(c.right for c in above if c.answerable), sum(not c.right for c in above if c.answerable),
                sum(1 for c in above if not c.answerable), closest_recall)


def write_cuts(model_dir: Path, cuts: Cuts, source: dict, fusion: dict) -> None:
    """Record the cuts and the retrieval-rank weight in the model's config (the file the app reads)."""
    path = model_dir / "reader.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["cuts"] = {"answer": cuts.answer, "closest": cuts.closest, "chosen_on": source, **asdict(cuts)}
    config["fusion"] = {**fusion, "chosen_on": source}
    path.write_text(json.dumps(config, indent=1, ensure_ascii=False), encoding="utf-8")


# --------------------------------------------------------------------------- fusion with retrieval

FUSION_WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)


@dataclass(frozen=True)
class RankedCase:
    """One answerable held-back case: the reader's candidates in retrieval's order with their scores,
    and which of them are relevant (unknown ones count as not)."""

    scores: tuple[float, ...]  # by retrieval rank 1..n
    relevant: tuple[bool, ...]


def ranked_cases(cases_file: Path, held: set[str]) -> list[RankedCase]:
    out = []
    for line in read_text(cases_file).splitlines():
        case = json.loads(line)
        reading = case["answer"].get("reading")
        if case["qid"] not in held or not case["answerable"] or not reading:
            continue
        relevant = {s["chunk_id"] for s in case["sources"] if s["relevant"]}
        score_of = dict(zip(reading["chunk_ids"], reading["scores"], strict=True))
        order = [c for c in case["retrieval_ranking"] if c in score_of]
        order += [c for c in reading["chunk_ids"] if c not in order]  # read, but below retrieval's first ten
        out.append(RankedCase(tuple(score_of[c] for c in order), tuple(c in relevant for c in order)))
    return out


def fused_order(scores: Sequence[float], weight: float) -> list[int]:
    """Candidates (by retrieval rank, 0-based) ordered by the reader's score plus `weight / rank`."""
    return sorted(range(len(scores)), key=lambda i: -(scores[i] + weight / (i + 1)))


def fusion_quality(cases: Sequence[RankedCase], weight: float, read: int | None = None) -> dict[str, float]:
    """Recall@1/@5 and MRR@10 of the fused order when the reader reads retrieval's first `read`
    candidates (None: every recorded one) and the others follow in retrieval's order."""
    r1, r5, rr = [], [], []
    for case in cases:
        head = len(case.scores) if read is None else min(read, len(case.scores))
        order = fused_order(case.scores[:head], weight) + list(range(head, len(case.scores)))
        first = next((n for n, i in enumerate(order, start=1) if case.relevant[i]), 0)
        r1.append(first == 1)
        r5.append(0 < first <= 5)
        rr.append(1.0 / first if 0 < first <= 10 else 0.0)
    return {"recall@1": float(np.mean(r1)), "recall@5": float(np.mean(r5)), "mrr@10": float(np.mean(rr))}


def choose_fusion(cases: Sequence[RankedCase]) -> tuple[float, dict[str, dict[str, float]]]:
    """The weight with the highest Recall@1 + MRR@10 on the held-back cases (0: the reader alone)."""
    table = {str(w): fusion_quality(cases, w) for w in FUSION_WEIGHTS}
    best = max(FUSION_WEIGHTS, key=lambda w: (table[str(w)]["recall@1"] + table[str(w)]["mrr@10"], -w))
    return best, table


CANDIDATE_COUNTS = (4, 6, 8, 10, 12)


def candidates_table(cases: Sequence[RankedCase], weight: float) -> dict[str, dict[str, float]]:
    """The order's quality at `weight` for each count of candidates read (up to those recorded)."""
    recorded = max((len(c.scores) for c in cases), default=0)
    return {str(n): fusion_quality(cases, weight, read=n) for n in CANDIDATE_COUNTS if n <= recorded}
