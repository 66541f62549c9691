"""Mutation check for the permission suites: break each role filter, one at a time, in a throwaway
copy of the repository, run the suites there and report which tests failed and how many leaks
they counted. `make mutation-check` runs it; so does `python scripts/mutation_check.py`.

A mutation is *caught* when at least one permission test fails with it. The script exits
0 when every mutation is caught, 1 when one survives (the suites would not notice that bug),
and 2 when it cannot run honestly: a mutation's target is missing or ambiguous (the code
moved: update MUTATIONS), a mutation does not change the file, or the unmutated copy already
fails. Targets are found by name — a module constant, a function (`Class.method`) or, for
the one inline filter, an exact snippet — never by line number, so rewording the SQL of a
predicate does not break the check but renaming the constant does, loudly.

The copy is the working tree (tracked and untracked, not ignored, files), so the check
measures exactly what is about to be committed; the suites' own data paths are passed on
(DOCUMENTS_DIR, TQUAD_DIR). Leaks are the failed checks in the ledger of
tests/test_permission_paths.py (`artifacts/permission_summary.json` in the copy).

Usage: python scripts/mutation_check.py [--only NAME ...] [--list] [--keep] [--json PATH]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUITES = ["tests/test_permissions.py", "tests/test_permission_paths.py", "tests/test_api_permissions.py",
          "tests/test_role_postings.py"]
# The ledgers the suites write (paths, and the same over the REST API); leaks are summed over them.
SUMMARIES = [Path("artifacts") / "permission_summary.json", Path("artifacts") / "permission_summary_api.json"]
RUN_TIMEOUT_S = 3600


class MutationError(RuntimeError):
    """A mutation cannot be applied as written: its target moved or it changes nothing."""


@dataclass(frozen=True)
class Mutation:
    """One deliberate bug in one role filter.

    kind "constant": replace the value of module constant `target` with `change`, a Python
    expression in which `{original}` stands for the original value expression.
    kind "prepend": insert the statement `change` at the start of function `target`
    ("name" or "Class.method"), after its docstring.
    kind "replace": replace the snippet `target`, which must occur exactly once, with `change`.
    """

    name: str
    file: str
    kind: str
    target: str
    change: str
    bug: str

    @property
    def label(self) -> str:
        """Where the bug goes, on one line."""
        target = self.target.strip().splitlines()[0] + (" …" if "\n" in self.target.strip() else "")
        return f"{self.file}: {target}"


MUTATIONS = [
    Mutation("retrieval-predicate-true", "ragcore/retrieval/hybrid.py", "constant", "ROLE_PREDICATE", '"TRUE"',
             "retrieval ignores roles: every chunk is a candidate for every role"),
    Mutation("retrieval-predicate-inverted", "ragcore/retrieval/hybrid.py", "constant", "ROLE_PREDICATE",
             '"(NOT " + ({original}) + ")"', "retrieval returns exactly the chunks the role may not read"),
    Mutation("retrieval-predicate-off-index", "ragcore/retrieval/hybrid.py", "constant", "ROLE_PREDICATE",
             '"(roles_mask::integer & %(role_bit)s) <> 0"',
             "the role filter, reworded, no longer matches the per-role indexes: a role's search reads (and "
             "filters out) every role's postings, so its work shows a forbidden document's term frequencies"),
    Mutation("window-leg-predicate-dropped", "ragcore/retrieval/hybrid.py", "replace",
             "    WHERE w.embedding IS NOT NULL AND {ROLE_PREDICATE} AND", "    WHERE w.embedding IS NOT NULL AND",
             "the sentence-window leg ranks every role's windows: a forbidden sentence lifts (and shows) its chunk"),
    Mutation("reader-of-every-role", "ragcore/access/roles.py", "replace",
             "(key, bit[0], list(members))", '(key, bit[0], [r[0] for r in conn.execute("SELECT name FROM roles")])',
             "a user holding several roles reads through a reader made of every role: the union is everything"),
    Mutation("documents-visible-true", "ragcore/documents/catalog.py", "constant", "_VISIBLE", '"TRUE"',
             "document list, document lookup, chunk view and chat history ignore roles"),
    Mutation("documents-visible-inverted", "ragcore/documents/catalog.py", "constant", "_VISIBLE",
             '"(NOT " + ({original}) + ")"', "the same paths show exactly the forbidden documents"),
    Mutation("documents-can-read-everyone", "ragcore/documents/catalog.py", "prepend", "can_read", 'role = "admin"',
             "the download check lets every role have every file"),
    Mutation("page-image-as-admin", "ragcore/documents/source_pages.py", "prepend", "page_image", 'role = "admin"',
             "the cited page's image is drawn for every role, whatever it may read"),
    Mutation("answer-stale-role", "ragcore/answer/service.py", "prepend", "AnswerService._current_user", "return user",
             "questions use the role the session started with, not the one in the database now"),
    Mutation("navigation-every-page", "ui/navigation.py", "prepend", "allowed_pages", 'role = "admin"',
             "every role gets the admin pages in its navigation (and by URL)"),
    Mutation("documents-page-admin-controls", "ui/documents_page.py", "replace",
             "            if user.role == \"admin\":\n                _edit_title(ctx, doc)",
             "            if True:\n                _edit_title(ctx, doc)",
             "the Dokümanlar page offers delete and role changes to every role"),
    Mutation("search-page-any-role", "ui/search.py", "replace",
             'roles = tuple(names) if user.is_admin else (user.reader,)', "roles = tuple(names)",
             "Kaynak arama lets a non-admin pick another role to search as"),
    Mutation("chat-history-not-rechecked", "ui/chat.py", "prepend", "apply_permissions", "return None",
             "the open chat keeps showing sources after they were revoked"),
    Mutation("api-admin-guard-open", "ragcore/api/deps.py", "prepend", "require_admin", "return user",
             "the REST API lets every role upload, delete documents and read jobs"),
    Mutation("api-search-any-role", "ragcore/api/deps.py", "prepend", "search_role", "return requested or user.role",
             "GET /v1/search lets a non-admin search as any role (admin included)"),
    Mutation("api-documents-as-admin", "ragcore/api/routes/documents.py", "prepend", "_readable", 'role = "admin"',
             "GET /v1/documents/{id} and its file answer every role as if it were admin"),
    Mutation("api-token-ignores-revocation", "ragcore/access/tokens.py", "replace", "  AND t.revoked_at IS NULL\n", "",
             "a revoked API token (by hand, password change or deactivation) keeps working"),
    Mutation("feedback-any-asker", "ragcore/answer/questions.py", "replace",
             "WHERE public_id = %(public_id)s::uuid AND username = %(username)s",
             "WHERE public_id = %(public_id)s::uuid",
             "anyone may rate (and so push into the review queue) anyone's question"),
    Mutation("conversation-history-not-rechecked", "ragcore/conversations/citations.py", "prepend",
             "readable_history", "return list(turns)",
             "a reopened conversation shows answers from documents its owner can no longer read"),
    Mutation("conversations-any-owner", "ragcore/conversations/store.py", "replace",
             'AND c.username = %(username)s AND {_LIVE}"""', 'AND {_LIVE}"""',
             "anyone may open, export and continue anyone's conversation"),
    Mutation("audit-trail-anyone", "ragcore/audit/trail.py", "prepend", "can_read_audit", "return True",
             "every role reads the audit trail: everybody's questions, over the API and on the Denetim page"),
    Mutation("cli-documents-internal-id", "ragcore/cli/documents.py", "replace",
             '{"document_id": d.public_id, "title": d.title,', '{"document_id": d.id, "title": d.title,',
             "`documents --json` prints the sequential key, so a reader's ids skip over forbidden documents"),
]


# ----------------------------------------------------------------------------- applying a mutation


def _module_constant(tree: ast.Module, name: str) -> ast.expr:
    found = [node.value for node in tree.body if isinstance(node, ast.Assign)
             and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name]
    found += [node.value for node in tree.body if isinstance(node, ast.AnnAssign) and node.value is not None
              and isinstance(node.target, ast.Name) and node.target.id == name]
    if len(found) != 1:
        raise MutationError(f"module constant {name} assigned {len(found)} times at module level (expected once)")
    return found[0]


def _function(tree: ast.Module, qualname: str) -> ast.FunctionDef:
    scope: list[ast.stmt] = tree.body
    *owners, name = qualname.split(".")
    for owner in owners:
        classes = [n for n in scope if isinstance(n, ast.ClassDef) and n.name == owner]
        if len(classes) != 1:
            raise MutationError(f"class {owner} found {len(classes)} times")
        scope = classes[0].body
    functions = [n for n in scope if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name]
    if len(functions) != 1:
        raise MutationError(f"function {qualname} found {len(functions)} times")
    return functions[0]  # type: ignore[return-value]


def _offset(lines: list[str], line: int, col: int) -> int:
    """Character offset of (1-based line, 0-based UTF-8 column) in the joined text."""
    prefix = "".join(lines[: line - 1])
    return len(prefix) + len(lines[line - 1].encode("utf-8")[:col].decode("utf-8"))


def mutate(source: str, mutation: Mutation) -> str:
    """The mutated source; MutationError if the target is missing, ambiguous or unchanged."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    if mutation.kind == "constant":
        value = _module_constant(tree, mutation.target)
        start = _offset(lines, value.lineno, value.col_offset)
        end = _offset(lines, value.end_lineno, value.end_col_offset)  # type: ignore[arg-type]
        original = source[start:end]
        mutated = source[:start] + mutation.change.format(original=original) + source[end:]
    elif mutation.kind == "prepend":
        function = _function(tree, mutation.target)
        body = function.body
        first = body[1] if (len(body) > 1 and isinstance(body[0], ast.Expr)
                            and isinstance(getattr(body[0], "value", None), ast.Constant)
                            and isinstance(body[0].value.value, str)) else body[0]
        indent = " " * first.col_offset
        start = _offset(lines, first.lineno, 0)
        mutated = source[:start] + f"{indent}{mutation.change}  # MUTATION\n" + source[start:]
    elif mutation.kind == "replace":
        count = source.count(mutation.target)
        if count != 1:
            raise MutationError(f"snippet {mutation.target!r} occurs {count} times (expected once)")
        mutated = source.replace(mutation.target, mutation.change)
    else:
        raise MutationError(f"unknown mutation kind {mutation.kind!r}")
    if mutated == source:
        raise MutationError("the mutation does not change the file")
    ast.parse(mutated)  # still valid Python
    return mutated


