"""eval/report.py: the run card's code state."""

from __future__ import annotations

import subprocess
from pathlib import Path

from eval.report import git_commit


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_results_of_earlier_runs_do_not_make_the_code_dirty(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "ragcore.py").write_text("X = 1\n")
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "sweep.md").write_text("old\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    assert git_commit(tmp_path)["dirty"] is False

    (tmp_path / "bench" / "results" / "sweep.md").write_text("new\n")  # an earlier benchmark's output
    (tmp_path / "docs" / "eval_runs" / "r1").mkdir(parents=True)
    (tmp_path / "docs" / "eval_runs" / "r1" / "summary.json").write_text("{}\n")
    assert git_commit(tmp_path)["dirty"] is False

    (tmp_path / "ragcore.py").write_text("X = 2\n")  # the code changed
    assert git_commit(tmp_path)["dirty"] is True
    state = git_commit(tmp_path)
    assert len(state["commit"]) == 40
