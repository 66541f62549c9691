"""How a lab chart is laid out, for every builder (eval/charts.py, eval/gold_charts.py) alike.

On the page a chart takes its column's width (`width="container"`) and fits only sideways
(`fit-x`): its height is the plot's own, so a legend or an axis title adds height instead of
squashing the plot (Streamlit's default `fit` squeezes all of them into the given height, which
is how the abstention curve ended up a thumbnail). Legends go below the plot, one entry a line,
so a long configuration name neither narrows the plot nor runs into the next column; names are
never cut short (`LABEL_LIMIT`, Vega's default cuts at 180 px: "use · ağırlıklı · 100…").
Shares are drawn on a fixed 0–100 % axis so two runs' charts can be compared by eye.

An exported image (the HTML report, scripts/render_charts.py) has no container to fill, so
`for_export` gives it a fixed width.
"""

from __future__ import annotations

from typing import TypeVar

import altair as alt

LABEL_LIMIT = 480  # px; a configuration's name is about 300 px at the default font
EXPORT_WIDTH = 720  # px; the HTML report's column is 960 px wide
BAR_STEP = 30  # px per bar of a horizontal bar chart
AUTOSIZE = alt.AutoSizeParams(type="fit-x", contains="padding")

Chart = TypeVar("Chart", bound=alt.TopLevelMixin)

# One colour per result in every chart (eval.labels.RESULT_LABELS): green right, red wrong, amber
# the closest passages (sent to review), grey the refusal.
RESULT_COLOURS = {"correct": "#2e7d32", "wrong": "#c62828", "closest": "#f9a825", "refused": "#9e9e9e",
                  "answered": "#1565c0"}


def legend() -> alt.Legend:
    """A legend below the plot, one entry a line, names in full."""
    return alt.Legend(orient="bottom", direction="vertical", labelLimit=LABEL_LIMIT, titleLimit=LABEL_LIMIT)


def category_axis(**options: object) -> alt.Axis:
    """An axis of names (configurations, groups) that shows each name in full."""
    return alt.Axis(labelLimit=LABEL_LIMIT, **options)


def share_scale() -> alt.Scale:
    """0–100 % whatever the data: a share of 0,5 is half the axis in every chart."""
    return alt.Scale(domain=[0, 1])


def share_axis() -> alt.Axis:
    return alt.Axis(format=".0%")


def bars(per_category: int = 1) -> alt.Step:
    """A bar chart's height along its categories: BAR_STEP per bar, however many there are."""
    return alt.Step(BAR_STEP * per_category)


def colour_scale(labels: dict[str, str], results: tuple[str, ...] | list[str]) -> alt.Scale:
    """The results' colours (RESULT_COLOURS) for the shown names `labels[result]`."""
    return alt.Scale(domain=[labels[r] for r in results], range=[RESULT_COLOURS[r] for r in results])


def page_sized(chart: Chart, height: int | alt.Step) -> Chart:
    """The chart as the page draws it: its column's width, its plot `height` high."""
    return chart.properties(width="container", height=height, autosize=AUTOSIZE)


def for_export(chart: Chart, width: int = EXPORT_WIDTH) -> Chart:
    """The chart with a fixed width, for an image outside the page (there is no container)."""
    return chart.properties(width=width)
