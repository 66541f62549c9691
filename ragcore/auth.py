"""Login throttling: repeated failed logins for one username lock it for a while.

Plain Python and SQL (no Streamlit) so the policy is testable and shared by every front
end. The counter lives in PostgreSQL, not in the session, because an attacker simply opens
a new session; it is per username (not per address) because the app usually sits behind one
reverse proxy where every client has the same address. Unknown usernames are counted too,
so the answer ("locked" or not) reveals nothing about which accounts exist.

Policy: `max_failures` failures inside `window` lock the name for `lockout`; while locked,
attempts are refused without checking the password and are not counted (the lock does not
grow forever); a success clears the record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ragcore.db import Database

_MAX_NAME = 200


@dataclass(frozen=True)
class ThrottlePolicy:
    max_failures: int = 5
    window: timedelta = timedelta(minutes=15)
    lockout: timedelta = timedelta(minutes=15)


DEFAULT_POLICY = ThrottlePolicy()


@dataclass(frozen=True)
class LoginGate:
    """Whether a username may try to log in now; `retry_after` is in whole seconds when locked."""

    allowed: bool
    failures: int = 0
    retry_after: int = 0

    @property
    def retry_minutes(self) -> int:
        return max(1, math.ceil(self.retry_after / 60))

    def message(self) -> str:
        """Turkish text for the login page."""
        if self.allowed:
            return ""
        return (
            "Bu kullanıcı adı için çok fazla hatalı giriş denemesi yapıldı. "
            f"Lütfen yaklaşık {self.retry_minutes} dakika sonra yeniden deneyin."
        )


def _key(username: str) -> str:
    return username.strip().lower()[:_MAX_NAME] or "?"


def _now(now: datetime | None) -> datetime:
    return now if now is not None else datetime.now(timezone.utc)  # noqa: UP017 - explicit tz


def check(db: Database, username: str, *, now: datetime | None = None) -> LoginGate:
    """May `username` try a password now?"""
    current = _now(now)
    with db.connection() as conn:
        row = conn.execute(
            "SELECT failures, locked_until FROM login_attempts WHERE username = %s", (_key(username),)
        ).fetchone()
    if row is None:
        return LoginGate(allowed=True)
    failures, locked_until = row
    if locked_until is not None and locked_until > current:
        return LoginGate(allowed=False, failures=failures, retry_after=math.ceil((locked_until - current).total_seconds()))
    return LoginGate(allowed=True, failures=failures)


def record_failure(
    db: Database, username: str, *, policy: ThrottlePolicy = DEFAULT_POLICY, now: datetime | None = None
) -> LoginGate:
    """Count one failed attempt and return the resulting gate (locked once the limit is reached).

    A failure outside the current window (or after a lock expired) starts a new window, so
    old mistakes do not add up with new ones.
    """
    current = _now(now)
    key = _key(username)
    with db.connection() as conn:
        row = conn.execute(
            "SELECT failures, window_start, locked_until FROM login_attempts WHERE username = %s FOR UPDATE", (key,)
        ).fetchone()
        if row is not None and row[2] is not None and row[2] > current:
            return LoginGate(allowed=False, failures=row[0], retry_after=math.ceil((row[2] - current).total_seconds()))
        fresh = row is None or row[2] is not None or current - row[1] > policy.window
        failures = 1 if fresh else row[0] + 1
        window_start = current if fresh else row[1]
        locked_until = current + policy.lockout if failures >= policy.max_failures else None
        conn.execute(
            """INSERT INTO login_attempts (username, failures, window_start, locked_until, updated_at)
               VALUES (%s, %s, %s, %s, %s)
               ON CONFLICT (username) DO UPDATE SET failures = excluded.failures,
                   window_start = excluded.window_start, locked_until = excluded.locked_until,
                   updated_at = excluded.updated_at""",
            (key, failures, window_start, locked_until, current),
        )
    if locked_until is not None:
        return LoginGate(allowed=False, failures=failures, retry_after=math.ceil(policy.lockout.total_seconds()))
    return LoginGate(allowed=True, failures=failures)


def record_success(db: Database, username: str) -> None:
    """A successful login forgets earlier failures."""
    with db.connection() as conn:
        conn.execute("DELETE FROM login_attempts WHERE username = %s", (_key(username),))


def unlock(db: Database, username: str) -> None:
    """Admin action: lift a lock early (same effect as a success)."""
    record_success(db, username)


def purge_stale(db: Database, *, policy: ThrottlePolicy = DEFAULT_POLICY, now: datetime | None = None) -> int:
    """Delete records whose window and lock are both over (keeps the table small); returns the count."""
    current = _now(now)
    with db.connection() as conn:
        cur = conn.execute(
            "DELETE FROM login_attempts WHERE (locked_until IS NULL OR locked_until <= %s) AND window_start < %s",
            (current, current - policy.window),
        )
        return cur.rowcount
