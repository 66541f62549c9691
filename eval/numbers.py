"""Numbers as a Turkish reader writes them: 0,926 · 1.234 · %12,5 · [0,886–0,924] · −0,012.

Written here rather than taken from Babel (not a dependency of this project): the lab needs
four shapes, and Python's own `format` gives the digits; only the separators differ (decimal
comma, thousands dot, the percent sign in front, a true minus sign).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MINUS = "−"
MISSING = "—"


def _swap(text: str) -> str:
    return text.replace(",", "\0").replace(".", ",").replace("\0", ".")


def number(value: float | int | None, digits: int = 3) -> str:
    """0.926 → "0,926"; 1234.5 (digits 1) → "1.234,5"; None/NaN → "—"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, float) and math.isinf(value):
        return ("" if value > 0 else MINUS) + "∞"
    text = _swap(f"{abs(value):,.{digits}f}")
    return (MINUS if value < 0 and text.strip("0,.") else "") + text


def signed(value: float | None, digits: int = 3) -> str:
    """+0,004 / −0,012 / ±0,000."""
    if value is None:
        return MISSING
    text = number(abs(value), digits)
    if not text.strip("0,."):
        return "±" + text
    return ("+" if value > 0 else MINUS) + text


def percent(value: float | None, digits: int = 1) -> str:
    """0.125 → "%12,5" (the Turkish order)."""
    if value is None:
        return MISSING
    return "%" + number(100 * value, digits)


def integer(value: int | None) -> str:
    return MISSING if value is None else number(int(value), 0)


def ci_text(ci: Sequence[float | None], digits: int = 3, *, signed_values: bool = False) -> str:
    """[0,886–0,924], or [−0,041; +0,015] for differences (a dash would read as a minus)."""
    lo, hi = ci
    if signed_values:
        return f"[{signed(lo, digits)}; {signed(hi, digits)}]"
    return f"[{number(lo, digits)}–{number(hi, digits)}]"


def with_ci(value: dict | None, digits: int = 3) -> str:
    """{"mean", "ci"} → "0,812 [0,780–0,840]"."""
    if not value or value.get("mean") is None:
        return MISSING
    return f"{number(value['mean'], digits)} {ci_text(value['ci'], digits)}"


def percent_with_ci(value: dict | None, digits: int = 1) -> str:
    if not value or value.get("mean") is None:
        return MISSING
    lo, hi = value["ci"]
    return f"{percent(value['mean'], digits)} [{percent(lo, digits)}–{percent(hi, digits)}]"
