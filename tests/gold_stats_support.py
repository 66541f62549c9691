"""Stored gold-run cases made by hand for the summary's tests (tests/test_gold_stats.py) and the
lab page's (tests/test_lab_three_outcomes.py): what eval.gold_run.ask_case writes, with only what
the summary reads, and the gate's cuts they were made against."""

from __future__ import annotations

from eval import metrics

ANSWER_AT, CLOSEST_AT = 0.8, 0.4


def payload(answerable: bool, gate_outcome: str | None, probability: float | None, outcome: str,
             behind: str | None = None, **answer) -> dict:
    """A stored case as eval.gold_run.ask_case writes it, with only what the summary reads."""
    status = {"answer": "answered", "closest": "needs_review", "refused": "needs_review"}.get(gate_outcome, "answered")
    case = {
        "qid": "q", "role": "isg", "answerable": answerable, "sources": [], "leaks": 0, "retrieval_ms": 1.0,
        "agreement": None, "relevant_total": 1,
        "gate": {"signal": "cosine", "value": 0.5, "measured": "x", "score": 0.5, "permitted_hits": 1,
                 "answer_at": ANSWER_AT, "closest_at": CLOSEST_AT},
        "answer": {"outcome": outcome, "status": status, "total_ms": 5.0, "sources": [], "text": "",
                   "gate_outcome": gate_outcome, "probability": probability, **answer},
        "ungated": None if behind is None else {"outcome": behind, "text": "", "status": "answered"},
    }
    if answerable:
        case["scores"] = {**{m: 1.0 for m in metrics.METRICS}, "rank": 1}
    return case


class GoldConfig:
    """The configuration fields the summary reads."""

    key, label, embedder, mode, chunk_size, k = "use·weighted·1000·k5", "use · ağırlıklı", "use", "weighted", 1000, 5


# tests/test_gold_stats.py's GATE_CASES as stored cases: the summary's shares are the curve's operating point.
PAYLOADS = [payload(True, "answer", 0.9, "correct"), payload(True, "answer", 0.85, "wrong"),
            payload(True, "closest", 0.6, "fallback", behind="correct"),
            payload(True, "closest", 0.3, "fallback", behind="wrong"),
            payload(True, "refused", 0.2, "fallback", behind="correct"), payload(True, "refused", None, "fallback"),
            payload(False, "answer", 0.95, "wrong"), payload(False, "closest", 0.5, "fallback", behind="wrong"),
            payload(False, "refused", 0.1, "fallback", behind="wrong"),
            payload(False, "refused", 0.9, "fallback", status="fallback")]  # finalize refused the answer the gate let through
