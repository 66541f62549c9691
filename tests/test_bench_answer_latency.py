"""The answer-latency benchmark's cards: one per candidate count, so a trial with fewer
candidates never overwrites the default's card that the docs cite."""

from bench.answer_latency import card_name


def test_each_candidate_count_has_its_own_card() -> None:
    assert card_name(6, 6) == "answer_latency"
    assert card_name(12, 6) == "answer_latency-12"
    assert card_name(8, 6) == "answer_latency-8"
