"""docs/ stays small and every run card something cites is there.

docs/eval_runs keeps only the run cards something cites, slimmed by `eval.report.slim_run`
(summary.json as written, per-case files gzip-compressed, the HTML report rendered again when
asked for). Citations in README.md and docs/*.md are checked, with the cards' provenance, by
tests/test_provenance.py; this module checks the other citers: code, tests, SECURITY.md, the
measured-value files (ragcore/measured/*.json) and other JSON cards — a path under
docs/eval_runs, a `REPO / "docs" / "eval_runs" / "…"` join, or a run's name ("r12-gold-…",
"final-C-…") in a sentence — and that whoever reads a kept card reads its compressed files.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import subprocess
from pathlib import Path

import pytest

from eval import gold_report
from eval.reader.cuts import calibration_cases
from eval.report import load_run, read_text, slim_run, slim_summary, stored

REPO = Path(__file__).resolve().parent.parent
EVAL_RUNS = REPO / "docs" / "eval_runs"
DOCS_LIMIT_BYTES = 8 * 1024 * 1024  # issue 40: docs/ was 53 MB, 52 of them run cards nobody read
PATH = re.compile(r"docs/eval_runs/([\w.-]++)(?!\*)")  # "r14-*" names a family, not a card
JOIN = re.compile(r"REPO\s*/\s*\"docs\"\s*/\s*\"eval_runs\"\s*/\s*\"([\w.-]+)\"")
RUN_NAME = re.compile(r"(?<![\w-])((?:final-[A-Z]|r\d{1,2}[a-z]?)-[a-z][\w.-]*[\w])")
# The citation finder's own examples (names made up to test the finder) and this module.
NOT_CITERS = {"tests/test_provenance.py", "tests/test_run_cards.py"}


def citers() -> list[str]:
    tracked = subprocess.run(["git", "ls-files", "--", "*.py", "*.json", "*.md", "*.toml"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    return [f for f in tracked if not f.startswith("docs/eval_runs/") and f not in NOT_CITERS
            and (REPO / f).is_file()]


def cited_names(text: str) -> set[str]:
    """Run-card names (a folder or a file of docs/eval_runs) that `text` cites."""
    return set(PATH.findall(text)) | set(JOIN.findall(text)) | set(RUN_NAME.findall(text))


def docs_bytes() -> int:
    return sum(p.stat().st_size for p in (REPO / "docs").rglob("*") if p.is_file())


def test_docs_stay_under_eight_megabytes() -> None:
    size = docs_bytes()
    assert size < DOCS_LIMIT_BYTES, (
        f"docs/ holds {size / 2**20:.1f} MB (limit {DOCS_LIMIT_BYTES / 2**20:.0f} MB): compress a kept run card "
        "with eval.report.slim_run, or remove a card nothing cites")


def test_every_run_card_cited_by_code_tests_or_measured_values_exists() -> None:
    missing = []
    for name in citers():
        text = (REPO / name).read_text(encoding="utf-8", errors="replace")
        missing += [f"{name} cites docs/eval_runs/{run}" for run in sorted(cited_names(text))
                    if not (EVAL_RUNS / run).exists()]
    assert not missing, "\n".join(missing)


def test_the_citation_finder_reads_paths_joins_and_names() -> None:
    text = ('see docs/eval_runs/abstention-e5.json; EARLIER = REPO / "docs" / "eval_runs" / "r4-gold-everyday-dev"\n'
            '"measured": "runs final-B-full-sweep and r12-gold-paraphrase." abstention-e5-r10-refit.json docs/eval_runs/r14-* tmp_path / "docs" / "eval_runs" / "r1"')
    assert cited_names(text) == {"abstention-e5.json", "r4-gold-everyday-dev", "final-B-full-sweep",
                                 "r12-gold-paraphrase"}


def test_kept_cards_are_slim_and_every_summary_reads() -> None:
    for folder in sorted(p for p in EVAL_RUNS.iterdir() if p.is_dir()):
        assert not (folder / "cases.jsonl").exists() and not (folder / gold_report.REPORT).exists(), (
            f"{folder.name}: run eval.report.slim_run on it before committing")
        json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def _plain_run(folder: Path) -> None:
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"run": {"kind": "gold"}}), encoding="utf-8")
    (folder / "per_question.csv").write_text("configuration,qid\nc1,q1\nc1,q2\n", encoding="utf-8")
    case = {"configuration": "c1", "qid": "q1", "answerable": True,
            "answer": {"probability": 0.9, "status": "answered", "outcome": "correct"}}
    (folder / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    (folder / "report.html").write_text("<html></html>", encoding="utf-8")


def test_a_slimmed_run_reads_as_it_did_and_packing_is_repeatable(tmp_path: Path) -> None:
    _plain_run(tmp_path / "run")
    before = (load_run(tmp_path / "run"), gold_report.load_cases(tmp_path / "run"),
              calibration_cases(tmp_path / "run" / "cases.jsonl", {"q1"}))
    assert sorted(slim_run(tmp_path / "run")) == ["cases.jsonl → cases.jsonl.gz", "per_question.csv → per_question.csv.gz",
                                                  "report.html removed"]
    assert {p.name for p in (tmp_path / "run").iterdir()} == {"summary.json", "per_question.csv.gz", "cases.jsonl.gz"}
    after = (load_run(tmp_path / "run"), gold_report.load_cases(tmp_path / "run"),
             calibration_cases(tmp_path / "run" / "cases.jsonl", {"q1"}))
    assert after == before and before[1] and before[2]
    _plain_run(tmp_path / "again")
    slim_run(tmp_path / "again")
    assert (tmp_path / "run" / "cases.jsonl.gz").read_bytes() == (tmp_path / "again" / "cases.jsonl.gz").read_bytes()
    assert gzip.decompress((tmp_path / "run" / "cases.jsonl.gz").read_bytes()).startswith(b'{"configuration"')


def test_a_slimmed_summary_keeps_every_operating_point_and_says_what_it_dropped(tmp_path: Path) -> None:
    curve = {"answer_at": 0.65, "closest_at": 0.19, "points": [{"answer_at": 0.1}, {"answer_at": 0.2}],
             "operating_point": {"threshold": 0.65}}
    config = {"key": "e5", "abstention": {"auc": 0.7, "points": [{"threshold": 0.1}], "operating_point": {"threshold": 0.3}},
              "outcome_curve": curve, "first_read": {"count": 55, "n": 113}}
    (tmp_path / "summary.json").write_text(json.dumps({"run": {"kind": "gold"}, "configurations": [config]}, indent=1),
                                           encoding="utf-8")
    assert slim_summary(tmp_path) == ["e5: abstention, 1 points", "e5: outcome_curve, 2 points"]
    text = (tmp_path / "summary.json").read_text(encoding="utf-8")
    assert "\n" not in text
    kept = json.loads(text)
    slim = kept["configurations"][0]
    assert slim["abstention"] == {"auc": 0.7, "points": [], "operating_point": {"threshold": 0.3}}
    assert slim["outcome_curve"]["operating_point"] == {"threshold": 0.65} and slim["outcome_curve"]["points"] == []
    assert slim["first_read"] == {"count": 55, "n": 113} and kept["slimmed"] == ["e5: abstention, 1 points",
                                                                                  "e5: outcome_curve, 2 points"]
    assert slim_summary(tmp_path) == [] and json.loads((tmp_path / "summary.json").read_text(encoding="utf-8")) == kept


def test_a_file_neither_plain_nor_packed_is_missing(tmp_path: Path) -> None:
    assert stored(tmp_path / "cases.jsonl") is None
    with pytest.raises(FileNotFoundError):
        read_text(tmp_path / "cases.jsonl")


def test_a_kept_gold_card_gives_its_cases_and_rows() -> None:
    folder = EVAL_RUNS / "r12-gold-everyday-dev"
    summary = gold_report.load_summary(folder)
    cases = gold_report.load_cases(folder)
    rows = list(csv.DictReader(io.StringIO(read_text(folder / "per_question.csv"), newline="")))
    assert len(cases) == len(rows) == summary["run"]["data"]["cases"] * len(summary["configurations"])
