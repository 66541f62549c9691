"""Server-side revocation of sign-ins: two instants per user, compared on every run.

streamlit-authenticator's remember-me cookie holds only the username and `exp_date` (its
issue time plus the cookie lifetime), signed with COOKIE_KEY, so by itself it stays valid for
its whole lifetime, after logout and after a password reset. Each `users` row therefore
carries two instants (migration 004):

* `sessions_valid_after`: every sign-in from before it, an open session or a cookie, is void.
  Set by logout (every browser of that user), a password change (own or admin reset) and
  deactivation.
* `cookies_valid_after`: every remember-me cookie issued before it is void. Set by all of the
  above and by a role change; an open session keeps running after a role change because the
  role is read from the database on every run anyway.

The cookie's issue time is `exp_date - lifetime`; both it and the revocation instants come
from the application's clock (not the database's), so they compare on one clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from ragcore.store import Database

SECONDS_PER_DAY = 86_400.0

# SQL assignments that revoke, for `UPDATE users SET …` statements (parameter `%(revoked_at)s`).
REVOKE_SESSIONS = "sessions_valid_after = %(revoked_at)s, cookies_valid_after = %(revoked_at)s"
REVOKE_COOKIES = "cookies_valid_after = %(revoked_at)s"


@dataclass(frozen=True)
class Epochs:
    """A user's revocation instants (None: nothing revoked) and whether the account is active."""

    active: bool
    sessions_valid_after: datetime | None
    cookies_valid_after: datetime | None


def now() -> datetime:
    return datetime.now(timezone.utc)  # noqa: UP017 - explicit tz


def _instant(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, timezone.utc)  # noqa: UP017 - explicit tz


def epochs(db: Database, username: str) -> Epochs | None:
    """The revocation state of `username`, or None when there is no such user."""
    with db.connection() as conn:
        row = conn.execute(
            "SELECT active, sessions_valid_after, cookies_valid_after FROM users WHERE username = %s",
            (username.strip().lower(),),
        ).fetchone()
    return Epochs(*row) if row else None


def revoke(db: Database, username: str, *, at: datetime | None = None) -> None:
    """Void every open session and remember-me cookie of `username` (logout)."""
    with db.connection() as conn:
        conn.execute(
            f"UPDATE users SET {REVOKE_SESSIONS} WHERE username = %(username)s",
            {"revoked_at": at or now(), "username": username.strip().lower()},
        )


def session_valid(state: Epochs | None, signed_in_at: float | None) -> bool:
    """Whether a session signed in at `signed_in_at` (epoch seconds) is still valid."""
    if state is None or not state.active or signed_in_at is None:
        return False
    return state.sessions_valid_after is None or _instant(signed_in_at) > state.sessions_valid_after


def cookie_issued_at(exp_date: float, lifetime_days: float) -> float:
    """The issue time of a cookie whose expiry is `exp_date` (the library stores only that)."""
    return exp_date - lifetime_days * SECONDS_PER_DAY


def cookie_valid(state: Epochs | None, issued_at: float) -> bool:
    """Whether a remember-me cookie issued at `issued_at` may sign its user in."""
    if state is None or not state.active:
        return False
    limits = [t for t in (state.sessions_valid_after, state.cookies_valid_after) if t is not None]
    return all(_instant(issued_at) > limit for limit in limits)
