"""`python -m eval gold …` on the tiny company: import (a bad file named by line, imports nothing),
list, history, export, and a run across USE and e5 × two modes that prints the table and the
recommendation and writes the files an analyst mails."""

from __future__ import annotations

import json

import pytest

from eval import goldset, goldstore
from eval.cli import main
from tests.lab_support import CHUNK_SIZE, GOLD_JSONL, add_company_documents, lab_namespaces

SET = "küçük şirket"


@pytest.fixture()
def cli_env(db, settings, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, value in {"DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir),
                        "EMBED_BACKEND": "use", "LLM_BACKEND": "extractive",
                        "OLLAMA_BASE_URL": "http://127.0.0.1:9"}.items():
        monkeypatch.setenv(name, value)
    add_company_documents(db, settings)
    return db


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_import_list_history_export(cli_env, capsys, tmp_path) -> None:
    bad = tmp_path / "bozuk.jsonl"
    bad.write_text(GOLD_JSONL.splitlines()[0] + "\n" + '{"id": "x", "question": "Soru?", "answerable": true}\n',
                   encoding="utf-8")
    code, _, err = _cli(capsys, "gold", "import", "--questions", str(bad), "--name", SET)
    assert code == 1 and "satır 2, alan “roles”: eksik" in err and "hiçbir soru eklenmedi" in err
    assert goldstore.list_sets(cli_env) == []
    good = tmp_path / "sirket.jsonl"
    good.write_text(GOLD_JSONL, encoding="utf-8")
    code, out, _ = _cli(capsys, "gold", "import", "--file", str(good), "--name", SET)
    assert code == 0 and f"{SET}: version 1, 5 questions — imported" in out
    code, out, _ = _cli(capsys, "gold", "import", "--file", str(good), "--name", SET)
    assert code == 0 and "unchanged" in out
    code, out, _ = _cli(capsys, "gold", "list")
    assert code == 0 and f"| {SET} | 1 | 5 | 4 |" in out
    code, out, _ = _cli(capsys, "gold", "history", "--name", SET)
    assert code == 0 and out.startswith("v1 ") and "5 questions" in out
    code, out, _ = _cli(capsys, "gold", "export", "--name", SET, "--format", "csv")
    assert code == 0 and [q.id for q in goldset.parse_csv(out)] == ["g1", "g2", "g3", "g4", "g5"]
    code, _, err = _cli(capsys, "gold", "export", "--name", "yok")
    assert code == 1 and "yok" in err


def test_a_run_across_two_embedders_and_two_modes(cli_env, capsys, tmp_path) -> None:
    good = tmp_path / "sirket.jsonl"
    good.write_text(GOLD_JSONL, encoding="utf-8")
    assert _cli(capsys, "gold", "import", "--file", str(good), "--name", SET)[0] == 0
    out_dir = tmp_path / "kosu"
    code, out, err = _cli(capsys, "gold", "run", "--set", SET, "--embedders", "use,e5", "--modes", "weighted,lexical",
                          "--chunk-sizes", str(CHUNK_SIZE), "--k", "5", "--quiet", "--out", str(out_dir))
    assert code == 0, err
    summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    labels = [c["label"] for c in summary["configurations"]]
    assert [(c["embedder"], c["mode"]) for c in summary["configurations"]] == [
        ("use", "weighted"), ("use", "lexical"), ("e5", "weighted"), ("e5", "lexical")]
    table = [line for line in out.splitlines() if line.startswith("| ") and any(label in line for label in labels)]
    assert len(table) == 4
    assert summary["recommendation"]["text"] in out and out.count("Önerilen yapılandırma: ") == 1
    assert all(c["leaks"]["count"] == 0 for c in summary["configurations"])
    assert {p.name for p in out_dir.iterdir()} == {"summary.json", "per_question.csv", "cases.jsonl", "report.html"}
    assert f"written: {out_dir}/summary.json" in out
    assert lab_namespaces(cli_env) == []
