"""`make bench`: run every benchmark of the project and write one markdown report.

Each benchmark is its own module (`python -m bench.<name>`) that prints a markdown section;
this runner records the machine and date once and concatenates the sections into summary.md, with
its run card summary.json (each benchmark also writes its own card, bench/results/<name>.json).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
import sys

import psutil

from bench import RESULTS
from eval.report import write_card

BENCHMARKS = ("embedders", "ingest", "ocr", "retrieval", "sweep", "load", "api_load", "question_timing", "quote_ranking",
              "answer_latency", "conversations", "word_bombs")


def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    mem = psutil.virtual_memory().total / 2**30
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, Python {platform.python_version()}, {platform.system()}"


def main(names: list[str]) -> int:
    RESULTS.mkdir(parents=True, exist_ok=True)
    sections = [
        "# Dayanak benchmarks",
        "",
        f"Machine: {machine_line()}  ",
        f"Date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        "",
    ]
    failed = []
    for name in names:
        print(f"== bench.{name}", file=sys.stderr, flush=True)
        proc = subprocess.run([sys.executable, "-m", f"bench.{name}"], capture_output=True, text=True)
        sys.stderr.write(proc.stderr[-4000:])
        if proc.returncode != 0:
            failed.append(name)
            sections += [f"## {name}", "", f"FAILED (exit {proc.returncode})", ""]
        else:
            sections += [proc.stdout.strip(), ""]
    report = "\n".join(sections)
    (RESULTS / "summary.md").write_text(report, encoding="utf-8")
    write_card(RESULTS / "summary.json", {"benchmarks": names, "failed": failed}, outputs=["summary.md"])
    print(report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(BENCHMARKS)))
