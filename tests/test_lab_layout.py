"""The lab's table layout (issue 22): the results table a reader compares at a glance is narrow
(the rest goes under "Bütün ölçüler"), and an answer's quote markers never show in a cell.
The browser measures the same at 1280 and 1920 px (tests/test_browser_layout.py)."""

from __future__ import annotations

import pandas as pd

from eval.gold_report import results_rows
from eval.gold_stats import metric_label
from tests.test_eval_charts import SUMMARY
from ui.lab_common import LONG_TEXT, _width, unquoted
from ui.lab_gold_runs import key_columns


def _summary(primary: str) -> dict:
    configurations = [{**c, "index": {"seconds": 1.5, "chunks": 7}} for c in SUMMARY["configurations"]]
    return {"configurations": configurations, "recommendation": {"best": configurations[0]["key"]},
            "run": {"configuration": {"primary": primary}}}


def test_the_results_table_shows_name_note_primary_measure_answers_and_leaks() -> None:
    for primary in ("ndcg@10", "recall@5"):
        label = metric_label(primary)  # the plain Turkish name the table's column carries
        summary = _summary(primary)
        rows = results_rows(summary)
        narrow = key_columns(rows, summary)
        names = list(rows[0])
        assert list(narrow[0]) == [names[0], names[1], label, "Doğru (cevaplanabilir)", "İzin sızıntısı"]
        assert {"Doğru (cevaplanabilir)", "İzin sızıntısı"} <= set(names)  # the names key_columns relies on
        assert [r[names[0]] for r in narrow] == [c["label"] for c in summary["configurations"]]


def test_free_text_gets_a_bounded_width_and_short_values_their_own() -> None:
    assert _width(pd.Series(["0,926 [0,880; 0,950]", "—"])) is None  # as wide as it is: never cut short
    assert _width(pd.Series(["x" * (LONG_TEXT + 1)])) == "large"


def test_a_quoted_answer_loses_its_markers_in_a_cell() -> None:
    answer = "İş Kanunu, Madde 53'e göre:\n\n> “c) Beş yıldan fazla …” [1]\n> “d) …” [2]"
    assert unquoted(answer) == "İş Kanunu, Madde 53'e göre:\n\n“c) Beş yıldan fazla …” [1]\n“d) …” [2]"
