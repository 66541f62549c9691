"""What the real-browser tests share: Debian's chromium (never `playwright install`), its flags,
the longest wait, a free loopback port."""

from __future__ import annotations

import shutil
import socket

import pytest

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
WAIT_MS = 90_000  # the longest any expected state may take to appear (a loaded CI machine), not a delay


def chromium() -> str:
    path = shutil.which("chromium")
    if not path:
        pytest.fail("chromium is not installed: run `apt-get install -y chromium` (.ci/run does this in CI). "
                    "Do not use `playwright install`.")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
