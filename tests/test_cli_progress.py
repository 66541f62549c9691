"""The command line's progress where no bar can be drawn: one line per PROGRESS_LINE_SECONDS."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragcore import jobs
from ragcore.cli.progress import ProgressLines
from tests import pdfs

REPO = Path(__file__).resolve().parent.parent


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_line_per_interval_and_the_last_state_when_closed() -> None:
    clock, out = FakeClock(), io.StringIO()
    with ProgressLines(jobs.get_kind(jobs.INGEST), interval=10, stream=out, clock=clock) as lines:
        lines("extract", 0, 240)  # the first report is printed at once
        for page in range(1, 241):
            clock.now += 0.125  # 30 s of pages: three more lines, at 10, 20 and 30 s
            lines("extract", page, 240)
        clock.now += 3
        lines("embed", 32, 999)  # 3 s after the last line: held back, printed when closed
    assert out.getvalue().splitlines() == [
        "[0 sn] PDF metni çıkarılıyor: 0/240 sayfa (%0)",
        "[10 sn] PDF metni çıkarılıyor: 80/240 sayfa (%33)",
        "[20 sn] PDF metni çıkarılıyor: 160/240 sayfa (%67)",
        "[30 sn] PDF metni çıkarılıyor: 240/240 sayfa (%100)",
        "[33 sn] Parçalar aramaya hazırlanıyor: 32/999 parça (%3)",
    ]


@pytest.mark.parametrize("policy", ["reader", "rules"])
def test_piped_ingest_prints_progress_lines_and_keeps_stdout_for_the_result(db, settings, tmp_path, policy) -> None:
    """The last line is the last stage the policy runs: under the rules, filling the quoter's
    sentences after the commit; under the reader (which never reads them), the database write."""
    upload = tmp_path / "yonetmelik.pdf"
    upload.write_bytes(pdfs.law_pdf())
    env = os.environ | {
        "DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir), "EMBED_BACKEND": "use",
        "OLLAMA_BASE_URL": "http://127.0.0.1:9", "LLM_BACKEND": "extractive", "LOG_LEVEL": "WARNING",
        "PROGRESS_LINE_SECONDS": "3600",  # one line at the start, the last state at the end
        "PYTHONPATH": str(REPO), "ANSWER_POLICY": policy,
    }
    run = subprocess.run([sys.executable, "-m", "ragcore", "ingest", str(upload), "--roles", "isg", "--json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)  # stdout, stderr: pipes
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)  # the result alone: no progress mixed into it
    lines = [line for line in run.stderr.splitlines() if line.startswith("[")]
    assert re.fullmatch(r"\[\d+ sn\] PDF metni çıkarılıyor: 0/2 sayfa \(%0\)", lines[0]), lines
    assert len(lines) == 2, run.stderr
    if policy == "rules":
        assert result["quote_sentences"] > 0
        assert lines[1].endswith(f"Aranabilir; alıntı cümleleri hazırlanıyor: {result['quote_sentences']}/"
                                 f"{result['quote_sentences']} cümle (%100)")
    else:
        assert result["quote_sentences"] == 0
        assert re.search(r"Veritabanına yazılıyor: (\d+)/\1 \(%100\)$", lines[1]), lines
