"""Altair charts of a gold run, drawn from its summary.json alone (the page and the HTML report
draw the same charts): a metric with its CI per configuration, Recall@k curves, the abstention
curve with today's operating point — or, when the gate has a three-outcome model, the
three-outcome curve of each configuration and group —, what the user met (answer outcomes),
latency, and the leak count. Results have one colour each everywhere (`RESULT_COLOURS`).

Sizes, legends and share axes follow `eval.chart_layout` (the column's width, legends below,
0–100 % for shares). Numbers use the Turkish locale (decimal comma, thousands dot) through Vega's own `locale`
config, so axes and tooltips read 0,926 in the browser and in the exported SVG alike.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from eval.chart_layout import (
    RESULT_COLOURS,
    axis_title,
    bars,
    category_axis,
    chart_title,
    colour_scale,
    legend,
    page_sized,
    share_axis,
    share_scale,
    top_legend,
)
from eval.gold_stats import RESULTS, metric_label
from eval.labels import RESULT_LABELS, UNANSWERABLE_RESULT_LABELS

TURKISH = alt.Locale(number=alt.NumberLocale(decimal=",", thousands=".", grouping=[3], currency=["", " ₺"]))
OUTCOME_LABELS = {"correct": "doğru", "fallback": "cevap yok (geri çekilme)", "wrong": "yanlış"}
OUTCOME_COLOURS = {"doğru": RESULT_COLOURS["correct"], "cevap yok (geri çekilme)": RESULT_COLOURS["refused"],
                   "yanlış": RESULT_COLOURS["wrong"], "doğru (geri çekilme)": "#66bb6a"}
GROUP_LABELS = {"answerable": "cevaplanabilir", "unanswerable": "cevaplanamaz"}
GROUP_RESULT_LABELS = {"answerable": RESULT_LABELS, "unanswerable": UNANSWERABLE_RESULT_LABELS}
HEIGHT = 300


def turkish(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """The chart with the Turkish number locale (call last: `configure` makes it top-level)."""
    return chart.configure(locale=TURKISH)


def _labels(summary: dict) -> list[str]:
    return [c["label"] for c in summary["configurations"]]


def metric_frame(summary: dict, metric: str) -> pd.DataFrame:
    rows = []
    for c in summary["configurations"]:
        value = c["retrieval"].get(metric)
        if value and value.get("mean") is not None:
            rows.append({"yapılandırma": c["label"], "ortalama": value["mean"], "alt": value["ci"][0],
                         "üst": value["ci"][1]})
    return pd.DataFrame(rows, columns=["yapılandırma", "ortalama", "alt", "üst"])


def metric_with_ci(summary: dict, metric: str = "ndcg@10") -> alt.LayerChart:
    """One bar per configuration with its 95 % bootstrap interval."""
    data = metric_frame(summary, metric)
    name = metric_label(metric)
    base = alt.Chart(data).encode(y=alt.Y("yapılandırma:N", title=None, sort=_labels(summary), axis=category_axis()))
    axis = share_axis() if metric.startswith("recall") else alt.Axis(format=".1f", tickMinStep=0.1)  # not shares
    means = base.mark_bar(color="#1565c0").encode(
        x=alt.X("ortalama:Q", title=name, scale=share_scale(), axis=axis),
        tooltip=["yapılandırma", alt.Tooltip("ortalama:Q", format=".3f", title=name),
                 alt.Tooltip("alt:Q", format=".3f", title="güven aralığı alt"), alt.Tooltip("üst:Q", format=".3f", title="güven aralığı üst")])
    errors = base.mark_errorbar(ticks=True, color="black").encode(x=alt.X("alt:Q", title=name), x2="üst:Q")
    return page_sized((means + errors).properties(title=f"{name} (%95 güven aralığı)"), bars())


def recall_curves(summary: dict) -> alt.Chart:
    rows = [{"yapılandırma": c["label"], "k": k, "recall": value}
            for c in summary["configurations"] for k, value in enumerate(c.get("recall_curve", []), start=1)]
    data = pd.DataFrame(rows, columns=["yapılandırma", "k", "recall"])
    chart = alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("k:O", title="k (ilk k kaynak)"),
        y=alt.Y("recall:Q", title="ilk k sonuçta bulma oranı", scale=share_scale(), axis=share_axis()),
        color=alt.Color("yapılandırma:N", title="yapılandırma", sort=_labels(summary), legend=legend()),
        tooltip=["yapılandırma", "k", alt.Tooltip("recall:Q", format=".3f", title="bulma oranı")],
    ).properties(title=chart_title("İlk k sonuçta bulma oranı"))
    return page_sized(chart, HEIGHT)


def abstention_frame(summary: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, points = [], []
    for c in summary["configurations"]:
        curve = c.get("abstention") or {}
        for p in curve.get("points", []):
            if p["selective_accuracy"] is not None:
                rows.append({"yapılandırma": c["label"], "eşik": p["threshold"], "kapsam": p["coverage"],
                             "seçici doğruluk": p["selective_accuracy"], "doğruluk": p["accuracy"]})
        op = curve.get("operating_point")
        if op and op["selective_accuracy"] is not None:
            points.append({"yapılandırma": c["label"], "eşik": op["threshold"], "kapsam": op["coverage"],
                           "seçici doğruluk": op["selective_accuracy"], "doğruluk": op["accuracy"]})
    columns = ["yapılandırma", "eşik", "kapsam", "seçici doğruluk", "doğruluk"]
    return pd.DataFrame(rows, columns=columns), pd.DataFrame(points, columns=columns)


def abstention_curve(summary: dict) -> alt.LayerChart:
    """Coverage against selective accuracy as the evidence threshold moves; ◆ = today's threshold."""
    curve, operating = abstention_frame(summary)
    tooltip = ["yapılandırma", alt.Tooltip("eşik:Q", format=".3f"), alt.Tooltip("kapsam:Q", format=".1%"),
               alt.Tooltip("seçici doğruluk:Q", format=".1%"), alt.Tooltip("doğruluk:Q", format=".1%")]
    x = alt.X("kapsam:Q", title=axis_title("kapsam (cevaplanan vakaların payı)"), scale=share_scale(),
              axis=share_axis())
    y = alt.Y("seçici doğruluk:Q", title=axis_title("seçici doğruluk (cevaplananlar içinde doğru)"), scale=share_scale(),
              axis=share_axis())
    colour = alt.Color("yapılandırma:N", title="yapılandırma", sort=_labels(summary), legend=legend())
    lines = alt.Chart(curve).mark_line(interpolate="step-after", point=True).encode(
        x=x, y=y, color=colour, order="eşik:Q", tooltip=tooltip)
    marks = alt.Chart(operating).mark_point(shape="diamond", size=220, filled=True, stroke="black").encode(
        x=x, y=y, color=colour, tooltip=tooltip)
    return page_sized((lines + marks).properties(title=chart_title("Geri çekilme eğrisi (◆ bugünkü eşik)")), HEIGHT)


