"""The lab's table layout (issue 22): the results table a reader compares at a glance is narrow
(the rest goes under "Bütün ölçüler"), and an answer's quote markers never show in a cell.
The browser measures the same at 1280 and 1920 px (tests/test_browser_layout.py)."""

from __future__ import annotations

import pandas as pd

from eval import chart_layout, gold_charts
from eval.gold_report import results_rows
from eval.gold_stats import metric_label
from tests.test_eval_charts import SUMMARY, SUMMARY_THREE
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


# --------------------------------------------------------------------------- charts in a column at 1280×800

EDGE_PX = 3  # Vega's padding is 5 px: anything drawn this close to the edge ran past the chart


def _drawn_at_the_edges(chart, width: int) -> dict[str, int]:
    """How many pixels the chart, drawn `width` px wide as the page draws it (fit-x), paints in its
    outer EDGE_PX on each side: a title, axis title or legend longer than the column is cut there."""
    import io

    import numpy as np
    import vl_convert
    from PIL import Image

    spec = gold_charts.turkish(chart).properties(width=width).to_dict()
    image = np.asarray(Image.open(io.BytesIO(vl_convert.vegalite_to_png(spec, scale=1))).convert("RGB")).astype(int)
    painted = np.abs(image - image[-1, -1]).sum(axis=-1) > 60  # the bottom-right pixel is background
    return {"left": int(painted[:, :EDGE_PX].sum()), "right": int(painted[:, -EDGE_PX:].sum()),
            "top": int(painted[:EDGE_PX].sum())}


def _column_charts() -> list[tuple[str, object]]:
    """The charts the page draws two to a row: the recall curves and the threshold curves."""
    key = SUMMARY_THREE["configurations"][0]["key"]
    return [("recall_curves", gold_charts.recall_curves(SUMMARY)),
            ("abstention_curve", gold_charts.abstention_curve(SUMMARY)),
            *((f"outcome_curve {group}", gold_charts.outcome_curve(SUMMARY_THREE, key, group))
              for group in gold_charts.GROUP_LABELS)]


def test_threshold_charts_keep_titles_axes_and_legends_inside_a_column_at_1280() -> None:
    problems = {name: edges for name, chart in _column_charts()
                if any((edges := _drawn_at_the_edges(chart, chart_layout.COLUMN_WIDTH)).values())}
    assert not problems, problems


def test_the_edge_check_sees_a_title_cut_by_its_column() -> None:
    long_title = gold_charts.recall_curves(SUMMARY).properties(title="Çok uzun bir başlık " * 6)
    assert _drawn_at_the_edges(long_title, chart_layout.COLUMN_WIDTH)["left"] > 0
