"""`python -m ragcore api` as a real uvicorn process on loopback, spoken to over real HTTP.

The in-process tests (tests/test_api.py) cover the endpoints; this one checks what only a
real server shows: the command starts, binds 127.0.0.1, answers over TCP, streams
server-sent events as a chunked response, ignores X-Forwarded-For from an untrusted peer,
answers a 1 MB header with a JSON 431, and stops cleanly on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from ragcore.access import tokens
from ragcore.documents import ingest_pdf
from ragcore.embed import CachedEmbedder
from tests import pdfs
from tests.api_support import bearer, person, sse_events
from tests.retrieval_support import make_test_embedder

REPO = Path(__file__).resolve().parent.parent
START_DEADLINE_S = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(base: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the API exited with {proc.returncode}: {proc.stderr.read()[-3000:]}")
        try:
            if httpx.get(f"{base}/v1/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise AssertionError("the API did not become healthy")


def test_the_api_command_serves_over_loopback_and_stops_on_sigterm(db, settings, tmp_path) -> None:
    embedder = CachedEmbedder(make_test_embedder(), db)
    law = ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"]).public_id
    secret = person(db, "mehmet", "isg")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "API_"))} | {
        "DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir), "EMBED_BACKEND": "use",
        "LLM_BACKEND": "extractive", "OLLAMA_BASE_URL": "http://127.0.0.1:9", "PYTHONPATH": str(REPO),
        "WORKER_IN_APP": "false", "API_PORT": str(port)}
    proc = subprocess.Popen([sys.executable, "-m", "ragcore", "api"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc)
        with httpx.Client(base_url=base, timeout=60) as client:
            listed = client.get("/v1/documents", headers=bearer(secret))
            assert listed.status_code == 200 and [d["id"] for d in listed.json()["documents"]] == [law]
            assert "server" not in listed.headers
            assert client.get("/v1/documents").status_code == 401
            with client.stream("POST", "/v1/chat", json={"question": "Yonetmeligin amaci nedir?"},
                               headers=bearer(secret) | {"Accept": "text/event-stream"}) as response:
                assert response.status_code == 200
                assert response.headers["transfer-encoding"] == "chunked"
                body = "".join(response.iter_text())
            events = sse_events(body)
            assert events[0][0] == "delta" and events[-1][0] == "done"
            assert events[-1][1]["sources"][0]["document_id"] == law and events[-1][1]["question_id"]
            # TRUSTED_PROXIES is unset: not even a loopback peer's X-Forwarded-For is believed,
            # so rotating it does not reset the bad-token throttle (uvicorn's default would).
            for attempt in range(tokens.TOKEN_POLICY.max_attempts):
                rejected = client.get("/v1/documents", headers=bearer(f"dyk_{attempt:043d}")
                                      | {"X-Forwarded-For": f"198.51.100.{attempt + 1}"})
                assert rejected.status_code == 401, attempt
            rotated = client.get("/v1/documents", headers=bearer("dyk_" + "r" * 43) | {"X-Forwarded-For": "198.51.100.99"})
            assert rotated.status_code == 429
            assert client.get("/v1/documents", headers=bearer(secret)).status_code == 200  # a valid token passes
            # A 1 MB Authorization header: uvicorn's parser reads it whole (HEADER_READ_LIMIT)
            # and the app answers a JSON 431; h11's default cut the connection mid-send.
            huge = client.get("/v1/documents", headers={"Authorization": "Bearer " + "a" * (1024 * 1024)})
            assert huge.status_code == 431 and huge.json()["error"]["code"] == "request_headers_too_large"
            assert huge.json()["error"]["message_tr"] and huge.json()["error"]["message_en"]
        with socket.socket() as sock:  # bound to loopback only: the host's other addresses refuse
            sock.settimeout(2)
            outside = _other_address()
            if outside is not None:
                assert sock.connect_ex((outside, port)) != 0
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    log = proc.stderr.read()
    # uvicorn shuts down gracefully, then re-raises the signal it caught; the command turns it
    # into a normal exit with the shell's code for SIGTERM, so atexit handlers run.
    assert proc.returncode == 128 + signal.SIGTERM, log[-3000:]
    assert "Application shutdown complete" in log


def _other_address() -> str | None:
    """A non-loopback address of this host, if it has one (a container may have none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent for a UDP connect
            address = sock.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address