def outcomes_frame(summary: dict) -> pd.DataFrame:
    """Per configuration and group the share of each outcome: what the user met (RESULTS) when
    the run recorded it, else the older correct / no answer / wrong."""
    rows = []
    for c in summary["configurations"]:
        shown = c.get("gate_outcomes")
        if shown:
            for group in GROUP_LABELS:
                rates = shown[group]["rates"]
                for result in RESULTS:
                    if rates[result]["mean"] is not None:
                        rows.append({"yapılandırma": c["label"], "grup": GROUP_LABELS[group],
                                     "sonuç": GROUP_RESULT_LABELS[group][result], "pay": rates[result]["mean"]})
            continue
        for group, wanted in (("answerable", ("correct", "fallback", "wrong")), ("unanswerable", ("fallback", "wrong"))):
            rates = (c["answers"].get(group) or {}).get("rates", {})
            for outcome in wanted:
                value = rates.get(outcome)
                if value and value.get("mean") is not None:
                    label = "doğru (geri çekilme)" if group == "unanswerable" and outcome == "fallback" else OUTCOME_LABELS[outcome]
                    rows.append({"yapılandırma": c["label"], "grup": GROUP_LABELS[group],
                                 "sonuç": label, "pay": value["mean"]})
    return pd.DataFrame(rows, columns=["yapılandırma", "grup", "sonuç", "pay"])


