"""The processes that own the embedded PostgreSQL stop it when they get SIGTERM.

A service manager, `docker stop` and `kill` send SIGTERM, not SIGINT. Each test starts a real
process on a free port over its own DATA_DIR (no DATABASE_URL, so the process starts the
embedded server itself), waits until it serves, sends SIGTERM and checks that the process
exits and that the postmaster named in postmaster.pid is gone. The waits are bounds against a
hang, not timing claims.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg

REPO = Path(__file__).resolve().parent.parent
START_BOUND_S = 120
STOP_BOUND_S = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def environment(data: Path, **extra: str) -> dict[str, str]:
    """The test's environment without its database: the process must start its own server.
    Ollama is unreachable, so no model is loaded; the database is all that has to come up."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "API_", "DATABASE_"))}
    return inherited | {"DATA_DIR": str(data), "EMBED_BACKEND": "ollama", "LLM_BACKEND": "extractive",
                        "OLLAMA_BASE_URL": "http://127.0.0.1:9", "PYTHONPATH": str(REPO), **extra}


def start(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    """The process, its stdout and stderr into `log` (read while it runs, unlike a pipe)."""
    with log.open("w") as out:
        return subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)


def wait_for(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_BOUND_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the process exited with {proc.returncode}: {log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{url} did not answer")


def postmaster_of(data: Path) -> psutil.Process:
    pid_file = data / "pg" / "data" / "postmaster.pid"
    deadline = time.monotonic() + START_BOUND_S
    while not pid_file.exists():
        assert time.monotonic() < deadline, "the embedded PostgreSQL did not start"
        time.sleep(0.2)
    process = psutil.Process(int(pid_file.read_text().split()[0]))
    assert process.is_running()
    return process


def stop_with_sigterm(proc: subprocess.Popen, postmaster: psutil.Process, data: Path) -> None:
    """SIGTERM; the process must exit and take its postmaster with it."""
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=STOP_BOUND_S)
    gone, _ = psutil.wait_procs([postmaster], timeout=STOP_BOUND_S)
    assert gone == [postmaster], f"the embedded PostgreSQL (pid {postmaster.pid}) outlived its owner"
    assert not (data / "pg" / "data" / "postmaster.pid").exists()


def clean_up(proc: subprocess.Popen, postmaster: psutil.Process | None) -> None:
    """After a failure: end what this test started (the process and the server it started) only."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    if postmaster is not None and postmaster.is_running():
        postmaster.terminate()


def test_sigterm_stops_the_api_and_its_embedded_postgresql(tmp_path) -> None:
    """uvicorn re-raises the SIGTERM it handled; SIGTERM's default action used to kill the
    process before atexit, where pgserver stops the server (SIGINT always worked)."""
    port, data, log = free_port(), tmp_path / "data", tmp_path / "api.log"
    proc = start([sys.executable, "-m", "ragcore", "api", "--port", str(port), "--no-worker"], tmp_path,
                 environment(data), log)
    postmaster = None
    try:
        wait_for(f"http://127.0.0.1:{port}/v1/health", proc, log)
        postmaster = postmaster_of(data)
        stop_with_sigterm(proc, postmaster, data)
    finally:
        clean_up(proc, postmaster)
    output = log.read_text()
    assert proc.returncode == 128 + signal.SIGTERM, output[-3000:]
    assert "Application shutdown complete" in output


def test_sigterm_stops_the_app_and_its_embedded_postgresql(tmp_path) -> None:
    """`streamlit run app.py` (what `make run` starts) opens the database on a session's first
    run, so the test opens one over the app's websocket, as a browser does; the in-app job
    worker runs too. Streamlit's own SIGTERM handler stops its server and the process exits
    normally, through atexit."""
    port, data, log = free_port(), tmp_path / "data", tmp_path / "app.log"
    proc = start([str(Path(sys.executable).parent / "streamlit"), "run", str(REPO / "app.py"),
                  "--server.port", str(port), "--server.headless", "true"], REPO,
                 environment(data, WORKER_IN_APP="true", ADMIN_PASSWORD="kapanis-parola-1"), log)
    postmaster = None
    try:
        wait_for(f"http://127.0.0.1:{port}/_stcore/health", proc, log)
        asyncio.run(_first_run(port, log))
        postmaster = postmaster_of(data)
        stop_with_sigterm(proc, postmaster, data)
    finally:
        clean_up(proc, postmaster)
    output = log.read_text()
    assert proc.returncode == 0, output[-3000:]
    assert " stopped" in output.split(WORKER_STARTED, 1)[1], output[-3000:]  # the worker stopped first


WORKER_STARTED = "Starting worker on queues"  # procrastinate's line once the app's worker runs


async def _first_run(port: int, log: Path) -> None:
    """Connect as a browser and ask for the script's first run; return once the worker started."""
    async with websockets.connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"]) as ws:
        rerun = BackMsg()
        rerun.rerun_script.query_string = ""
        await ws.send(rerun.SerializeToString())
        deadline = time.monotonic() + START_BOUND_S
        while WORKER_STARTED not in log.read_text():
            assert time.monotonic() < deadline, "the app's first run did not start its worker"
            try:
                await asyncio.wait_for(ws.recv(), 0.5)
            except TimeoutError:
                pass
