"""Altair chart builders for the lab (no streamlit here; the page only displays them).

All builders take the plain data of summary.json / per_question.csv, so a chart of an earlier run
is drawn from disk exactly like a fresh one. Sizes, legends and share axes follow
`eval.chart_layout`.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd

from eval.chart_layout import RESULT_COLOURS, bars, category_axis, legend, page_sized, share_axis, share_scale
from eval.gold_stats import RESULTS, metric_label
from eval.labels import OUTCOME_LABELS, RESULT_LABELS, retriever_label, system_label

MISSING_RANK_LABEL = "yok"


def metric_frame(results: Sequence[dict], metrics: Sequence[str] = ("recall@1", "recall@5", "recall@10")) -> pd.DataFrame:
    """Long table: one row per system × metric with mean and CI bounds."""
    rows = []
    for row in results:
        for metric in metrics:
            if metric in row:
                lo, hi = row[metric]["ci"]
                rows.append({"retriever": retriever_label(row["retriever"]), "chunk_size": str(row["chunk_size"]), "metric": metric,
                             "mean": row[metric]["mean"], "lo": lo, "hi": hi})
    return pd.DataFrame(rows, columns=["retriever", "chunk_size", "metric", "mean", "lo", "hi"])


def recall_bars(results: Sequence[dict], metric: str = "recall@5") -> alt.Chart:
    """Bars per retriever, grouped by chunk size, with 95 % CI error bars."""
    data = metric_frame(results, [metric])
    sizes = sorted(data["chunk_size"].unique(), key=int)
    base = alt.Chart(data).encode(
        x=alt.X("chunk_size:N", title="parça boyutu (karakter)", sort=sizes),
        xOffset=alt.XOffset("retriever:N"),
        color=alt.Color("retriever:N", title="arama yöntemi", legend=legend()),
    )
    means = base.mark_bar().encode(
        y=alt.Y("mean:Q", title=metric_label(metric), scale=share_scale(),
                axis=share_axis() if metric.startswith("recall") else alt.Axis(format=".1f", tickMinStep=0.1)),
        tooltip=["retriever", "chunk_size", alt.Tooltip("mean:Q", format=".3f"), alt.Tooltip("lo:Q", format=".3f"),
                 alt.Tooltip("hi:Q", format=".3f")],
    )
    errors = base.mark_errorbar(ticks=True, color="black").encode(y=alt.Y("lo:Q", title=metric_label(metric)),
                                                                   y2="hi:Q")
    return page_sized((means + errors).properties(title=f"{metric_label(metric)} (%95 güven aralığı)"), 320)


def curve_frame(results: Sequence[dict]) -> pd.DataFrame:
    rows = []
    for row in results:
        for k, value in enumerate(row.get("recall_curve", []), start=1):
            rows.append({"system": system_label(f"{row['retriever']}@{row['chunk_size']}"), "k": k, "recall": value})
    return pd.DataFrame(rows, columns=["system", "k", "recall"])


def recall_curve(results: Sequence[dict]) -> alt.Chart:
    """Recall@k for k = 1..depth, one line per retriever × chunk size."""
    chart = (
        alt.Chart(curve_frame(results))
        .mark_line(point=True)
        .encode(
            x=alt.X("k:O", title="k"),
            y=alt.Y("recall:Q", title="ilk k sonuçta bulma oranı", scale=share_scale(), axis=share_axis()),
            color=alt.Color("system:N", title="sistem", legend=legend()),
            tooltip=["system", "k", alt.Tooltip("recall:Q", format=".3f")],
        )
        .properties(title="İlk k sonuçta bulma oranı")
    )
    return page_sized(chart, 320)


def _rank(value: object, missing: int) -> int:
    """A per_question.csv rank cell ('' = not in the top depth) as an int, missing → depth + 1."""
    text = str(value).strip()
    return int(float(text)) if text not in ("", "nan", "None") else missing


def rank_differences(rows: Sequence[dict], system_a: str, system_b: str, depth: int = 10) -> pd.DataFrame:
    """Per question: rank of A minus rank of B (a miss counts as depth + 1); negative = A better."""
    missing = depth + 1
    diffs = [_rank(r[f"rank:{system_a}"], missing) - _rank(r[f"rank:{system_b}"], missing) for r in rows]
    return pd.DataFrame({"difference": diffs})


def rank_difference_histogram(rows: Sequence[dict], system_a: str, system_b: str, depth: int = 10) -> alt.Chart:
    data = rank_differences(rows, system_a, system_b, depth)
    chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("difference:O", title=f"sıra({system_label(system_a)}) − sıra({system_label(system_b)}); bulunamayan = {depth + 1}"),
            y=alt.Y("count():Q", title="soru sayısı"),
            tooltip=["difference", "count()"],
        )
        .properties(title="Soru başına sıra farkı (negatif: ilk sistem daha iyi)")
    )
    return page_sized(chart, 280)


ANSWER_GROUP_LABELS = {"answerable": "cevaplanabilir", "unanswerable": "cevaplanamaz"}
# The older outcomes' colours (a run made before the three outcomes): fallback is closest or refused.
OUTCOME_COLOURS = {"correct": RESULT_COLOURS["correct"], "correct_not_in_context": "#66bb6a",
                   "fallback": RESULT_COLOURS["refused"], "wrong": RESULT_COLOURS["wrong"]}


def answer_outcomes(groups: dict) -> alt.Chart:
    """Stacked shares per question group of what the user met: correct answer, wrong answer, the
    closest passages, the refusal (a run from before the three outcomes: its four outcomes)."""
    three = all("results" in data for data in groups.values())
    names, labels, colours = ((RESULTS, RESULT_LABELS, RESULT_COLOURS) if three
                              else (tuple(OUTCOME_COLOURS), OUTCOME_LABELS, OUTCOME_COLOURS))
    rows = []
    for group, data in groups.items():
        for n, outcome in enumerate(names):
            rate = (data["results"] if three else data["rates"])[outcome]
            rows.append({"group": ANSWER_GROUP_LABELS.get(group, group), "outcome": labels[outcome],
                         "order": n, "share": rate["mean"], "lo": rate["ci"][0], "hi": rate["ci"][1]})
    frame = pd.DataFrame(rows, columns=["group", "outcome", "order", "share", "lo", "hi"])
    chart = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("group:N", title="grup", axis=category_axis()),
            x=alt.X("share:Q", title="oran", stack="normalize", scale=share_scale(), axis=share_axis()),
            color=alt.Color("outcome:N", title="sonuç", legend=legend(), sort=[labels[o] for o in names],
                            scale=alt.Scale(domain=[labels[o] for o in names], range=[colours[o] for o in names])),
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("group", title="grup"), alt.Tooltip("outcome", title="sonuç"),
                     alt.Tooltip("share:Q", format=".3f", title="oran"),
                     alt.Tooltip("lo:Q", format=".3f", title="güven aralığı alt"),
                     alt.Tooltip("hi:Q", format=".3f", title="güven aralığı üst")],
        )
        .properties(title="Cevap sonuçları")
    )
    return page_sized(chart, bars())
