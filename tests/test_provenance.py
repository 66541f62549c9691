"""Every run card or result file the README and docs/ cite exists, was produced on a clean tree
and names a commit of this repository's history.

A citation is a path under docs/eval_runs/ or bench/results/ however it is written (a link,
backticks, plain text; a link relative to its doc), or a run named in backticks after "run" /
"runs" / "run card" (`r2-use-sweep` → docs/eval_runs/r2-use-sweep/), or a backticked name of a
folder in docs/eval_runs. Fenced code blocks are commands (where a command writes), not citations.
The two folders themselves are indexes and only need to exist. The card of what is cited:
- a run folder: its summary.json;
- a JSON file: the file itself;
- another file (a benchmark's markdown, a chart, a report): the summary.json of the run folder
  it sits in, else the card next to it whose run "outputs" name it (bench.publish writes those).
A card passes when its run's code has a 40-digit commit in HEAD's history (`git merge-base
--is-ancestor`: CI clones main alone, so a side branch's commit is not enough) and `dirty` is false (a card that does not say it was clean does not pass either).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("docs/eval_runs", "bench/results")
EVAL_RUNS = REPO / "docs" / "eval_runs"
PATH = re.compile(r"(?<![\w/.-])(?:\.\./|\./)*((?:docs/eval_runs|bench/results)(?:/[\w.\-]+)*/?)")
LINK = re.compile(r"\]\(([^)\s#]+)")
RUN_NAME = re.compile(r"\b[Rr]uns?(?: cards?)? `([A-Za-z0-9][\w.]*(?:-[\w.]+)+)`")
BACKTICKED = re.compile(r"`([A-Za-z0-9][\w.-]*)`")


@dataclass(frozen=True)
class Citation:
    doc: str
    line_no: int
    line: str
    target: str  # repository-relative, no trailing slash

    def where(self) -> str:
        return f"{self.doc}:{self.line_no} cites {self.target}\n    {self.line.strip()}"


def documents() -> list[Path]:
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [d for d in docs if EVAL_RUNS not in d.parents]


def citations_in(doc: Path, text: str | None = None) -> list[Citation]:
    """The citations in `doc` (its text, or `text` as if it were the doc's)."""
    text = doc.read_text(encoding="utf-8") if text is None else text
    rel_doc = doc.relative_to(REPO).as_posix()
    run_folders = {p.name for p in EVAL_RUNS.iterdir() if p.is_dir()} if EVAL_RUNS.is_dir() else set()
    found: list[Citation] = []
    fenced = False
    for no, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        targets: set[str] = set()
        for link in LINK.findall(line):
            if "://" in link:
                continue
            resolved = (doc.parent / link).resolve()
            try:
                rel = resolved.relative_to(REPO).as_posix()
            except ValueError:
                continue
            if rel.startswith(ROOTS):
                targets.add(rel)
        for path in PATH.findall(line):
            targets.add(path.rstrip("/"))
        for name in RUN_NAME.findall(line):
            targets.add(f"docs/eval_runs/{name}")
        for name in BACKTICKED.findall(line):
            if name in run_folders:
                targets.add(f"docs/eval_runs/{name}")
        found += [Citation(rel_doc, no, line, t.rstrip("/")) for t in sorted(targets)]
    return found


def all_citations() -> list[Citation]:
    return [c for doc in documents() for c in citations_in(doc)]


def card_of(target: str) -> tuple[Path | None, str]:
    """(card path, problem): the card that vouches for a cited path, or why there is none."""
    path = REPO / target
    if not path.exists():
        return None, "missing: no such file or folder"
    if path.is_dir():
        card = path / "summary.json"
        return (card, "") if card.is_file() else (None, "a run folder without summary.json")
    if path.suffix == ".json":
        return path, ""
    if path.parent.relative_to(REPO).as_posix() not in ROOTS and (path.parent / "summary.json").is_file():
        return path.parent / "summary.json", ""
    for candidate in sorted(path.parent.glob("*.json")):
        run = _load(candidate).get("run", {})
        if isinstance(run, dict) and path.name in run.get("outputs", []):
            return candidate, ""
    return None, f"no run card: no JSON in {path.parent.relative_to(REPO)} lists {path.name} in its run outputs"


@cache
def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


@cache
def commit_exists(commit: str) -> bool:
    """The commit is in HEAD's own history: a side branch's commit exists in this clone but not in
    the clone of main that CI makes, so merely existing is not enough."""
    return subprocess.run(["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=REPO,
                          capture_output=True).returncode == 0


def _shown(path: Path) -> str:
    return path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)


def card_problems(card: Path) -> list[str]:
    data = _load(card)
    name = _shown(card)
    if not data:
        return [f"{name} is not a JSON object"]
    code = data.get("run", {}).get("code") if isinstance(data.get("run"), dict) else None
    if not isinstance(code, dict):
        return [f"{name} has no run card (no run.code with commit and dirty flag)"]
    problems = []
    commit = code.get("commit")
    if not isinstance(commit, str) or not re.fullmatch(r"[0-9a-f]{40}", commit):
        problems.append(f"{name} names no commit (run.code.commit = {commit!r})")
    elif not commit_exists(commit):
        problems.append(f"{name}: commit {commit} is not in the history of HEAD")
    if code.get("dirty") is not False:
        problems.append(f"{name} was not produced on a clean tree (run.code.dirty = "
                        f"{code.get('dirty')!r})")
    return problems


def test_the_docs_cite_run_cards() -> None:
    targets = {c.target for c in all_citations()}
    assert "docs/eval_runs/r2-use-sweep" in targets or "docs/eval_runs/r2-use-sweep/summary.json" in targets


def test_every_cited_run_card_exists_is_clean_and_names_a_commit_of_this_repository() -> None:
    failures = []
    for citation in all_citations():
        if citation.target in ROOTS:
            if not (REPO / citation.target).is_dir():
                failures.append(f"{citation.where()}\n    missing folder")
            continue
        card, problem = card_of(citation.target)
        problems = [problem] if card is None else card_problems(card)
        failures += [f"{citation.where()}\n    {p}" for p in problems]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(("line", "expected"), [
    ("run card [r2-x](docs/eval_runs/r2-x/summary.json)", {"docs/eval_runs/r2-x/summary.json"}),
    ("(run `final-B-full-sweep`, commit `616ee86cfa`)", {"docs/eval_runs/final-B-full-sweep"}),
    ("all cells in `bench/results/retrieval.md`.", {"bench/results/retrieval.md"}),
    ("full report in [bench/results/](bench/results/).", {"bench/results"}),
])
def test_citations_are_found_in_links_backticks_and_run_names(line: str, expected: set[str]) -> None:
    assert {c.target for c in citations_in(REPO / "README.md", line)} == expected


def test_links_are_relative_to_their_doc_and_code_blocks_are_not_citations() -> None:
    text = ("see [card](eval_runs/r2-use-sweep/summary.json)\n"
            "```bash\npython -m bench.sweep  # → bench/results/sweep.md\n```\n")
    found = citations_in(REPO / "docs" / "eval.md", text)
    assert [(c.target, c.line_no) for c in found] == [("docs/eval_runs/r2-use-sweep/summary.json", 1)]


WHO = {f"GIT_{role}_{part}": value for role in ("AUTHOR", "COMMITTER")
       for part, value in (("NAME", "provenance test"), ("EMAIL", "test@example.invalid"))}


def test_a_card_passes_only_clean_and_on_a_commit_of_this_repository(tmp_path: Path) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()

    def problems(code: dict | None) -> list[str]:
        card = tmp_path / f"card{len(list(tmp_path.iterdir()))}.json"
        card.write_text(json.dumps({"run": {"code": code}} if code is not None else {"weight": 1}), encoding="utf-8")
        return card_problems(card)

    assert problems({"commit": head, "dirty": False}) == []
    assert "clean tree" in " ".join(problems({"commit": head, "dirty": True}))
    assert "clean tree" in " ".join(problems({"commit": head}))
    assert "names no commit" in " ".join(problems({"commit": "unknown", "dirty": False}))
    assert "not in the history of HEAD" in " ".join(problems({"commit": "0" * 40, "dirty": False}))
    # a commit that exists here but is no ancestor of HEAD (a side branch's), as CI's clone of main lacks it
    side = subprocess.run(["git", "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "side branch"], cwd=REPO,
                          capture_output=True, text=True, check=True, env={**os.environ, **WHO}).stdout.strip()
    assert "not in the history of HEAD" in " ".join(problems({"commit": side, "dirty": False}))
    assert "has no run card" in " ".join(problems(None))
