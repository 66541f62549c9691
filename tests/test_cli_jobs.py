"""`python -m ragcore ingest|reembed --background`, `jobs`, `jobs cancel|retry`, `worker`."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragcore import jobs
from ragcore.cli import main
from ragcore.cli.progress import StageBars
from tests import pdfs

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture()
def cli_env(settings) -> dict[str, str]:
    return {"DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir), "EMBED_BACKEND": "use",
            "OLLAMA_BASE_URL": "http://127.0.0.1:9", "LLM_BACKEND": "extractive", "LOG_LEVEL": "WARNING"}


@pytest.fixture()
def cli(db, cli_env, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)  # no stray .env
    for name, value in cli_env.items():
        monkeypatch.setenv(name, value)

    def run(*argv: str) -> tuple[int, object, str]:
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
        out, err = capsys.readouterr()
        payload = json.loads(out) if "--json" in argv and code == 0 else out
        return code, payload, err

    return run


def test_background_ingest_list_show_cancel_retry(cli, db, settings, tmp_path) -> None:
    path = tmp_path / "yonetmelik.pdf"
    path.write_bytes(pdfs.law_pdf())
    code, queued, err = cli("ingest", str(path), "--roles", "isg", "--background", "--json")
    assert code == 0 and queued["status"] == "queued" and queued["kind"] == jobs.INGEST
    assert "no live worker" in err  # nobody runs it yet, and the operator is told
    job_id = queued["job_id"]  # the public id; the staged file is named by the row's key
    key = jobs.find_job(db, job_id).id
    assert jobs.staged_path(settings, key).is_file()

    code, listed, _ = cli("jobs", "--json")
    assert code == 0 and [j["job_id"] for j in listed] == [job_id] and listed[0]["label"] == "yonetmelik.pdf"
    code, shown, _ = cli("jobs", str(job_id), "--json")
    assert code == 0 and shown["status"] == "queued" and shown["arguments"]["roles"] == ["isg"]
    code, human, _ = cli("jobs")
    assert code == 0 and job_id in human and "queued" in human

    code, cancelled, _ = cli("jobs", "cancel", str(job_id), "--json")
    assert code == 0 and cancelled["status"] == "cancelled"
    assert not jobs.staged_path(settings, key).exists()
    code, _, err = cli("jobs", "retry", str(job_id))
    assert code == 1 and "dosya artık yok" in err
    code, _, err = cli("jobs", "cancel", str(job_id))
    assert code == 1 and "zaten bitmiş" in err
    for unknown in ("999", str(key), "3f2a9c1e-0000-4000-8000-000000000000"):  # the key is no id either
        code, _, err = cli("jobs", unknown)
        assert code == 1 and "bulunamadı" in err, unknown
    code, _, err = cli("jobs", "sil", "1")
    assert code == 1 and "usage" in err


def test_background_reembed_is_one_job_at_a_time(cli) -> None:
    code, queued, _ = cli("reembed", "--background", "--json")
    assert code == 0 and queued["kind"] == jobs.REEMBED
    code, _, err = cli("reembed", "--background")
    assert code == 1 and "zaten var" in err
    code, human, _ = cli("jobs", str(queued["job_id"]))
    assert code == 0 and "Yeniden gömme" in human and "Sırada" in human


def test_foreground_progress_bars_go_to_stderr(capsys) -> None:
    bars = StageBars(jobs.get_kind(jobs.INGEST), enabled=True)
    with bars:
        for done in range(4):
            bars("extract", done, 3)
        bars("embed", 0, 64)
        bars("embed", 64, 64)
    out, err = capsys.readouterr()
    assert out == ""
    assert "PDF metni çıkarılıyor" in err and "3/3" in err and "Parçalar aramaya hazırlanıyor" in err and "64/64" in err
    quiet = StageBars(jobs.get_kind(jobs.INGEST), enabled=False)
    quiet("extract", 1, 3)
    assert capsys.readouterr() == ("", "")


def test_worker_command_runs_jobs_and_stops_on_sigterm(db, settings, cli_env) -> None:
    """The real `python -m ragcore worker` process (compose's worker service)."""
    env = os.environ | cli_env | {"PYTHONPATH": str(REPO), "JOB_HEARTBEAT_SECONDS": "1", "LOG_LEVEL": "INFO"}
    job = jobs.submit_ingest(db, settings, pdfs.law_pdf(), filename="a.pdf", roles=["isg"])
    proc = subprocess.Popen([sys.executable, "-m", "ragcore", "worker", "--name", "cli-worker"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while jobs.get_job(db, job.id).status != jobs.SUCCEEDED and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.1)
        finished = jobs.get_job(db, job.id)
        assert finished.status == jobs.SUCCEEDED and finished.worker == "cli-worker", finished
        assert jobs.live_workers(db, settings) == 1
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert jobs.live_workers(db, settings) == 0  # it unregistered on the way out


def test_stage_bars_accept_an_unknown_stage() -> None:
    stream = io.StringIO()
    bars = StageBars(jobs.get_kind(jobs.REEMBED), enabled=True)
    sys_stderr, sys.stderr = sys.stderr, stream
    try:
        with bars:
            bars("something-new", 1, 2)
    finally:
        sys.stderr = sys_stderr
    assert "something-new" in stream.getvalue()
