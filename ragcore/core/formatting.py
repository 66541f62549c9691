"""Numbers, durations and dates the way a Turkish reader writes them: "0,926", "1.924", "%92,6".

One formatter for every Turkish text Dayanak shows (the app, the jobs' progress lines and
summaries, the CLI's Turkish messages), so a number never reads "0.926" on one screen and
"0,926" on the next. Hand-written rather than `locale.setlocale` (process-wide, not thread-safe
and dependent on which locales the machine has generated) or Babel (not a dependency; these
few rules are all Dayanak needs): decimal comma, a dot between thousands, the percent sign in
front, "—" for a missing value.
"""

from __future__ import annotations

import math
from datetime import datetime

MISSING = "—"


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def integer(value: int | float | None) -> str:
    """1924 → "1.924"; -1500 → "-1.500"; None → "—"."""
    if _missing(value):
        return MISSING
    return f"{int(round(value)):,}".replace(",", ".")  # type: ignore[arg-type]


def number(value: float | None, digits: int = 3) -> str:
    """0.926 → "0,926"; 12345.5 (digits=1) → "12.345,5"; None or NaN → "—"."""
    if _missing(value):
        return MISSING
    text = f"{value:,.{digits}f}"
    return text.replace(",", "\0").replace(".", ",").replace("\0", ".")


def percent(share: float | None, digits: int = 1) -> str:
    """A share of 1 as a Turkish percentage: 0.926 → "%92,6"; None → "—"."""
    if _missing(share):
        return MISSING
    return "%" + number(share * 100, digits)  # type: ignore[operator]


def duration(seconds: float | None) -> str:
    """Whole seconds, the way a time left reads: 48 → "48 sn"; 125 → "2 dk 5 sn"; 3720 → "1 sa 2 dk"."""
    if _missing(seconds):
        return MISSING
    whole = max(1, int(round(seconds))) if seconds > 0 else 0  # type: ignore[operator]
    if whole < 60:
        return f"{whole} sn"
    minutes, rest = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} dk {rest} sn" if rest else f"{minutes} dk"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} sa {minutes} dk" if minutes else f"{hours} sa"


def seconds(value: float | None, digits: int = 1) -> str:
    """A measured time: 18.34 → "18,3 sn"."""
    return MISSING if _missing(value) else f"{number(value, digits)} sn"


def milliseconds(ms: float | None) -> str:
    """120.4 → "120 ms"; 2500 → "2,5 sn"."""
    if _missing(ms):
        return MISSING
    if ms < 1000:  # type: ignore[operator]
        return f"{integer(ms)} ms"
    return f"{number(ms / 1000, 1)} sn"  # type: ignore[operator]


def megabytes(size_bytes: int | float) -> str:
    """52428800 → "50,0 MB"."""
    return f"{number(size_bytes / 1024 / 1024, 1)} MB"


def date(moment: datetime) -> str:
    """In the server's local time zone: "01.12.2026"."""
    return moment.astimezone().strftime("%d.%m.%Y")


def date_time(moment: datetime) -> str:
    """In the server's local time zone: "01.12.2026 14:05"."""
    return moment.astimezone().strftime("%d.%m.%Y %H:%M")


def count_of(done: int, total: int, unit: str = "") -> str:
    """"120/1.924 parça"."""
    return f"{integer(done)}/{integer(total)}" + (f" {unit}" if unit else "")