def check_all_apply(root: Path, mutations: list[Mutation]) -> None:
    """Fail before any slow run if some mutation no longer finds its target."""
    problems = []
    for mutation in mutations:
        path = root / mutation.file
        try:
            if not path.is_file():
                raise MutationError(f"{mutation.file} does not exist")
            mutate(path.read_text(encoding="utf-8"), mutation)
        except MutationError as exc:
            problems.append(f"{mutation.name} ({mutation.file}): {exc}")
    if problems:
        raise MutationError("cannot apply:\n  " + "\n  ".join(problems))


# ----------------------------------------------------------------------------- running the suites


def _working_tree_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                         capture_output=True, check=True).stdout.decode("utf-8")
    return [name for name in out.split("\0") if name and (root / name).is_file() and not (root / name).is_symlink()]


def make_copy(root: Path, destination: Path) -> Path:
    for name in _working_tree_files(root):
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    return destination


def _environment() -> dict[str, str]:
    from tests.conftest import DOCUMENTS_DIR, TQUAD_DIR  # the paths the original checkout uses

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update({"DOCUMENTS_DIR": str(DOCUMENTS_DIR), "TQUAD_DIR": str(TQUAD_DIR), "PYTHONDONTWRITEBYTECODE": "1"})
    env.pop("PYTHONPATH", None)
    return env


