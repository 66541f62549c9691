"""Chart builders work from plain summary/per-question data (fresh or read back from disk)."""

from __future__ import annotations

from eval import chart_layout, charts, gold_charts
from eval.retrievers import WeightedRetriever, make_retriever

RESULTS = [
    {"retriever": "bm25", "chunk_size": 1000, "recall@1": {"mean": 0.6, "ci": [0.55, 0.65]},
     "recall@5": {"mean": 0.9, "ci": [0.88, 0.92]}, "recall_curve": [0.6, 0.7, 0.8, 0.85, 0.9]},
    {"retriever": "dense", "chunk_size": 1000, "recall@1": {"mean": 0.3, "ci": [0.25, 0.35]},
     "recall@5": {"mean": 0.5, "ci": [0.45, 0.55]}, "recall_curve": [0.3, 0.4, 0.45, 0.48, 0.5]},
]


def test_bars_carry_ci_bounds():
    frame = charts.metric_frame(RESULTS, ["recall@5"])
    assert list(frame["lo"]) == [0.88, 0.45] and list(frame["hi"]) == [0.92, 0.55]
    spec = charts.recall_bars(RESULTS, "recall@5").to_dict()
    assert len(spec["layer"]) == 2  # bars + error bars


def test_curve_has_one_point_per_k_and_system():
    frame = charts.curve_frame(RESULTS)
    # Systems are named in Turkish, never by their code ("bm25@1000").
    assert len(frame) == 10 and set(frame["system"]) == {"Sözcük eşleşmesi (sözcükler olduğu gibi) · 1000 karakter",
                                                         "Vektör benzerliği · 1000 karakter"}
    assert charts.recall_curve(RESULTS).to_dict()["mark"]["type"] == "line"


def test_rank_differences_count_misses_as_depth_plus_one():
    rows = [{"rank:a": "1", "rank:b": "3"}, {"rank:a": "", "rank:b": "2"}, {"rank:a": 4, "rank:b": ""}]
    assert list(charts.rank_differences(rows, "a", "b", 10)["difference"]) == [-2, 9, -7]
    assert charts.rank_difference_histogram(rows, "a", "b").to_dict()["mark"]["type"] == "bar"


def test_fixed_weight_retriever_name():
    r = make_retriever("hybrid-weighted-w0.3")
    assert isinstance(r, WeightedRetriever) and r.fixed == 0.3 and r.name == "hybrid-weighted-w0.3"


# --------------------------------------------------------------------------- layout (issue 22)

def _rate(mean: float) -> dict:
    return {"mean": mean, "ci": [max(0.0, mean - 0.1), min(1.0, mean + 0.1)]}


def _configuration(label: str, mean: float) -> dict:
    return {"key": label, "label": label, "recall_curve": [mean / 2, mean],
            "retrieval": {m: _rate(mean) for m in ("ndcg@10", "recall@1", "recall@5", "recall@10", "mrr@10")},
            "abstention": {"points": [{"threshold": 0.2, "coverage": 0.9, "selective_accuracy": mean, "accuracy": mean}],
                           "operating_point": {"threshold": 0.2, "coverage": 0.9, "selective_accuracy": mean,
                                               "accuracy": mean}},
            "answers": {"answerable": {"rates": {"correct": _rate(0.5), "fallback": _rate(0.3), "wrong": _rate(0.2)}},
                        "unanswerable": {"rates": {"fallback": _rate(0.75), "wrong": _rate(0.25)}}},
            "latency": {"retrieval_ms": {"p50": 12, "p95": 30}, "answer_ms": {"p50": 40, "p95": 90}},
            "leaks": {"count": 0}}


# The run: names longer than Vega's default label limit.
SUMMARY = {"configurations": [_configuration("use · ağırlıklı (yoğun + BM25) · 1000 karakter · k=5", 0.9),
                              _configuration("use · sözcüksel (BM25) · 1000 karakter · k=5", 0.7)]}


