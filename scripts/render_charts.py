"""Render the evaluation lab's charts of a finished run to PNG files for the README.

    python scripts/render_charts.py RETRIEVAL_RUN_DIR [ANSWERS_RUN_DIR] [--out docs/images]

Uses the same Altair chart builders as the lab page (`eval.charts`); PNG export needs the
`vl-convert-python` package (a test/dev extra).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from eval import charts
from eval.chart_layout import for_export
from eval.report import load_run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("retrieval_run", type=Path)
    parser.add_argument("answers_run", type=Path, nargs="?")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    parser.add_argument("--compare", default="bm25-prefix5@1000,dense@1000",
                        help="two systems for the rank-difference histogram")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    summary, rows = load_run(args.retrieval_run)
    results = summary["results"]
    written = []
    for name, chart in (
        ("recall5_bars.png", charts.recall_bars(results, "recall@5")),
        ("recall_curve.png", charts.recall_curve(results)),
    ):
        for_export(chart).save(str(args.out / name), scale_factor=1.5)
        written.append(name)
    first, second = args.compare.split(",")
    for_export(charts.rank_difference_histogram(rows, first, second)).save(str(args.out / "rank_differences.png"), scale_factor=1.5)
    written.append("rank_differences.png")
    if args.answers_run:
        answers = json.loads((args.answers_run / "summary.json").read_text(encoding="utf-8"))
        for_export(charts.answer_outcomes(answers["groups"])).save(str(args.out / "answer_outcomes.png"), scale_factor=1.5)
        written.append("answer_outcomes.png")
    print("wrote " + ", ".join(str(args.out / n) for n in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
