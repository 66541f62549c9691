"""The gold-run results on the lab page (ui/lab_gold_runs.py) through AppTest: an earlier run,
made before the gate had three outcomes, still shows as it did (docs/eval_runs keeps such run
cards), and a run whose gate has a three-outcome model shows its curve of answers, closest
passages and refusals instead of the abstention curve, with the closest passages an outcome of
their own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from streamlit.testing.v1 import AppTest

from eval import gold_report
from tests.app_support import REPO
from tests.gold_stats_support import PAYLOADS, GoldConfig

EARLIER = REPO / "docs" / "eval_runs" / "r4-gold-everyday-dev"


def _show(folder: str) -> None:
    from pathlib import Path

    from ui.lab_gold_runs import render_gold_results

    render_gold_results(Path(folder), key="t")


def _titles(at: AppTest) -> list[str]:
    """Each chart's title as one line (a long one is drawn on several: eval.chart_layout.chart_title)."""
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    titles = [s.get("title", "") for s in specs]
    return [" ".join(t["text"]) if isinstance(t, dict) else str(t) for t in titles]


def _domains(at: AppTest) -> set[str]:
    out: set[str] = set()
    for chart in at.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        for layer in spec.get("layer", [spec]):
            out |= set(layer.get("encoding", {}).get("color", {}).get("scale", {}).get("domain", []))
    return out


def test_an_earlier_run_without_the_three_outcomes_still_shows() -> None:
    assert "gate_outcomes" not in gold_report.load_summary(EARLIER)["configurations"][0]
    at = AppTest.from_function(_show, args=(str(EARLIER),), default_timeout=60).run()
    assert not at.exception, at.exception
    titles = _titles(at)
    assert any(t.startswith("Geri çekilme eğrisi") for t in titles), titles
    assert not any(t.startswith("Cevap, en yakın parçalar") for t in titles)


def test_a_three_outcome_run_shows_its_curve_and_the_closest_passages(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(EARLIER, folder)
    summary = gold_report.load_summary(folder)
    block, _ = gold_report.configuration_summary(GoldConfig(), PAYLOADS, None, None)
    summary["configurations"] = [{**c, **{k: block[k] for k in ("gate_outcomes", "outcome_curve", "threshold")}}
                                 for c in summary["configurations"]]
    (folder / gold_report.SUMMARY).write_text(json.dumps(summary, ensure_ascii=False), encoding="utf-8")
    at = AppTest.from_function(_show, args=(str(folder),), default_timeout=60).run()
    assert not at.exception, at.exception
    titles = _titles(at)
    assert sum(t.startswith("Cevap, en yakın parçalar ve ret") for t in titles) == 2, titles  # both groups
    assert not any(t.startswith("Geri çekilme eğrisi") for t in titles)
    assert "En yakın parçalar" in _domains(at)
    # "Bütün ölçüler": a measure a row, the configuration's value in its own column
    table = next(d.value for d in at.dataframe if "Ölçü" in d.value.columns).set_index("Ölçü")
    assert table.loc["En yakın parçalar (cevaplanabilir)"].iloc[0].startswith("%33,3")


def test_a_kept_card_offers_its_report_and_files_though_it_keeps_them_compressed_or_not_at_all() -> None:
    assert not (EARLIER / gold_report.REPORT).exists()  # slimmed: rendered again when asked for
    at = AppTest.from_function(_show, args=(str(EARLIER),), default_timeout=60).run()
    labels = {b.proto.label.replace("\\", "") for b in at.get("download_button")}  # escaped Markdown
    assert {"Rapor (HTML)", "Soru başına sonuçlar (CSV)", "Vakalar (JSONL)"} <= labels, labels