def _three_outcomes(configuration: dict) -> dict:
    """The configuration as a run with a three-outcome gate records it (eval/gold_report.py)."""
    shares = {"correct": 0.5, "wrong": 0.1, "closest": 0.3, "refused": 0.1}
    curve_point = {"answer_at": 0.8, "answerable": {"n": 10, **shares},
                   "unanswerable": {"n": 4, "correct": 0.0, "wrong": 0.25, "closest": 0.25, "refused": 0.5}}
    low = {**curve_point, "answer_at": 0.2, "answerable": {"n": 10, "correct": 0.7, "wrong": 0.3, "closest": 0.0,
                                                           "refused": 0.0}}
    return {**configuration, "key": configuration["key"] + " (model)",
            "gate_outcomes": {"answerable": {"n": 10, "rates": {r: _rate(v) for r, v in shares.items()}},
                              "unanswerable": {"n": 4, "rates": {"correct": _rate(0.0), "wrong": _rate(0.25),
                                                                 "closest": _rate(0.25), "refused": _rate(0.5),
                                                                 "answered": _rate(0.25)}}},
            "outcome_curve": {"answer_at": 0.8, "closest_at": 0.4, "points": [low, curve_point],
                              "operating_point": curve_point}}


SUMMARY_THREE = {"configurations": [_three_outcomes(c) for c in SUMMARY["configurations"]]}


def _specs() -> list[tuple[str, dict]]:
    groups = {"answerable": {"rates": {o: _rate(0.25) for o in ("correct", "correct_not_in_context", "fallback",
                                                                 "wrong")}}}
    three = {g: {**data, "results": {r: _rate(0.25) for r in ("correct", "wrong", "closest", "refused")}}
             for g, data in groups.items()}
    tquad = [("recall_bars", charts.recall_bars(RESULTS)), ("recall_curve", charts.recall_curve(RESULTS)),
             ("answer_outcomes", charts.answer_outcomes(groups)), ("answer_results", charts.answer_outcomes(three)),
             ("rank_histogram", charts.rank_difference_histogram([{"rank:a": "1", "rank:b": "2"}], "a", "b"))]
    return [(title, gold_charts.turkish(chart).to_dict()) for summary in (SUMMARY, SUMMARY_THREE)
            for title, chart in gold_charts.all_charts(summary)] + [
        (title, chart.to_dict()) for title, chart in tquad]


def _encodings(spec: dict) -> list[dict]:
    return [layer.get("encoding", {}) for layer in spec.get("layer", [spec])]


def test_every_lab_chart_takes_its_column_and_keeps_its_height() -> None:
    """Streamlit's default autosize ("fit") squeezed title, legend and axes into the height: the
    abstention curve came out a thumbnail. Every chart fits its column sideways only, and none is
    a facet (a facet cannot take its column's width: the outcome bars were cut at half)."""
    for title, spec in _specs():
        assert spec["width"] == "container", title
        assert spec["autosize"] == {"type": "fit-x", "contains": "padding"}, title
        assert "height" in spec and "facet" not in spec, title
        assert not any({"row", "column", "facet"} & set(e) for e in _encodings(spec)), title


def test_legends_sit_below_and_names_are_not_cut() -> None:
    for title, spec in _specs():
        for encoding in _encodings(spec):
            colour = encoding.get("color", {})
            if "field" in colour:
                assert colour["legend"]["orient"] == "bottom", title
                assert colour["legend"]["labelLimit"] >= chart_layout.LABEL_LIMIT, title
            for channel in ("x", "y"):
                if encoding.get(channel, {}).get("field") == "yapılandırma":
                    assert encoding[channel]["axis"]["labelLimit"] >= chart_layout.LABEL_LIMIT, title


def test_shares_are_drawn_on_zero_to_hundred_percent() -> None:
    shares = {"pay", "recall", "kapsam", "seçici doğruluk", "share", "mean", "ortalama"}
    for title, spec in _specs():
        for encoding in _encodings(spec):
            for channel in ("x", "y"):
                field = encoding.get(channel, {})
                if field.get("field") in shares and field.get("type") == "quantitative":
                    assert field["scale"]["domain"] == [0, 1], (title, channel)


def test_outcome_bars_reach_a_hundred_percent_per_group() -> None:
    for group, total in (("answerable", 1.0), ("unanswerable", 1.0)):
        data = gold_charts.outcomes_frame(SUMMARY)
        shares = data[data["grup"] == gold_charts.GROUP_LABELS[group]].groupby("yapılandırma")["pay"].sum()
        assert list(shares.round(6)) == [total, total]
        spec = gold_charts.answer_outcomes(SUMMARY, group).to_dict()
        assert spec["encoding"]["x"]["stack"] == "normalize"


def test_an_exported_chart_gets_a_fixed_width() -> None:
    """An SVG or PNG has no container to fill: the report's images are EXPORT_WIDTH wide."""
    spec = chart_layout.for_export(gold_charts.abstention_curve(SUMMARY)).to_dict()
    assert spec["width"] == chart_layout.EXPORT_WIDTH


