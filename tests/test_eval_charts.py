"""Chart builders work from plain summary/per-question data (fresh or read back from disk)."""

from __future__ import annotations

from eval import charts
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
