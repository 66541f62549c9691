"""Static check: every caller of `retrieve` outside the retrieval package says how it scores windows.

`retrieve(..., windows=False)` is the default, but the chat retrieves with
`Settings.dense_windows` (on by default): a chunk scores the mean of its own cosine and its best
sentence window's. A script that fits the gate, the quoter or a threshold on retrieval without
that argument fits them on dense scores the app never produces (the three-outcome gate was
fitted that way once). So each call in the app, the lab and the scripts passes `windows=`
explicitly; the benchmarks over synthetic corpora without windows are the only exception.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    p for folder in ("ragcore", "eval", "scripts", "ui") for p in (REPO / folder).rglob("*.py")
    if "retrieval" not in p.relative_to(REPO).parts[:2]  # ragcore/retrieval defines it
)


def calls_without(tree: ast.AST, keyword: str) -> list[int]:
    """Lines of the `retrieve(...)` calls in `tree` that do not pass `keyword=`."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name == "retrieve" and not any(k.arg == keyword for k in node.keywords):
                lines.append(node.lineno)
    return lines


def test_every_retrieve_call_passes_windows():
    missing = [f"{p.relative_to(REPO)}:{line}" for p in SOURCES
               for line in calls_without(ast.parse(p.read_text(encoding="utf-8")), "windows")]
    assert SOURCES and not missing, f"retrieve() without windows= (the chat passes Settings.dense_windows): {missing}"


def test_the_check_sees_a_call_without_windows():
    tree = ast.parse("retrieve(db, e, q, 'isg', k=5, mode='rrf')\nhybrid.retrieve(db, e, q, r, k=5, mode=m, windows=w)")
    assert calls_without(tree, "windows") == [1]


# The app's own paths (chat, Kaynak arama, the API and CLI searches) and the lab's measurements of
# them bound the lexical leg by `Settings.lexical_postings_budget`; `retrieve`'s own default is
# exact BM25, which the fitting scripts and the retrieval tests keep.
APP_PATHS = sorted(
    [p for folder in ("ragcore", "ui") for p in (REPO / folder).rglob("*.py")
     if "retrieval" not in p.relative_to(REPO).parts[:2]]
    + [REPO / "eval" / "gold_run.py", REPO / "eval" / "answers.py"])


def test_the_apps_paths_pass_the_postings_budget():
    missing = [f"{p.relative_to(REPO)}:{line}" for p in APP_PATHS
               for line in calls_without(ast.parse(p.read_text(encoding="utf-8")), "postings_budget")]
    assert len(APP_PATHS) > 10 and not missing, f"retrieve() without postings_budget= on an app path: {missing}"
