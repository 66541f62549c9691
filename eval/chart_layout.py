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

A title or an axis title is one line of text that Vega neither wraps nor shrinks: in a column of
two at 1280×800 a long one ran past the chart's edges and was cut. So long titles are broken into
lines (`chart_title`, `axis_title`) short enough for the narrowest column (COLUMN_WIDTH), and a chart's
second legend goes above the plot (`top_legend`) instead of beside the first, where it ran out of
the column.
"""

from __future__ import annotations

import textwrap
from typing import TypeVar

import altair as alt

LABEL_LIMIT = 480  # px; a configuration's name is about 300 px at the default font
EXPORT_WIDTH = 720  # px; the HTML report's column is 960 px wide
BAR_STEP = 30  # px per bar of a horizontal bar chart
COLUMN_WIDTH = 400  # px; the narrowest column a lab chart is drawn in (one of two at 1280×800)
TITLE_CHARS = 36  # characters of a title's line: about 280 px of 13 px bold, inside COLUMN_WIDTH
SUBTITLE_CHARS = 52  # the subtitle's font is smaller
AXIS_TITLE_CHARS = 44  # an axis title's line (11 px bold); a y axis title runs along a 300 px plot
AUTOSIZE = alt.AutoSizeParams(type="fit-x", contains="padding")

Chart = TypeVar("Chart", bound=alt.TopLevelMixin)

# One colour per result in every chart (eval.labels.RESULT_LABELS): green right, red wrong, amber
# the closest passages (sent to review), grey the refusal.
RESULT_COLOURS = {"correct": "#2e7d32", "wrong": "#c62828", "closest": "#f9a825", "refused": "#9e9e9e",
                  "answered": "#1565c0"}


def legend() -> alt.Legend:
    """A legend below the plot, one entry a line, names in full."""
    return alt.Legend(orient="bottom", direction="vertical", labelLimit=LABEL_LIMIT, titleLimit=LABEL_LIMIT)


def top_legend() -> alt.Legend:
    """A chart's second legend: above the plot, so that it never sits beside the first one."""
    return alt.Legend(orient="top", direction="vertical", labelLimit=LABEL_LIMIT, titleLimit=LABEL_LIMIT)


def lines(text: str, chars: int) -> list[str]:
    """`text` broken at spaces into lines of at most `chars` characters (a Vega multi-line text)."""
    return textwrap.wrap(text, chars, break_long_words=False) or [text]


def chart_title(text: str, subtitle: str | None = None) -> alt.TitleParams:
    """A chart title that fits COLUMN_WIDTH: broken into lines, the subtitle (a configuration's
    name) on lines of its own."""
    if subtitle is None:
        return alt.TitleParams(text=lines(text, TITLE_CHARS))
    return alt.TitleParams(text=lines(text, TITLE_CHARS), subtitle=lines(subtitle, SUBTITLE_CHARS))


def axis_title(text: str) -> list[str]:
    return lines(text, AXIS_TITLE_CHARS)


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
