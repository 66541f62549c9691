"""Operating the service: the health report behind `python -m ragcore doctor`.
"""

from ragcore.ops.doctor import (
    HealthReport,
    quick_check,
    run_checks,
)

__all__ = [
    "HealthReport",
    "quick_check",
    "run_checks",
]