# --------------------------------------------------------------------------- three outcomes (issue 20)


def _colours(spec: dict) -> dict[str, str]:
    colour = next(e["color"] for e in _encodings(spec) if "field" in e.get("color", {}))
    return dict(zip(colour["scale"]["domain"], colour["scale"]["range"], strict=True))


def test_the_closest_passages_are_an_outcome_of_their_own_with_their_own_colour() -> None:
    closest = chart_layout.RESULT_COLOURS["closest"]
    for group in ("answerable", "unanswerable"):
        data = gold_charts.outcomes_frame(SUMMARY_THREE)
        data = data[data["grup"] == gold_charts.GROUP_LABELS[group]]
        assert "En yakın parçalar" in set(data["sonuç"])
        assert list(data.groupby("yapılandırma")["pay"].sum().round(6)) == [1.0, 1.0]
        colours = _colours(gold_charts.answer_outcomes(SUMMARY_THREE, group).to_dict())
        assert colours["En yakın parçalar"] == closest and len(set(colours.values())) == len(colours)
    groups = {"answerable": {"results": {r: _rate(0.25) for r in ("correct", "wrong", "closest", "refused")}}}
    tquad = charts.answer_outcomes(groups).to_dict()
    assert _colours(tquad) == {"Doğru cevap": chart_layout.RESULT_COLOURS["correct"],
                               "Yanlış cevap": chart_layout.RESULT_COLOURS["wrong"], "En yakın parçalar": closest,
                               "Reddedildi (dokümanlarda yok)": chart_layout.RESULT_COLOURS["refused"]}
    # a run from before the three outcomes keeps its four (no closest passages to show)
    older = charts.answer_outcomes({"answerable": {"rates": {o: _rate(0.25) for o in
                                                            ("correct", "correct_not_in_context", "fallback", "wrong")}}})
    assert "En yakın parçalar" not in _colours(older.to_dict())


def test_the_three_outcome_curve_replaces_the_abstention_curve_when_the_gate_has_a_model() -> None:
    titles = [title for title, _ in gold_charts.all_charts(SUMMARY_THREE)]
    assert "Geri çekilme eğrisi" not in titles
    assert sum(t.startswith("Cevap, en yakın parçalar ve ret") for t in titles) == 4  # 2 configurations × 2 groups
    assert "Geri çekilme eğrisi" in [t for t, _ in gold_charts.all_charts(SUMMARY)]  # no model: as before
    mixed = {"configurations": [SUMMARY_THREE["configurations"][0], SUMMARY["configurations"][1]]}
    titles = [t for t, _ in gold_charts.all_charts(mixed)]
    assert "Geri çekilme eğrisi" in titles and sum(t.startswith("Cevap, en yakın") for t in titles) == 2


def test_the_three_outcome_curve_draws_every_share_and_marks_the_operating_point() -> None:
    key = SUMMARY_THREE["configurations"][0]["key"]
    data, cuts = gold_charts.outcome_curve_frame(SUMMARY_THREE, key, "answerable")
    assert cuts == {"answer_at": 0.8, "closest_at": 0.4}
    assert len(data) == 2 * 4 and set(data["eşik"]) == {0.2, 0.8}
    today = data[data["eşik"] == 0.8].set_index("sonuç")["pay"].to_dict()
    assert today == {"Doğru cevap": 0.5, "Yanlış cevap": 0.1, "En yakın parçalar": 0.3,
                     "Reddedildi (dokümanlarda yok)": 0.1}
    unanswerable, _ = gold_charts.outcome_curve_frame(SUMMARY_THREE, key, "unanswerable")
    assert "Cevap verildi (yanlış)" in set(unanswerable["sonuç"])  # any answer to it is wrong
    spec = gold_charts.turkish(gold_charts.outcome_curve(SUMMARY_THREE, key, "answerable")).to_dict()
    rules = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "rule")
    rule_data = spec["datasets"][rules["data"]["name"]]
    assert {r["eşik"] for r in rule_data} == {0.8, 0.4}
    assert _colours(spec)["En yakın parçalar"] == chart_layout.RESULT_COLOURS["closest"]
    assert gold_charts.outcome_curve_frame(SUMMARY, SUMMARY["configurations"][0]["key"])[1] is None  # none recorded