def _check_imports_from(copy: Path, env: dict[str, str]) -> None:
    probe = subprocess.run([sys.executable, "-c", "import ragcore, ui; print(ragcore.__file__); print(ui.__file__)"],
                           cwd=copy, env=env, capture_output=True, text=True, check=True).stdout.split()
    if not all(Path(p).resolve().is_relative_to(copy.resolve()) for p in probe):
        raise MutationError(f"the copy imports the packages from elsewhere: {probe}")


@dataclass
class Outcome:
    name: str
    bug: str
    target: str
    returncode: int
    tests: int
    failed: list[str] = field(default_factory=list)
    checks: int | None = None
    leaks: int | None = None
    seconds: float = 0.0

    @property
    def caught(self) -> bool:
        return bool(self.failed)


def _junit(path: Path) -> tuple[int, list[str]]:
    root = ET.parse(path).getroot()
    cases = list(root.iter("testcase"))
    failed = [f"{c.get('classname', '').rsplit('.', 1)[-1]}::{c.get('name')}" for c in cases
              if c.find("failure") is not None or c.find("error") is not None]
    return len(cases), failed


def run_suites(copy: Path, env: dict[str, str], name: str, bug: str, target: str) -> Outcome:
    report = copy / "artifacts" / "mutation-junit.xml"
    summaries = [copy / name for name in SUMMARIES]
    for summary in summaries:
        summary.unlink(missing_ok=True)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *SUITES],
        cwd=copy, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )
    seconds = time.monotonic() - started
    if not report.is_file():
        raise MutationError(f"{name}: pytest wrote no report (exit {proc.returncode}):\n{proc.stdout[-2000:]}"
                            f"\n{proc.stderr[-2000:]}")
    tests, failed = _junit(report)
    outcome = Outcome(name, bug, target, proc.returncode, tests, failed, seconds=round(seconds, 1))
    ledgers = [json.loads(summary.read_text(encoding="utf-8")) for summary in summaries if summary.is_file()]
    if ledgers:
        outcome.checks = sum(ledger["checks"] for ledger in ledgers)
        outcome.leaks = sum(ledger["leaks"] for ledger in ledgers)
    return outcome


