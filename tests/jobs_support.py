"""What the job tests share: polling for what a worker thread does next."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

DEADLINE_S = 120


def wait_for(what: str, probe: Callable[[], Any], deadline_s: float = DEADLINE_S) -> Any:
    """Poll until `probe()` is truthy; its value, or fail naming `what` and the last value."""
    end = time.monotonic() + deadline_s
    value = None
    while time.monotonic() < end:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}; last value: {value!r}")
