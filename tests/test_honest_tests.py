"""The suite cannot pass by not running: missing data fails it, nothing skips itself, and the
helpers import what exists instead of falling back to stand-ins."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_missing_data_fails_the_run_with_one_clear_message(tmp_path) -> None:
    env = os.environ | {"DOCUMENTS_DIR": str(tmp_path / "yok"), "TQUAD_DIR": str(tmp_path / "yok-tquad")}
    tests = ["tests/test_pdf.py::test_law_6331_has_24_pages_with_articles_and_turkish_letters",  # fixture
             "tests/test_chunking.py::test_tquad_articles_keep_exact_spans",  # marker
             "tests/test_chunking.py::test_real_laws_meet_the_chunking_targets"]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout
    assert "4 errors" in run.stdout and "passed" not in run.stdout and "skipped" not in run.stdout, run.stdout
    assert run.stdout.count("test data missing") >= 4
    assert "Run `make download-data`" in run.stdout and f"DOCUMENTS_DIR (now {tmp_path / 'yok'})" in run.stdout
    assert f"TQUAD_DIR (now {tmp_path / 'yok-tquad'})" in run.stdout


def test_no_test_skips_itself() -> None:
    skipping = re.compile(r"pytest\.skip\(|mark\.skip(if)?\b|importorskip")
    offenders = [f"{path.name}:{n}" for path in sorted((REPO / "tests").glob("*.py")) if path.name != Path(__file__).name
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
                 if skipping.search(line)]
    assert offenders == [], "a test that skips can hide a failure; fail with a clear message instead"


def test_no_import_error_fallbacks() -> None:
    folders = ("ragcore", "eval", "scripts", "tests", "ui", "bench")
    offenders = [str(path.relative_to(REPO)) for folder in folders for path in sorted((REPO / folder).rglob("*.py"))
                 if path.name != Path(__file__).name and "except ImportError" in path.read_text(encoding="utf-8")]
    assert offenders == [], "import what exists: a fallback on ImportError routes a broken import elsewhere"


def _private_test_imports(path: Path) -> list[str]:
    """`from tests.test_x import _y` (or `tests.test_x._y`) in `path`: another test module's private helper."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests.test_"):
            found += [f"{path.name}:{node.lineno} {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
        elif (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
              and isinstance(node.value, ast.Name) and node.value.id.startswith("test_")):
            found.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def test_no_test_module_borrows_another_ones_private_helpers(tmp_path) -> None:
    """Shared helpers live in tests/*_support.py, where their callers can see they are shared."""
    offenders = [o for path in sorted((REPO / "tests").glob("*.py")) for o in _private_test_imports(path)]
    assert offenders == [], "move these helpers to a tests/*_support.py module"
    borrowing = tmp_path / "test_borrowing.py"
    borrowing.write_text("from tests.test_abstention import _model, RISK\nfrom tests import test_browser\n"
                         "x = test_browser._login\n", encoding="utf-8")
    assert _private_test_imports(borrowing) == ["test_borrowing.py:1 tests.test_abstention._model",
                                                 "test_borrowing.py:3 test_browser._login"]
