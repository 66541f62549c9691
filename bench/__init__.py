"""Benchmarks: scripts run by `make bench`, not timed tests.

Each benchmark prints one markdown section and keeps a copy in bench/results/<name>.md, with its
run card bench/results/<name>.json (commit, dirty flag, machine, date, command line; the numbers
the benchmark keeps, if any).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eval.report import write_card

RESULTS = Path(__file__).resolve().parent / "results"


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def publish(name: str, section: str, *, numbers: dict | None = None, outputs: Sequence[str] = ()) -> None:
    """Print a benchmark's markdown section and keep it as bench/results/<name>.md, with its run
    card <name>.json: `numbers` (what the benchmark measured) and the card's outputs, the section
    and `outputs` (other files the benchmark wrote into bench/results, such as a chart)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.md").write_text(section + "\n", encoding="utf-8")
    write_card(RESULTS / f"{name}.json", numbers or {}, outputs=[f"{name}.md", *outputs])
    print(section)
