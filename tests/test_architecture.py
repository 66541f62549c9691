"""The layout is the architecture: sub-packages with faces, layers checked by import-linter.

`make test` runs `lint-imports` over the contracts in pyproject.toml; these tests prove the
contracts can fail and check what import-linter cannot express: code outside a sub-package
imports only the names its face (`__init__.__all__`) offers.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
SUB_PACKAGES = ("access", "answer", "api", "audit", "cli", "conversations", "core", "documents", "embed", "jobs", "ops", "reader",
                "retrieval", "store")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("ragcore", "eval", "ui", "bench", cache_dir=None)


def _sub_package(module: str) -> str | None:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "ragcore" and len(parts) > 1 and parts[1] in SUB_PACKAGES else None


def test_ragcore_top_level_is_its_sub_packages():
    entries = {p.name for p in (ROOT / "ragcore").iterdir() if not p.name.startswith((".", "__pycache__"))}
    modules = {name for name in entries if name.endswith(".py")}
    assert modules == {"__init__.py", "__main__.py"}
    packages = {name for name in entries if (ROOT / "ragcore" / name / "__init__.py").is_file()}
    assert packages == set(SUB_PACKAGES)


def test_every_sub_package_declares_its_face():
    for name in SUB_PACKAGES:
        package = importlib.import_module(f"ragcore.{name}")
        assert package.__doc__, f"ragcore.{name} has no docstring saying what it owns"
        assert isinstance(getattr(package, "__all__", None), list), f"ragcore.{name} has no __all__"
        missing = [item for item in package.__all__ if not hasattr(package, item)]
        assert missing == [], f"ragcore.{name}.__all__ names what it does not define: {missing}"


def test_outside_code_imports_only_the_faces():
    graph = _graph()
    offenders = []
    for importer in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(importer):
            owner = _sub_package(imported)
            if owner is None or imported == owner or _sub_package(importer) == owner:
                continue
            face = importlib.import_module(owner)
            if imported.rsplit(".", 1)[1] not in face.__all__:
                lines = graph.get_import_details(importer=importer, imported=imported)
                offenders.append(f"{importer}:{lines[0]['line_number'] if lines else '?'} imports {imported}")
    assert offenders == [], "import these names from the sub-package's face instead:\n" + "\n".join(offenders)


def _lint_copy(tmp_path: Path) -> Path:
    for name in ("ragcore", "eval", "ui", "pages", "bench"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=folder, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(folder)}, timeout=300)


def test_contracts_hold_on_this_tree(tmp_path):
    result = _lint(_lint_copy(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_an_upward_import_in_ragcore_breaks_the_contracts(tmp_path):
    folder = _lint_copy(tmp_path)
    text_module = folder / "ragcore" / "core" / "text.py"
    text_module.write_text(text_module.read_text(encoding="utf-8") + "\nimport eval  # noqa: E402,F401\n",
                           encoding="utf-8")
    result = _lint(folder)
    assert result.returncode != 0
    assert "ragcore imports no Streamlit, UI, lab or benchmark code BROKEN" in result.stdout


def test_a_lower_sub_package_importing_a_higher_one_breaks_the_layers(tmp_path):
    folder = _lint_copy(tmp_path)
    store_face = folder / "ragcore" / "store" / "__init__.py"
    store_face.write_text(store_face.read_text(encoding="utf-8") + "\nimport ragcore.answer  # noqa: E402,F401\n",
                          encoding="utf-8")
    result = _lint(folder)
    assert result.returncode != 0
    assert "ragcore's sub-packages, top to bottom BROKEN" in result.stdout
