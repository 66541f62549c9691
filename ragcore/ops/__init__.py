"""Operating the service: the health report behind `python -m ragcore doctor`, and backups
(`python -m ragcore backup` / `restore`).
"""

from ragcore.ops.backup import BackupError, BackupResult, backup, read_manifest, restore
from ragcore.ops.doctor import (
    HealthReport,
    quick_check,
    run_checks,
)

__all__ = [
    "BackupError",
    "BackupResult",
    "backup",
    "read_manifest",
    "restore",
    "HealthReport",
    "quick_check",
    "run_checks",
]
