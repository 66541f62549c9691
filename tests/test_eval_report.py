"""eval/report.py: the run card's code state, and the card written by write_card."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from eval.report import command_line, git_commit, write_card


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


def test_write_card_adds_commit_dirty_flag_machine_date_and_command(tmp_path: Path) -> None:
    path = write_card(tmp_path / "tune.json", {"weight": 0.45}, command="python scripts/tune_retrieval.py --out x",
                      outputs=["tune.md"])
    card = json.loads(path.read_text(encoding="utf-8"))
    assert card["weight"] == 0.45
    run = card["run"]
    assert set(run) >= {"created", "code", "machine", "command", "outputs"}
    assert run["code"] == git_commit()  # this checkout's commit and dirty flag
    assert run["command"] == "python scripts/tune_retrieval.py --out x"
    assert run["outputs"] == ["tune.md"]
    assert run["machine"]["cpu_count"]

    folder = tmp_path / "run"
    folder.mkdir()
    card = json.loads(write_card(folder, {"run": {"kind": "answers"}}).read_text(encoding="utf-8"))
    assert (folder / "summary.json").is_file()
    assert card["run"]["kind"] == "answers" and "commit" in card["run"]["code"]
    assert card["run"]["command"] == command_line()
