"""Made-up gates and retrievals for the three-outcome gate's tests (tests/test_abstention.py,
the lab's tuning and gold-run tests): a gate that reads only the best cosine, with the cuts a test
chooses, and a retrieval with the leg scores a test chooses. The shipped model is tested as
shipped in tests/test_abstention.py."""

from __future__ import annotations

import dataclasses

from ragcore.core import Source
from ragcore.retrieval import (
    ABSTENTION_FEATURE_NAMES,
    QUOTE_FEATURE_NAMES,
    AbstentionModel,
    Evidence,
    QuoteCheck,
    Retrieval,
)
from ragcore.retrieval.hybrid import Hit


def _source(rank: int, chunk_id: int) -> Source:
    return Source(rank, chunk_id, 1, "6331", "6331.pdf", 3, 3, "Madde 10", 0.5, "metin")


def gate_retrieval(cosines: list[float | None], lexical: list[float | None], coverage: float = 0.5) -> Retrieval:
    """A retrieval whose hits carry these dense and lexical scores (None: not found by that leg)."""
    hits = [Hit(_source(i + 1, 100 + i), c, b) for i, (c, b) in enumerate(zip(cosines, lexical, strict=True))]
    evidence = Evidence(max((c for c in cosines if c is not None), default=None),
                        max((b for b in lexical if b is not None), default=None), coverage, len(hits))
    return Retrieval("soru", "isg", "weighted", hits, evidence, 1.0, {})


def gate_model(answer_at: float, closest_at: float, cosine_weight: float = 8.0) -> AbstentionModel:
    """A gate reading only the best cosine (centred at 0.8) with these cuts."""
    names = ABSTENTION_FEATURE_NAMES
    coefficients = tuple(cosine_weight if n == "cosine" else 0.0 for n in names)
    return AbstentionModel(names, coefficients, 0.0, tuple(0.8 if n == "cosine" else 0.0 for n in names),
                           tuple(0.05 if n == "cosine" else 1.0 for n in names), answer_at, closest_at, "test")


def with_quote_cut(model: AbstentionModel, quote_at: float, best_weight: float = 4.0) -> AbstentionModel:
    """A quote check that reads only the quoter's best-sentence probability, with this cut."""
    names = QUOTE_FEATURE_NAMES
    check = QuoteCheck(names, tuple(best_weight if n == "best_sentence" else 0.0 for n in names), 0.0,
                       tuple(0.5 if n == "best_sentence" else 0.0 for n in names), tuple(1.0 for _ in names), quote_at)
    return dataclasses.replace(model, quote_check=check)