def answer_outcomes(summary: dict, group: str = "answerable") -> alt.Chart:
    """One question group's outcomes, a bar per configuration reaching 100 %.

    One chart per group rather than a faceted one: a facet cannot take its column's width."""
    data = outcomes_frame(summary)
    data = data[data["grup"] == GROUP_LABELS[group]]
    labels = GROUP_RESULT_LABELS[group]
    known = {**OUTCOME_COLOURS, **{labels[r]: RESULT_COLOURS[r] for r in RESULTS}}
    colours = {k: v for k, v in known.items() if k in set(data["sonuç"])} or OUTCOME_COLOURS
    chart = alt.Chart(data).mark_bar().encode(
        y=alt.Y("yapılandırma:N", title=None, sort=_labels(summary), axis=category_axis()),
        x=alt.X("pay:Q", title="pay", stack="normalize", scale=share_scale(), axis=share_axis()),
        color=alt.Color("sonuç:N", title="sonuç", legend=legend(),
                        scale=alt.Scale(domain=list(colours), range=list(colours.values()))),
        tooltip=["yapılandırma", "grup", "sonuç", alt.Tooltip("pay:Q", format=".1%")],
    ).properties(title=f"Cevap sonuçları: {GROUP_LABELS[group]} sorular")
    return page_sized(chart, bars())


def outcome_curve_frame(summary: dict, key: str, group: str = "answerable") -> tuple[pd.DataFrame, dict | None]:
    """One configuration's three-outcome curve for one group, long (a row per cut × result), and
    its two cuts ({"answer_at", "closest_at"}; None when the configuration has no such curve)."""
    columns = ["eşik", "sonuç", "pay", "sıra"]
    config = next((c for c in summary["configurations"] if c["key"] == key), None)
    curve = (config or {}).get("outcome_curve")
    if not curve:
        return pd.DataFrame([], columns=columns), None
    labels = GROUP_RESULT_LABELS[group]
    rows = [{"eşik": p["answer_at"], "sonuç": labels[r], "pay": p[group][r], "sıra": n}
            for p in curve["points"] if p[group]["n"] for n, r in enumerate(RESULTS)]
    return pd.DataFrame(rows, columns=columns), {"answer_at": curve["answer_at"], "closest_at": curve["closest_at"]}


def outcome_curve(summary: dict, key: str, group: str = "answerable") -> alt.LayerChart:
    """As the answer cut moves: the shares of correct and wrong answers, closest passages and
    refusals in one group; the solid rule is the model's answer cut, the dashed one its closest-
    passages cut (kept where it is along the curve)."""
    data, cuts = outcome_curve_frame(summary, key, group)
    labels = GROUP_RESULT_LABELS[group]
    label = next((c["label"] for c in summary["configurations"] if c["key"] == key), key)
    x = alt.X("eşik:Q", title=axis_title("cevap eşiği (modelin olasılığı en az bu kadarsa cevap verilir)"),
              scale=share_scale(), axis=alt.Axis(format=".1f", values=[n / 10 for n in range(11)]))
    lines = alt.Chart(data).mark_line(interpolate="step-before").encode(
        x=x, y=alt.Y("pay:Q", title=axis_title(f"{GROUP_LABELS[group]} vakaların payı"), scale=share_scale(), axis=share_axis()),
        color=alt.Color("sonuç:N", title="sonuç", legend=legend(), scale=colour_scale(labels, RESULTS)),
        order="eşik:Q",
        tooltip=["sonuç", alt.Tooltip("eşik:Q", format=".3f", title="cevap eşiği"),
                 alt.Tooltip("pay:Q", format=".1%")])
    marks = pd.DataFrame([{"eşik": cuts["answer_at"], "çizgi": "bugünkü cevap eşiği"},
                          {"eşik": cuts["closest_at"], "çizgi": "en yakın parçalar eşiği"}] if cuts else [],
                         columns=["eşik", "çizgi"])
    rules = alt.Chart(marks).mark_rule(color="black").encode(
        x="eşik:Q", strokeDash=alt.StrokeDash("çizgi:N", title="model", legend=top_legend(),
                                              scale=alt.Scale(domain=["bugünkü cevap eşiği", "en yakın parçalar eşiği"],
                                                              range=[[1, 0], [4, 4]])),
        tooltip=["çizgi", alt.Tooltip("eşik:Q", format=".3f")])
    title = chart_title(f"Cevap, en yakın parçalar ve ret: {GROUP_LABELS[group]} sorular", label)
    return page_sized((lines + rules).properties(title=title), HEIGHT)


