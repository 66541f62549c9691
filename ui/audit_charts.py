"""The usage dashboard's Altair charts (Denetim page), drawn from `ragcore.audit.usage`'s figures.

Turkish titles and axes; the column's width and a fixed plot height (or BAR_STEP per bar), legends
below, names in full, so each chart reads at 1280×800 without scrolling sideways. Outcomes keep
the lab's colours (`eval.chart_layout.RESULT_COLOURS`: blue answered, amber closest, grey refused;
red an error), and numbers the Turkish locale (`eval.gold_charts.turkish`).
"""

from __future__ import annotations

from datetime import timedelta

import altair as alt
import pandas as pd

from eval.chart_layout import RESULT_COLOURS, bars, category_axis, legend, page_sized, share_axis, share_scale
from eval.gold_charts import turkish
from ragcore.audit import OUTCOME_LABELS, Usage

HEIGHT = 260
MIN_DAYS = 14  # the per-day chart spans at least two weeks
OUTCOME_ORDER = ("answer", "closest", "refused", "error")
OUTCOME_COLOURS = {"answer": RESULT_COLOURS["answered"], "closest": RESULT_COLOURS["closest"],
                   "refused": RESULT_COLOURS["refused"], "error": RESULT_COLOURS["wrong"]}
# Words, not 👍/👎: the charts' font draws no emoji.
FEEDBACK_NAMES = {1: "Olumlu", -1: "Olumsuz", 0: "Geri bildirim yok"}
FEEDBACK_COLOURS = {1: "#2e7d32", -1: "#c62828", 0: "#bdbdbd"}


def _outcome_scale() -> alt.Scale:
    return alt.Scale(domain=[OUTCOME_LABELS[o] for o in OUTCOME_ORDER],
                     range=[OUTCOME_COLOURS[o] for o in OUTCOME_ORDER])


def _days_shown(figures: Usage) -> list[str]:
    """At least MIN_DAYS days on the axis, so a day's bar stays a bar and not the whole width."""
    days = [day for day, _, _ in figures.per_day]
    first, last = min(days), max(days)
    first = min(first, last - timedelta(days=MIN_DAYS - 1))  # the weeks before the last day asked
    return [first.isoformat(), (last + timedelta(days=1)).isoformat()]


def questions_per_day(figures: Usage) -> alt.TopLevelMixin:
    """One bar a day, split by outcome."""
    data = pd.DataFrame([{"gün": pd.Timestamp(day), "sonuç": OUTCOME_LABELS[o], "soru": n}
                         for day, o, n in figures.per_day], columns=["gün", "sonuç", "soru"])
    chart = alt.Chart(data).mark_bar().encode(
        x=alt.X("yearmonthdate(gün):T", title="Gün", scale=alt.Scale(domain=_days_shown(figures)),
                axis=alt.Axis(format="%d.%m", labelAngle=0, labelOverlap=True)),
        y=alt.Y("sum(soru):Q", title="Soru sayısı", axis=alt.Axis(tickMinStep=1)),
        color=alt.Color("sonuç:N", title="Sonuç", scale=_outcome_scale(), legend=legend()),
        tooltip=[alt.Tooltip("yearmonthdate(gün):T", title="Gün", format="%d.%m.%Y"), alt.Tooltip("sonuç:N", title="Sonuç"),
                 alt.Tooltip("sum(soru):Q", title="Soru")])
    return turkish(page_sized(chart.properties(title="Günlük soru sayısı"), HEIGHT))


def outcome_shares(figures: Usage) -> alt.TopLevelMixin:
    """Each outcome's share of the questions, 0–100 %."""
    total = figures.total or 1
    data = pd.DataFrame([{"sonuç": OUTCOME_LABELS[o], "pay": figures.outcomes.get(o, 0) / total,
                          "soru": figures.outcomes.get(o, 0)} for o in OUTCOME_ORDER])
    chart = alt.Chart(data).mark_bar().encode(
        y=alt.Y("sonuç:N", title=None, sort=[OUTCOME_LABELS[o] for o in OUTCOME_ORDER], axis=category_axis()),
        x=alt.X("pay:Q", title="Soruların payı", scale=share_scale(), axis=share_axis()),
        color=alt.Color("sonuç:N", scale=_outcome_scale(), legend=None),
        tooltip=[alt.Tooltip("sonuç:N", title="Sonuç"), alt.Tooltip("pay:Q", title="Pay", format=".1%"),
                 alt.Tooltip("soru:Q", title="Soru")])
    return turkish(page_sized(chart.properties(title="Sonuçların payı"), bars()))


def cited_documents(figures: Usage) -> alt.TopLevelMixin:
    """The documents answers cited most, by the number of questions."""
    data = pd.DataFrame([{"doküman": title, "soru": n} for title, n in figures.cited_documents],
                        columns=["doküman", "soru"])
    chart = alt.Chart(data).mark_bar(color=RESULT_COLOURS["answered"]).encode(
        y=alt.Y("doküman:N", title=None, sort="-x", axis=category_axis()),
        x=alt.X("soru:Q", title="Kaynak gösterildiği soru sayısı", axis=alt.Axis(tickMinStep=1)),
        tooltip=[alt.Tooltip("doküman:N", title="Doküman"), alt.Tooltip("soru:Q", title="Soru")])
    return turkish(page_sized(chart.properties(title="En çok kaynak gösterilen dokümanlar"),
                              bars()))


def unanswered(figures: Usage) -> alt.TopLevelMixin:
    """The questions most often left without an answer (the same question in other words counts once)."""
    data = pd.DataFrame([{"soru": g.question, "kez": g.count} for g in figures.unanswered], columns=["soru", "kez"])
    chart = alt.Chart(data).mark_bar(color=RESULT_COLOURS["refused"]).encode(
        y=alt.Y("soru:N", title=None, sort="-x", axis=category_axis()),
        x=alt.X("kez:Q", title="Kaç kez soruldu", axis=alt.Axis(tickMinStep=1)),
        tooltip=[alt.Tooltip("soru:N", title="Soru"), alt.Tooltip("kez:Q", title="Kez")])
    return turkish(page_sized(chart.properties(title="En sık cevapsız kalan sorular"), bars()))


def ratings(figures: Usage) -> alt.TopLevelMixin:
    """How the askers rated their answers."""
    order = (1, -1, 0)
    data = pd.DataFrame([{"geri bildirim": FEEDBACK_NAMES[v], "soru": figures.feedback.get(v, 0)} for v in order])
    chart = alt.Chart(data).mark_bar().encode(
        y=alt.Y("geri bildirim:N", title=None, sort=[FEEDBACK_NAMES[v] for v in order], axis=category_axis()),
        x=alt.X("soru:Q", title="Soru sayısı", axis=alt.Axis(tickMinStep=1)),
        color=alt.Color("geri bildirim:N", legend=None, scale=alt.Scale(
            domain=[FEEDBACK_NAMES[v] for v in order], range=[FEEDBACK_COLOURS[v] for v in order])),
        tooltip=[alt.Tooltip("geri bildirim:N", title="Geri bildirim"), alt.Tooltip("soru:Q", title="Soru")])
    return turkish(page_sized(chart.properties(title="Kullanıcıların geri bildirimi"), bars()))
