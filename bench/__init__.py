"""Benchmarks: scripts run by `make bench`, not timed tests.

Each benchmark prints one markdown section and keeps a copy in bench/results/<name>.md.
"""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def publish(name: str, section: str) -> None:
    """Print a benchmark's markdown section and keep it as bench/results/<name>.md."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.md").write_text(section + "\n", encoding="utf-8")
    print(section)
