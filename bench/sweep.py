"""`python -m bench.sweep`: the full retrieval sweep, cold (empty embedding cache) and warm.

Sweep: chunk sizes 500/1000/1500 × BM25 plain, BM25 prefix-5, USE dense, hybrid (RRF) on the 892
TQuAD dev questions, bootstrap CIs and comparisons included. Cold = a fresh process state and an
empty embedding cache (every chunk and question is embedded); warm = a second run in a fresh
workspace reading the embeddings from the embedding cache (chunking, tokenising, BM25 and bootstrap
are redone). The cache is the app's (`public.embedding_cache`) in a throw-away embedded PostgreSQL,
so "cold" never empties a real cache. Targets on 2 cores (USE): cold ≤ 120 s, warm ≤ 15 s;
`--backend e5` sweeps with e5 (cold then costs the e5 embedding of every chunk). Writes
bench/results/sweep.md, its run card sweep.json next to it, and prints the same markdown section on stdout (for bench.run_all); missed
targets show as "NO" in the table.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from eval.report import git_commit, results_markdown, retrieval_summary, write_card
from eval.sweep import SweepConfig, make_workspace, run_sweep
from ragcore import store as dbmod
from ragcore.core import Settings

RETRIEVERS = ["bm25", "bm25-prefix5", "dense", "hybrid"]
SIZES = [500, 1000, 1500]
TARGETS = {"cold": 120.0, "warm": 15.0}
OUT = Path(__file__).resolve().parent / "results" / "sweep.md"


def timed_run(settings: Settings) -> tuple[float, dict, dict]:
    """One sweep in a fresh workspace; (seconds, per-stage timings, summary)."""
    started = time.perf_counter()
    ws = make_workspace(settings)
    try:
        result = run_sweep(settings, SweepConfig(RETRIEVERS, SIZES, baseline="bm25@1000"), workspace=ws)
    finally:
        ws.close()
    seconds = time.perf_counter() - started
    return seconds, result.timings, retrieval_summary(result, settings, ws.loaded_embedders())


def _load_average() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def render(cold: tuple[float, dict], warm: tuple[float, dict], summary: dict) -> str:
    code = git_commit()
    lines = [
        "## Retrieval sweep (TQuAD, eval lab)",
        "",
        f"`python -m bench.sweep` — {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit "
        f"`{code['commit'][:12]}`{' (dirty)' if code['dirty'] else ''}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, load average after run {_load_average()}.",
        "",
        f"Sweep: sizes {SIZES} × {', '.join(RETRIEVERS)} on 892 TQuAD dev questions, 2,000 bootstrap resamples.",
        "",
        "| run | seconds | target | met |",
        "|---|---|---|---|",
    ]
    for name, (seconds, _) in (("cold", cold), ("warm", warm)):
        lines.append(f"| {name} | {seconds:.1f} | ≤ {TARGETS[name]:.0f} | {'yes' if seconds <= TARGETS[name] else 'NO'} |")
    lines += ["", "Stage timings (s):", "", "| stage | cold | warm |", "|---|---|---|"]
    for stage in cold[1]:
        lines.append(f"| {stage} | {cold[1][stage]:.2f} | {warm[1].get(stage, float('nan')):.2f} |")
    lines += ["", "Results (warm run; identical to cold):", "", results_markdown(summary), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sweep", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--backend", default="use", choices=["use", "e5"], help="embedder of the dense legs")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="dayanak-bench-cache-"))
    settings = Settings.from_env().replace(embed_backend=args.backend,
                                         database_url=dbmod.embedded_url(root / "server"))
    try:
        cold_s, cold_t, _ = timed_run(settings)
        print(f"cold: {cold_s:.1f} s", file=sys.stderr, flush=True)
        warm_s, warm_t, summary = timed_run(settings)
        print(f"warm: {warm_s:.1f} s", file=sys.stderr, flush=True)
    finally:
        dbmod.stop_embedded(root / "server")
        shutil.rmtree(root, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    section = render((cold_s, cold_t), (warm_s, warm_t), summary)
    args.out.write_text(section, encoding="utf-8")
    write_card(args.out.with_suffix(".json"), {"cold_s": cold_s, "warm_s": warm_s,
                                               "stages": {"cold": cold_t, "warm": warm_t}}, outputs=[args.out.name])
    print(section)  # bench.run_all concatenates each benchmark's stdout section
    print(f"written: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
