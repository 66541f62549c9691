"""Measured defaults as data (ragcore/measured/*.json): what auto mode, weight and threshold each embedder gets."""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest

from ragcore.retrieval import (
    MeasuredDataError,
    measurements,
    resolve_mode,
    retrieval_default,
    retrieve,
    threshold_default,
    threshold_for,
    write_measured,
)
from tests.retrieval_support import DocSpec, insert_document, make_test_embedder


def test_shipped_entries_say_how_they_were_measured():
    use = retrieval_default("use-multilingual-v3")
    assert (use.mode, use.weight, use.tuned) == ("weighted", 0.1, True) and "TQuAD train" in use.measured
    bge = retrieval_default("ollama:bge-m3")
    assert (bge.mode, bge.tuned) == ("rrf", True) and "seed" in bge.measured
    assert bge.weight == 0.5  # an RRF entry has no weight: forced weighted mode uses the default's
    e5 = retrieval_default("e5-small-q4")
    assert e5.tuned and e5.mode in ("weighted", "rrf", "lexical", "dense") and "TQuAD train" in e5.measured
    untuned = retrieval_default("ollama:nomic-embed-text")
    assert (untuned.mode, untuned.tuned) == ("rrf", False) and "not tuned" in untuned.measured
    for file in (measurements.RETRIEVAL_FILE, measurements.THRESHOLDS_FILE):
        data = measurements.load(file)
        for entry in [data["default"], *data["entries"].values()]:
            assert all(key in entry for key in measurements.DESCRIPTION_KEYS)


def test_resolve_mode_follows_the_file_unless_retrieval_mode_says_otherwise(settings):
    assert resolve_mode(settings, SimpleNamespace(name="use-multilingual-v3")) == "weighted"
    assert resolve_mode(settings, SimpleNamespace(name="ollama:bge-m3")) == "rrf"
    assert resolve_mode(settings, SimpleNamespace(name="e5-small-q4")) == retrieval_default("e5-small-q4").mode
    assert resolve_mode(settings, SimpleNamespace(name="ollama:nomic-embed-text")) == "rrf"  # not tuned
    assert resolve_mode(settings.replace(retrieval_mode="lexical"), SimpleNamespace(name="use-multilingual-v3")) == "lexical"
    assert resolve_mode(settings, SimpleNamespace(name="e5-small-q4"), "dense") == "dense"


def test_thresholds_per_embedder_with_the_model_independent_default(settings):
    use = threshold_for("use-multilingual-v3", "weighted")
    assert (use.value, use.signal) == (0.38, "mean") and "AUC 0.979" in use.measured
    shipped = measurements.load(measurements.THRESHOLDS_FILE)["entries"]["e5-small-q4"]
    e5 = threshold_for("e5-small-q4", "weighted")
    assert (e5.value, e5.signal) == (shipped["value"], shipped["signal"]) and threshold_default("e5-small-q4").calibrated
    other = threshold_for("ollama:nomic-embed-text", "rrf")
    assert (other.value, other.signal) == (0.45, "coverage") and not threshold_default("ollama:nomic-embed-text").calibrated
    forced = threshold_for("ollama:nomic-embed-text", "rrf", settings.replace(refusal_threshold=0.3))
    assert (forced.value, forced.signal, forced.measured) == (0.3, "coverage", "REFUSAL_THRESHOLD")


def test_write_measured_adds_an_entry_the_loader_reads_back(tmp_path):
    shipped = retrieval_default("e5-small-q4")
    for file in (measurements.RETRIEVAL_FILE, measurements.THRESHOLDS_FILE):
        shutil.copy(measurements.MEASURED_DIR / file, tmp_path / file)
    entry = {"mode": "weighted", "weight": 0.4, "measured": "tuned on 1,000 train questions (test)",
             "when": "2026-12-02", "on": "TQuAD v0.1 train, 1000-char chunks"}
    write_measured(measurements.RETRIEVAL_FILE, "e5-small-q4", entry, tmp_path)
    tuned = retrieval_default("e5-small-q4", tmp_path)
    assert (tuned.mode, tuned.weight, tuned.tuned, tuned.measured) == ("weighted", 0.4, True, entry["measured"])
    assert retrieval_default("use-multilingual-v3", tmp_path).weight == 0.1  # other entries kept
    data = json.loads((tmp_path / measurements.RETRIEVAL_FILE).read_text(encoding="utf-8"))
    assert data["entries"]["e5-small-q4"] == entry and "about" in data

    write_measured(measurements.THRESHOLDS_FILE, "e5-small-q4",
                   {"signal": "mean", "value": 0.5, "measured": "test", "when": "today", "on": "laws"}, tmp_path)
    assert threshold_default("e5-small-q4", tmp_path).value == 0.5
    assert retrieval_default("e5-small-q4") == shipped  # the shipped file is untouched

    with pytest.raises(MeasuredDataError, match="lacks when, on"):
        write_measured(measurements.RETRIEVAL_FILE, "x", {"mode": "rrf", "weight": None, "measured": "?"}, tmp_path)
    with pytest.raises(MeasuredDataError, match="mode 'bm25'"):
        write_measured(measurements.RETRIEVAL_FILE, "x", {**entry, "mode": "bm25"}, tmp_path)
    with pytest.raises(MeasuredDataError, match="unknown measured-defaults file"):
        write_measured("weights.json", "x", entry, tmp_path)
    (tmp_path / measurements.THRESHOLDS_FILE).write_text("{}", encoding="utf-8")
    with pytest.raises(MeasuredDataError, match="needs a \"default\""):
        threshold_default("x", tmp_path)


def test_weighted_retrieval_uses_the_measured_weight_of_the_embedder(db):
    embedder = make_test_embedder()
    insert_document(db, embedder, DocSpec("ağırlık", ("isg",), (
        ("İşveren risk değerlendirmesi yapmakla yükümlüdür.", 1, "Madde 10"),
        ("Risk değerlendirmesi ekibi işveren tarafından oluşturulur ve çalışan temsilcisi katılır.", 2, "Madde 11"),
        ("Çalışanlar iş sağlığı ve güvenliği eğitimlerine katılmak zorundadır.", 3, "Madde 17"),
    )))
    question = "risk değerlendirmesini kim yapar?"
    measured = retrieve(db, embedder, question, "isg", k=3, mode="weighted")
    explicit = retrieve(db, embedder, question, "isg", k=3, mode="weighted", weight=0.1)
    assert [(h.source.chunk_id, round(h.source.score, 9)) for h in measured.hits] == \
           [(h.source.chunk_id, round(h.source.score, 9)) for h in explicit.hits]
    other = retrieve(db, embedder, question, "isg", k=3, mode="weighted", weight=0.9)
    assert [round(h.source.score, 9) for h in other.hits] != [round(h.source.score, 9) for h in measured.hits]