def outcome_curve_keys(summary: dict) -> list[str]:
    """The configurations whose gate has a three-outcome model (their curve was recorded)."""
    return [c["key"] for c in summary["configurations"] if c.get("outcome_curve")]


PERCENTILE_WORDS = {"p50": "ortanca", "p95": "en yavaş %5"}


def latency_frame(summary: dict) -> pd.DataFrame:
    rows = []
    for c in summary["configurations"]:
        for what, key in (("arama", "retrieval_ms"), ("cevap", "answer_ms")):
            value = c["latency"].get(key) or {}
            for pct in ("p50", "p95"):
                if value.get(pct) is not None:
                    rows.append({"yapılandırma": c["label"], "ölçüm": f"{what} {PERCENTILE_WORDS[pct]}", "ms": value[pct]})
    return pd.DataFrame(rows, columns=["yapılandırma", "ölçüm", "ms"])


def latency(summary: dict) -> alt.Chart:
    data = latency_frame(summary)
    chart = alt.Chart(data).mark_bar().encode(
        y=alt.Y("yapılandırma:N", title=None, sort=_labels(summary), axis=category_axis()),
        x=alt.X("ms:Q", title="milisaniye"), color=alt.Color("ölçüm:N", title="ölçüm", legend=legend()),
        yOffset="ölçüm:N", tooltip=["yapılandırma", "ölçüm", alt.Tooltip("ms:Q", format=",.0f")],
    ).properties(title="Süre (ortanca / en yavaş %5)")
    return page_sized(chart, bars(max(1, data["ölçüm"].nunique())))


def leaks(summary: dict) -> alt.Chart:
    data = pd.DataFrame([{"yapılandırma": c["label"], "sızıntı": c["leaks"]["count"]}
                         for c in summary["configurations"]], columns=["yapılandırma", "sızıntı"])
    chart = alt.Chart(data).mark_bar().encode(
        y=alt.Y("yapılandırma:N", title=None, sort=_labels(summary), axis=category_axis()),
        x=alt.X("sızıntı:Q", title="okuma izni olmayan belgeden gelen kaynak sayısı (0 olmalı)",
                scale=alt.Scale(domainMin=0), axis=alt.Axis(tickMinStep=1, format="d")),
        color=alt.condition(alt.datum["sızıntı"] > 0, alt.value("#c62828"), alt.value("#2e7d32")),
        tooltip=["yapılandırma", "sızıntı"],
    ).properties(title="İzin sızıntıları")
    return page_sized(chart, bars())


def all_charts(summary: dict, metrics: Sequence[str] = ("ndcg@10", "recall@5")) -> list[tuple[str, alt.TopLevelMixin]]:
    """(title, chart) of every chart of a run, in the report's order."""
    charts: list[tuple[str, alt.TopLevelMixin]] = [
        (f"{metric_label(m)} ve güven aralığı", metric_with_ci(summary, m)) for m in metrics]
    charts.append(("İlk k sonuçta bulma oranı", recall_curves(summary)))
    three = outcome_curve_keys(summary)
    if len(three) < len(summary["configurations"]):  # the single threshold decides somewhere
        charts.append(("Geri çekilme eğrisi", abstention_curve(summary)))
    labels = {c["key"]: c["label"] for c in summary["configurations"]}
    charts += [(f"Cevap, en yakın parçalar ve ret: {GROUP_LABELS[group]} sorular · {labels[key]}",
                outcome_curve(summary, key, group)) for key in three for group in GROUP_LABELS]
    charts += [*((f"Cevap sonuçları: {label} sorular", answer_outcomes(summary, group))
                 for group, label in GROUP_LABELS.items()),
               ("Süre", latency(summary)),
               ("İzin sızıntıları", leaks(summary))]
    return charts
