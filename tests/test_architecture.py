"""The layout is the architecture: sub-packages with faces, layers checked by import-linter.

`make test` runs `lint-imports` over the contracts in pyproject.toml; these tests prove the
contracts can fail and check what import-linter cannot express: code outside a sub-package
imports only the names its face (`__init__.__all__`) offers, a face offers names (never a whole
submodule, which would let every name through), and no two modules import each other, even
through a package's face.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import grimp
import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

ROOT = Path(__file__).resolve().parent.parent
SUB_PACKAGES = ("access", "answer", "api", "audit", "cli", "conversations", "core", "documents", "embed", "jobs", "ops", "reader",
                "retrieval", "store")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("ragcore", "eval", "ui", "bench", "pages", cache_dir=None)


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


def _face_offenders(graph: grimp.ImportGraph) -> list[str]:
    """Imports of a sub-package's module from outside it that its face does not offer."""
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
    return offenders


def test_outside_code_imports_only_the_faces():
    offenders = _face_offenders(_graph())
    assert offenders == [], "import these names from the sub-package's face instead:\n" + "\n".join(offenders)


def test_a_submodule_imported_from_outside_is_flagged():
    """The face check has no hole: `from ragcore.access import users` (then `users.create_user`)
    from the UI is flagged like any other reach behind the face."""
    graph = _graph()
    for importer, imported in (("ui.users_admin", "ragcore.access.users"), ("ragcore.cli.core", "ragcore.store.database"),
                               ("eval.retrievers", "ragcore.retrieval.bm25"), ("ragcore.api.app", "ragcore.documents.catalog")):
        graph.add_import(importer=importer, imported=imported, line_number=1, line_contents="")
        assert f"{importer}:1 imports {imported}" in _face_offenders(graph)


def _packages() -> list[ModuleType]:
    """Every package (an `__init__.py` face) of ragcore, the lab and the UI."""
    found = []
    for root in ("ragcore", "eval", "ui"):
        top = importlib.import_module(root)
        found.append(top)
        found += [importlib.import_module(info.name) for info in pkgutil.walk_packages(top.__path__, f"{root}.")
                  if info.ispkg]
    return found


def test_faces_offer_names_not_submodules():
    """A submodule in `__all__` lets every name in it through the face check; a face lists the
    functions, classes and constants others may use."""
    packages = _packages()
    assert {"ragcore.access", "ragcore.store", "eval.fit", "ui"} <= {p.__name__ for p in packages}
    modules = [f"{p.__name__}.{name}" for p in packages for name in getattr(p, "__all__", [])
               if isinstance(getattr(p, name, None), ModuleType)]
    assert modules == [], "import their names at the face and list those instead:\n" + "\n".join(modules)


def _outside_sources(sub_package: str) -> str:
    """Every Python source of the repository outside `ragcore/<sub_package>/`, as one text."""
    folders = ("ragcore", "eval", "ui", "pages", "bench", "scripts", "tests")
    inside = ROOT / "ragcore" / sub_package
    return "\n".join(path.read_text(encoding="utf-8") for folder in folders for path in (ROOT / folder).rglob("*.py")
                     if inside not in path.parents)


def test_every_function_and_constant_a_face_offers_is_used_outside_it():
    """Small faces: a face offers what others use. Classes may stay unused (an error to catch, a
    record a function returns, named in type hints); a function or a constant nobody outside
    uses is the package's own business and stays off the face."""
    unused = []
    for name in SUB_PACKAGES:
        package = importlib.import_module(f"ragcore.{name}")
        outside = _outside_sources(name)
        unused += [f"ragcore.{name}.{item}" for item in package.__all__
                   if not isinstance(getattr(package, item), type) and not re.search(rf"\b{re.escape(item)}\b", outside)]
    assert unused == [], "nobody outside uses these; take them off the face:\n" + "\n".join(unused)


def test_no_import_cycles():
    """No strongly connected component of the import graph holds more than one module, counting a
    package's face (`__init__`) as a module: a face that imports its command modules while they
    import it back is a cycle too."""
    graph = grimp.build_graph("ragcore", "eval", "ui", cache_dir=None)
    names = sorted(graph.modules)
    index = {name: i for i, name in enumerate(names)}
    edges = [(index[a], index[b]) for a in names for b in graph.find_modules_directly_imported_by(a)]
    rows, cols = zip(*edges, strict=True)
    matrix = csr_array((np.ones(len(edges)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    members: dict[int, list[str]] = {}
    for name, label in zip(names, labels, strict=True):
        members.setdefault(int(label), []).append(name)
    cycles = [group for group in members.values() if len(group) > 1]
    assert len(names) > 200 and cycles == [], f"modules that import each other: {cycles}"


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