def _format(outcome: Outcome) -> str:
    verdict = "caught" if outcome.caught else "SURVIVED"
    leaks = "no ledger" if outcome.leaks is None else f"{outcome.leaks} leaks in {outcome.checks} checks"
    lines = [f"{verdict:8} {outcome.name}: {len(outcome.failed)} of {outcome.tests} tests failed, {leaks} "
             f"({outcome.seconds:.0f} s)", f"         bug: {outcome.bug} [{outcome.target}]"]
    lines += [f"         - {test}" for test in outcome.failed]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutations")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--keep", action="store_true", help="keep the throwaway copies (their path is printed)")
    parser.add_argument("--json", type=Path, default=REPO / "artifacts" / "mutation_check.json")
    args = parser.parse_args(argv)
    mutations = MUTATIONS
    if args.only:
        unknown = set(args.only) - {m.name for m in MUTATIONS}
        if unknown:
            print(f"unknown mutation(s): {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
        mutations = [m for m in MUTATIONS if m.name in args.only]
    if args.list:
        for m in mutations:
            print(f"{m.name:32} {m.kind} {m.label}\n{'':32} {m.bug}")
        return 0
    try:
        check_all_apply(REPO, mutations)
    except MutationError as exc:
        print(f"mutation check: {exc}", file=sys.stderr)
        return 2

    env = _environment()
    workdir = Path(tempfile.mkdtemp(prefix="dayanak-mutation-"))
    outcomes: list[Outcome] = []
    try:
        baseline_copy = make_copy(REPO, workdir / "baseline")
        _check_imports_from(baseline_copy, env)
        print(f"unmutated copy in {baseline_copy}: running {' '.join(SUITES)} …", flush=True)
        baseline = run_suites(baseline_copy, env, "unmutated", "none", "-")
        print(_format(baseline).replace("caught  ", "FAILING ").replace("SURVIVED", "ok      "), flush=True)
        if baseline.failed or baseline.returncode != 0 or baseline.leaks != 0:
            print("mutation check: the suites do not pass on the unmutated copy; fix that first", file=sys.stderr)
            return 2
        for mutation in mutations:
            copy = make_copy(REPO, workdir / mutation.name)
            path = copy / mutation.file
            path.write_text(mutate(path.read_text(encoding="utf-8"), mutation), encoding="utf-8")
            outcome = run_suites(copy, env, mutation.name, mutation.bug, mutation.label)
            outcomes.append(outcome)
            print(_format(outcome), flush=True)
            if not args.keep:
                shutil.rmtree(copy, ignore_errors=True)
    except (MutationError, subprocess.SubprocessError) as exc:
        print(f"mutation check: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.keep:
            print(f"copies kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    caught = [o for o in outcomes if o.caught]
    total_leaks = sum(o.leaks or 0 for o in outcomes)
    print(f"\n{len(caught)} of {len(outcomes)} mutations caught; {total_leaks} leaks counted in total; "
          f"unmutated: {baseline.tests} tests pass, {baseline.checks} checks, 0 leaks")
    from eval.report import write_card  # numpy and psutil only once there is a report (REPO is on sys.path)

    write_card(args.json, {  # with its run card: the copies hold this checkout's code, so its commit and dirty flag
        "suites": SUITES, "unmutated": asdict(baseline),
        "mutations": [asdict(o) | {"caught": o.caught} for o in outcomes],
        "caught": len(caught), "total": len(outcomes),
    })
    return 0 if len(caught) == len(outcomes) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
