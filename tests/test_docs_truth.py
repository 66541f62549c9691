"""What the README and docs/ name exists: every module, file and migration they cite.

Docs rot quietly: a module is folded into another, a script goes, a migration is renamed, and the
sentence that named it still reads well. This test reads every citation of code in the README and
docs/ (run cards excluded: they describe their own commit) and checks it against the tree:
- a dotted module `ragcore.x.y` (or `eval.x`, `ui.x`, `bench.x`): a module or package, or a name
  defined in the module before it (`ragcore.retrieval.Fusion`);
- a path to a code file or folder (`ragcore/…`, `eval/…`, `scripts/…`, `bench/…`, `tests/…`,
  `ui/…`, `pages/…`, `.ci/…`);
- a migration file `NNN_name.sql`.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EVAL_RUNS = REPO / "docs" / "eval_runs"
DOTTED = re.compile(r"(?<![\w./-])((?:ragcore|eval|ui|bench)(?:\.[A-Za-z_]\w*)+)")
CODE_PATH = re.compile(r"(?<![\w./-])((?:ragcore|eval|scripts|bench|tests|ui|pages|\.ci)/[\w./-]*[\w/])")
MIGRATION = re.compile(r"\b(\d{3}_[a-z0-9_]+\.sql)\b")
MIGRATION_DIRS = (REPO / "ragcore" / "store" / "sql", REPO / "eval" / "migrations")
FILE_SUFFIXES = (".md", ".py", ".json", ".sql", ".jsonl", ".png", ".csv", ".txt")
# Files a command writes when it runs (outputs, not code): cited as where to look.
WRITTEN = ("bench/results",)


def documents() -> list[Path]:
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [d for d in docs if EVAL_RUNS not in d.parents]


def _module_exists(dotted: str) -> bool:
    """A module or package by that name, or a name defined in the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        path = REPO.joinpath(*parts[:cut])
        source = path.with_suffix(".py") if path.with_suffix(".py").is_file() else path / "__init__.py"
        if source.is_file():
            if cut == len(parts):
                return True
            return re.search(rf"\b{re.escape(parts[cut])}\b", source.read_text(encoding="utf-8")) is not None
    return False


def _path_exists(cited: str) -> bool:
    cited = cited.rstrip(".").rstrip("/")
    if cited.startswith("pages/") and not cited.endswith(".py"):
        return True  # "pages/s", a unit, not the Streamlit pages folder
    if cited.startswith(WRITTEN):
        return True
    if any(ch in cited for ch in "*{}<>") or "NNN" in cited:
        return True  # a pattern, not a path
    return (REPO / cited).exists()


def _migration_exists(name: str) -> bool:
    return any((folder / name).is_file() for folder in MIGRATION_DIRS)


def stale_citations() -> list[str]:
    stale: list[str] = []
    for doc in documents():
        fenced = False
        for no, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            where = f"{doc.relative_to(REPO)}:{no}"
            for dotted in DOTTED.findall(line):
                if dotted.endswith(FILE_SUFFIXES):
                    continue  # a file name (docs/eval.md), not a module
                if not _module_exists(dotted.rstrip(".")):
                    stale.append(f"{where} names module {dotted}")
            for cited in CODE_PATH.findall(line):
                if not _path_exists(cited):
                    stale.append(f"{where} names path {cited}")
            for name in MIGRATION.findall(line):
                if not _migration_exists(name):
                    stale.append(f"{where} names migration {name}")
    return stale


def test_every_module_path_and_migration_the_docs_name_exists():
    assert stale_citations() == []


def test_a_missing_module_is_noticed():
    assert not _module_exists("ragcore.bm25")
    assert _module_exists("ragcore.retrieval.hybrid")
    assert not _path_exists("scripts/no_such_script.py")
    assert not _migration_exists("003_no_such.sql")


def test_the_readme_stays_one_screenful_per_section():
    """Issue 40: at most 250 lines; the rest lives in docs/."""
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 250
