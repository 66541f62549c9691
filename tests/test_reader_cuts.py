"""The reader's cut pair (eval/reader/cuts.py), chosen on held-back questions: pure arithmetic."""

from __future__ import annotations

from eval.reader.cuts import CalibrationCase, choose_cuts


def _cases() -> list[CalibrationCase]:
    answerable = [CalibrationCase(f"a{i}", True, top, right)
                  for i, (top, right) in enumerate([(0.18, False), (0.3, False), (0.5, True), (0.7, True),
                                                    (0.9, True), (0.95, True)] + [(0.6, False)] * 14)]
    unanswerable = [CalibrationCase(f"u{i}", False, top, False) for i, top in enumerate([0.05, 0.1, 0.4, 0.8])]
    return answerable + unanswerable


def test_the_default_closest_cut_refuses_no_held_back_answerable_question():
    cuts = choose_cuts(_cases())
    assert cuts.closest_recall == 0.0
    assert cuts.closest == 0.18  # the lowest answerable top score: every answerable case keeps its passages
    assert cuts.closest <= cuts.answer


def test_a_closest_recall_lets_that_share_fall_below():
    cuts = choose_cuts(_cases(), 0.1)
    below = [c for c in _cases() if c.answerable and c.top < cuts.closest]
    assert cuts.closest > 0.18 and 1 <= len(below) <= 2


def test_the_answer_cut_keeps_unanswerable_and_wrong_answers_within_budget():
    cuts = choose_cuts(_cases())
    assert cuts.answer == 0.9  # 0.8 would answer an unanswerable question (1 of 4 is over the 4 % budget)
    assert (cuts.right_above, cuts.wrong_above, cuts.unanswerable_above) == (2, 0, 0)


def test_reading_fewer_candidates_leaves_the_rest_in_retrievals_order():
    from eval.reader.cuts import RankedCase, candidates_table, fusion_quality

    # Retrieval put the relevant chunk fifth; the reader scores it highest.
    case = RankedCase((0.2, 0.1, 0.3, 0.1, 0.9, 0.0), (False, False, False, False, True, False))
    assert fusion_quality([case], 0.0)["recall@1"] == 1.0
    read_four = fusion_quality([case], 0.0, read=4)  # the reader never sees it: it stays fifth
    assert read_four == {"recall@1": 0.0, "recall@5": 1.0, "mrr@10": 0.2}
    table = candidates_table([case], 0.0)
    assert set(table) == {"4", "6"} and table["6"]["recall@1"] == 1.0  # 8 and more were never recorded
