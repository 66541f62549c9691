"""Word (.docx) bombs: `python -m bench.word_bombs [--before /path/to/old/checkout] [--guard-gb 4]`.

Each file is made here (tests/docxs.py, as the tests make them) and read by
`ragcore.documents.word.extract_sections` in a child process of its own, which reports the wall
seconds and its peak RSS growth (ru_maxrss after the read minus before it) and how the read ended
(read, or refused with which message). The files: the attacker's two (120 MB of empty `<w:p/>`
in a 220 KB file; 100,000 empty paragraphs in a 37 KB file), 500 MB of `<w:p/>` in 800 KB with
DOCX_MAX_UNPACKED_MB raised past it (so the element count, not the byte count, refuses it), the
table bombs python-docx's `row.cells` could not take (one cell spanning 300,000,000 columns, a
row of 20,000 cells continuing a vertical merge, a column merged down 1,000 rows) and a plain
document just under DOCX_MAX_ELEMENTS (47,000 formatted paragraphs, 2.9 million nodes): what
the cap lets through costs that much memory.

`--before` reads the same files with another checkout's code (e.g. the main branch before the
caps, with the same interpreter), guarded: the child's address space may grow by `--guard-gb`
and it gets 300 CPU seconds, so a bomb that would take the machine ends in MemoryError or
SIGXCPU and is reported as such. The tests (tests/test_docx.py) assert the refusals, the output
and a generous memory bound; the seconds are only measured here. Writes
bench/results/word_bombs.md and its run card.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench import publish
from tests import docxs

REPO = Path(__file__).resolve().parent.parent

CHILD = """
import json, resource, sys, time
from dataclasses import replace
import ragcore.documents.word as word
resource.setrlimit(resource.RLIMIT_CPU, (300, resource.getrlimit(resource.RLIMIT_CPU)[1]))
data = open(sys.argv[1], "rb").read()
overrides = json.loads(sys.argv[2])
args = (replace(word.DEFAULT_LIMITS, **overrides),) if overrides and hasattr(word, "DEFAULT_LIMITS") else ()
mapped = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
guard = float(sys.argv[3]) * 1024**3
resource.setrlimit(resource.RLIMIT_AS, (int(mapped + guard), resource.getrlimit(resource.RLIMIT_AS)[1]))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
try:
    text = word.extract_sections(data, *args)
    outcome = f"read: {len(text.paragraphs):,} paragraphs"
except Exception as exc:
    outcome = f"{type(exc).__name__}: {exc}"
print(json.dumps({"seconds": time.perf_counter() - started, "outcome": outcome,
                  "growth_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024}))
"""

_RUN = ('<w:r w:rsidR="00A1B2C3"><w:rPr><w:rFonts w:ascii="Arial" w:hAnsi="Arial" w:cs="Arial"/><w:sz w:val="22"/>'
        '<w:szCs w:val="22"/><w:lang w:val="tr-TR"/></w:rPr><w:t xml:space="preserve">İşveren, çalışanların iş '
        'sağlığı ve güvenliğini sağlamakla yükümlüdür; </w:t></w:r>')
_FORMATTED = ('<w:p w:rsidR="00D4E5F6" w:rsidRDefault="00A1B2C3"><w:pPr><w:pStyle w:val="Normal"/><w:spacing '
              'w:after="120" w:line="276" w:lineRule="auto"/><w:jc w:val="both"/><w:rPr><w:rFonts w:ascii="Arial" '
              'w:hAnsi="Arial"/></w:rPr></w:pPr>' + _RUN * 3 + '</w:p>').encode()


def _wide_merged_row(cells: int = 20_000) -> bytes:
    first = b"<w:tr>" + b"<w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc>" * cells + b"</w:tr>"
    second = b"<w:tr>" + b"<w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc>" * cells + b"</w:tr>"
    return docxs.with_body(iter([b"<w:tbl>" + first + second + b"</w:tbl>"]))


# name → (file maker, WordLimits overrides for the new code)
BOMBS: dict[str, tuple[Callable[[], bytes], dict]] = {
    "120 MB of empty `<w:p/>`": (lambda: docxs.empty_paragraph_bomb(120), {}),
    "100,000 empty paragraphs": (docxs.sparse_paragraphs, {}),
    "500 MB of `<w:p/>`, unpacked cap 1 GB": (lambda: docxs.empty_paragraph_bomb(500), {"unpacked_mb": 1024}),
    "one cell spanning 300,000,000 columns": (docxs.spanning_cell, {}),
    "a row of 20,000 merged cells": (_wide_merged_row, {}),
    "a column merged down 1,000 rows": (lambda: docxs.merged_column(1000), {}),
    "47,000 formatted paragraphs (2.9 M nodes)": (lambda: docxs.with_body(iter([_FORMATTED] * 47_000)),
                                                  {"characters": 20_000_000}),
}


def read_in_child(repo: Path, path: Path, overrides: dict, guard_gb: float) -> dict:
    env = os.environ | {"PYTHONPATH": str(repo)}
    run = subprocess.run([sys.executable, "-c", CHILD, str(path), json.dumps(overrides), str(guard_gb)], cwd=repo,
                         env=env, capture_output=True, text=True)
    if run.returncode != 0:
        return {"seconds": None, "growth_mb": None, "outcome": f"died (exit {run.returncode}; -24 is SIGXCPU)"}
    return json.loads(run.stdout)


def _cell(result: dict | None) -> str:
    if result is None:
        return "—"
    if result["seconds"] is None:
        return result["outcome"]
    return f"{result['seconds']:.2f} s, +{result['growth_mb']:.0f} MB: {_short(result['outcome'])}"


def _short(outcome: str) -> str:
    """"WordTooLarge (DOCX_MAX_PARAGRAPHS)", "CorruptWord (XPathEvalError)": the refusal's type and
    the last thing its message names in parentheses (the cap's setting, or the cause)."""
    kind, _, message = outcome.partition(": ")
    named = re.findall(r"\(([^()]*)\)", message)
    return f"{kind} ({named[-1]})" if kind != "read" and named else outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout whose reader to compare (e.g. the main branch)")
    parser.add_argument("--guard-gb", type=float, default=4.0, help="address space a child may add before MemoryError")
    args = parser.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (make, overrides) in BOMBS.items():
            path = Path(tmp) / "bomb.docx"
            path.write_bytes(make())
            after = read_in_child(REPO, path, overrides, args.guard_gb)
            before = read_in_child(args.before, path, {}, args.guard_gb) if args.before else None
            results[name] = {"file_kb": path.stat().st_size / 1024, "after": after, "before": before}
            print(f"{name}: {_cell(after)} (before: {_cell(before)})", file=sys.stderr, flush=True)
    lines = ["## Word bombs", "",
             "Each file read by `extract_sections` in a child process: wall seconds, peak RSS growth, outcome "
             f"(guard: +{args.guard_gb:g} GB address space, 300 CPU s).", "",
             "| file | size | now | before |" if args.before else "| file | size | now |",
             "|---|---:|---|---|" if args.before else "|---|---:|---|"]
    for name, result in results.items():
        row = f"| {name} | {result['file_kb']:,.0f} KB | {_cell(result['after'])} |"
        lines.append(row + (f" {_cell(result['before'])} |" if args.before else ""))
    publish("word_bombs", "\n".join(lines), numbers={"bombs": results, "before": str(args.before or "")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
