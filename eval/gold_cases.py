"""A gold run's cases: a gold question asked by one of its roles, and the key a case's result is
stored under; shared by the run (`eval.gold_run`) and its report (`eval.gold_report`)."""

from __future__ import annotations

from collections.abc import Sequence

from eval.goldset import GoldQuestion


def cases_of(gold: Sequence[GoldQuestion]) -> list[tuple[GoldQuestion, str]]:
    """(question, asking role) in gold order: the unit every metric averages over."""
    return [(q, role) for q in gold for role in q.roles]


def case_key(question: GoldQuestion, role: str) -> str:
    return f"{question.id}|{role}"
