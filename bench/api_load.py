"""REST API load: 20 concurrent clients on loopback against a real uvicorn process, bounded in time.

One scratch embedded database (a temporary DATA_DIR, removed at the end) with Laws 6331,
4857 and 5510 ingested (bench.load.prepare), one user and API token per client (roles
cycling through isg, ik, personel, uretim, admin), and `python -m ragcore api` serving it
with the extractive generator. Each client loops until the deadline over its own seeded
sequence: a chat question (`POST /v1/chat`, JSON) or a retrieval-only search
(`GET /v1/search`), half and half. Reports requests, throughput, p50/p95 latency and errors
(any non-200 or transport failure) per kind, and the server's peak RSS. The clients share
the machine's cores with the server (one process, asyncio + httpx), so the figures are a
lower bound for the server alone.

    python -m bench.api_load [--clients 20] [--seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import httpx
import psutil

from bench import percentile, publish
from bench.load import QUESTIONS, prepare
from ragcore.access import create_token
from ragcore.core import Settings
from ragcore.store import Database, database_url, stop_embedded

REPO = Path(__file__).resolve().parent.parent
KINDS = ("chat", "search")
START_DEADLINE_S = 180


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_api(settings: Settings, url: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("API_")} | {
        "DATABASE_URL": url, "DATA_DIR": str(settings.data_dir), "EMBED_BACKEND": settings.embed_backend,
        "LLM_BACKEND": "extractive", "OLLAMA_BASE_URL": settings.ollama_base_url, "WORKER_IN_APP": "false",
        "LOG_LEVEL": "WARNING", "PYTHONPATH": str(REPO),
    }
    proc = subprocess.Popen([sys.executable, "-m", "ragcore", "api", "--host", "127.0.0.1", "--port", str(port)],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the API exited with {proc.returncode}")
        try:
            if httpx.get(f"{base}/v1/health", timeout=2).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"the API did not become healthy within {START_DEADLINE_S} s")


class ServerMemory:
    """Peak RSS of the API process, sampled four times a second."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except psutil.NoSuchProcess:
                return
            self._stop.wait(0.25)

    def __enter__(self) -> ServerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def _client(base: str, secret: str, index: int, deadline: float, latencies: dict[str, list[float]],
                  errors: list[str], statuses: dict[str, int]) -> None:
    rng = random.Random(index)
    headers = {"Authorization": f"Bearer {secret}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as client:
        while time.monotonic() < deadline:
            kind = rng.choice(KINDS)
            question = rng.choice(QUESTIONS)
            started = time.perf_counter()
            try:
                if kind == "chat":
                    response = await client.post("/v1/chat", json={"question": question})
                else:
                    response = await client.get("/v1/search", params={"q": question, "k": rng.choice([5, 10])})
            except httpx.HTTPError as exc:  # counted and reported, the client goes on
                errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                continue
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                errors.append(f"{kind}: HTTP {response.status_code}: {response.text[:200]}")
                continue
            latencies[kind].append(elapsed)
            if kind == "chat":
                status = response.json()["status"]
                statuses[status] = statuses.get(status, 0) + 1


async def drive(base: str, secrets: list[str], seconds: float) -> tuple[dict[str, list[float]], list[str], dict, float]:
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    statuses: dict[str, int] = {}
    deadline = time.monotonic() + seconds
    started = time.perf_counter()
    await asyncio.gather(*[_client(base, secret, i, deadline, latencies, errors, statuses)
                           for i, secret in enumerate(secrets)])
    return latencies, errors, statuses, time.perf_counter() - started


def _row(label: str, values: list[float], elapsed: float, errors: int) -> str:
    n = len(values)
    p50 = statistics.median(values) if n else float("nan")
    return f"| {label} | {n} | {n / elapsed:.1f} | {p50:.3f} | {percentile(values, 0.95):.3f} | {errors} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()
    base_settings = Settings.from_env(dotenv=None)
    scratch = Path(tempfile.mkdtemp(prefix="dayanak-api-load-"))
    settings = base_settings.replace(database_url=None, data_dir=scratch, embed_backend="use", llm_backend="extractive",
                                   ollama_base_url="http://127.0.0.1:9")
    proc = None
    try:
        url = database_url(settings)
        settings = settings.replace(database_url=url)
        people = prepare(settings, base_settings.documents_dir, args.clients)
        with Database(url) as db:
            secrets = [create_token(db, p.username, name="api_load").secret for p in people]
        proc, base = start_api(settings, url)
        httpx.post(f"{base}/v1/chat", json={"question": QUESTIONS[0]}, timeout=120,
                   headers={"Authorization": f"Bearer {secrets[0]}"}).raise_for_status()  # models warm
        with ServerMemory(proc.pid) as memory:
            latencies, errors, statuses, elapsed = asyncio.run(drive(base, secrets, args.seconds))
        by_kind = defaultdict(int)
        for error in errors:
            by_kind[error.split(":", 1)[0]] += 1
        lines = [
            f"## REST API load ({args.clients} concurrent clients on loopback, one uvicorn process, three laws, "
            "extractive answers)",
            "",
            f"Run for {elapsed:.0f} s; server peak RSS {memory.peak / 2**20:.0f} MiB.",
            "",
            "| requests | count | per second | p50 s | p95 s | errors |",
            "|---|---:|---:|---:|---:|---:|",
            _row("`POST /v1/chat` (JSON)", latencies["chat"], elapsed, by_kind["chat"]),
            _row("`GET /v1/search`", latencies["search"], elapsed, by_kind["search"]),
            _row("all", latencies["chat"] + latencies["search"], elapsed, len(errors)),
            "",
            f"Chat answer statuses: {dict(sorted(statuses.items()))}",
        ]
        if errors:
            lines += ["", "Errors:", *[f"- {e}" for e in errors[:20]]]
        publish("api_load", "\n".join(lines))
        return 0
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=60)
        stop_embedded(scratch)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
