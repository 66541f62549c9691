"""What every AppTest file shares: the app's environment and a clean app between tests.

The app context, its job worker and Streamlit's caches live in this process across AppTest
instances, so each test starts and ends with `reset_app`: the context is dropped, the
in-process job workers have ended (one still stopping would take the next test's jobs) and
their heartbeat rows are forgotten (a stopped worker's recent heartbeat would count as a live
worker for a test that checks the "no worker" warning). Two clean-clone CI runs failed on
exactly these before the reset was shared.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from ragcore.store import Database

REPO = Path(__file__).resolve().parent.parent
COOKIE_KEY = "test-cookie-key-not-secret-0123456789abcdef"
WORKER_THREAD_PREFIX = "dayanak-worker-"

# Embedded models, no model server, a cookie key, no login delay; each test file adds its own.
BASE_ENV = {
    "EMBED_BACKEND": "use",
    "LLM_BACKEND": "extractive",
    "OLLAMA_BASE_URL": "http://127.0.0.1:9",
    "COOKIE_KEY": COOKIE_KEY,
    "LOGIN_SLEEP_TIME": "0",
}


def set_app_env(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    """The app's environment (BASE_ENV, then `env`) and the repository as working directory."""
    for name, value in {**BASE_ENV, **env}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(REPO)


def reset_app(db: Database | None = None, deadline_s: float = 60) -> None:
    """Drop the cached app context, wait for its job workers to end, forget their heartbeats.

    `db`: the database the app's workers registered in (None: the test's own server, which
    goes away with the test)."""
    from ui import context

    context.reset(keep_models=True)
    end = time.monotonic() + deadline_s
    for thread in [t for t in threading.enumerate() if t.name.startswith(WORKER_THREAD_PREFIX)]:
        thread.join(max(0.0, end - time.monotonic()))
        assert not thread.is_alive(), f"job worker thread {thread.name} still running after {deadline_s} s"
    if db is not None:
        with db.connection() as conn:
            conn.execute("DELETE FROM procrastinate_workers")
