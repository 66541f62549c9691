"""`python -m eval fit <name>`: the fitting tools behind one subcommand each, their arguments
and help, and one quick fit through the command line on a few TQuAD articles."""

from __future__ import annotations

import json

import pytest

from eval import fit
from eval.cli import build_parser
from eval.cli import main as cli_main
from ragcore.retrieval import MEASURED_DIR, RETRIEVAL_FILE, THRESHOLDS_FILE, retrieval_default
from tests.conftest import TQUAD_DIR
from tests.test_eval_retrievers import HashEmbedder

needs_tquad = pytest.mark.needs_data("tquad")

# one option each tool has and the others do not: the help shown is the tool's own
OWN_OPTION = {"retrieval": "--train-questions", "threshold": "--min-answered",
              "abstention": "--max-answered-unanswerable-tquad", "extractive": "--embedders"}


def test_every_fitting_tool_is_a_subcommand_with_its_own_help(capsys):
    assert set(fit.FITS) == set(OWN_OPTION)
    for name, option in OWN_OPTION.items():
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args(["fit", name, "--help"])
        assert exit_.value.code == 0
        shown = capsys.readouterr().out
        assert f"python -m eval fit {name}" in shown and option in shown
        assert all(other not in shown for other in OWN_OPTION.values() if other != option)


def test_fit_arguments_reach_the_tool():
    from eval.fit import abstention, extractive, retrieval, threshold

    args = build_parser().parse_args(["fit", "retrieval", "--articles", "12", "--train-questions", "40",
                                      "--dev-limit", "30", "--chunk-size", "500", "--write"])
    assert args.func is retrieval.run
    assert (args.articles, args.train_questions, args.dev_limit, args.chunk_size, args.write) == (12, 40, 30, 500, True)
    args = build_parser().parse_args(["fit", "threshold", "--min-answered", "0.9", "--law-questions", "5"])
    assert args.func is threshold.run and (args.min_answered, args.law_questions) == (0.9, 5)
    args = build_parser().parse_args(["fit", "abstention", "--no-tquad", "--no-quote-check"])
    assert args.func is abstention.run and (args.tquad, args.quote_check, args.write) == (False, False, False)
    args = build_parser().parse_args(["fit", "extractive", "--embedders", "e5", "--report-dev"])
    assert args.func is extractive.run and (args.embedders, args.report_dev) == ("e5", True)


def test_fit_needs_a_tool_name(capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["fit"])
    assert exit_.value.code == 2
    assert "retrieval" in capsys.readouterr().err


def test_a_partial_retrieval_fit_cannot_write_the_shipped_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    before = (MEASURED_DIR / RETRIEVAL_FILE).read_bytes()
    assert cli_main(["fit", "retrieval", "--articles", "4", "--write", "--quiet"]) == 1
    assert "--measured-dir" in capsys.readouterr().err
    assert (MEASURED_DIR / RETRIEVAL_FILE).read_bytes() == before


@needs_tquad
def test_a_quick_retrieval_fit_writes_its_entry_and_run_card(tmp_path, monkeypatch, capsys, pg_url, session_db):
    """Twelve TQuAD articles through the command line: the entry lands in --measured-dir (never
    the shipped file), the report with its run card in --out."""
    import eval.sweep

    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DATABASE_URL", pg_url)
    monkeypatch.setenv("TQUAD_DIR", str(TQUAD_DIR))
    monkeypatch.setattr(eval.sweep, "default_embedder_factory", lambda settings: lambda spec: HashEmbedder())
    for name in (RETRIEVAL_FILE, THRESHOLDS_FILE):
        (tmp_path / name).write_bytes((MEASURED_DIR / name).read_bytes())
    before = (MEASURED_DIR / RETRIEVAL_FILE).read_bytes()
    card = tmp_path / "card"
    assert cli_main(["fit", "retrieval", "--articles", "12", "--train-questions", "40", "--dev-limit", "30",
                     "--write", "--measured-dir", str(tmp_path), "--out", str(card), "--quiet"]) == 0
    report = json.loads((card / "summary.json").read_text(encoding="utf-8"))
    assert report["run"]["code"]["commit"] and len(report["tuning"]["grid"]) == 21
    got = retrieval_default("hash-bow-64", tmp_path)
    assert got.tuned and (got.mode, got.weight) == (report["mode"], report["weight"])
    assert "first 12 articles only" in json.loads((tmp_path / RETRIEVAL_FILE).read_text())[
        "entries"]["hash-bow-64"]["on"]
    assert (MEASURED_DIR / RETRIEVAL_FILE).read_bytes() == before
    assert f"written: {card}" in capsys.readouterr().out
