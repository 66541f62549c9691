"""Login throttling: every attempt is counted, atomically, before its password is checked.

Plain Python and SQL (no Streamlit) so the policy is testable and shared by every front end.
The counters live in PostgreSQL, not in the session, because an attacker simply opens a new
session. Two counters per window:

* per username and client address (`max_attempts`, 5 per 15 minutes): the usual guard; a
  stranger who exhausts it locks out only their own address, never the owner elsewhere;
* per username over every address (`max_attempts_per_name`, 20 per 15 minutes): caps a
  guesser who spreads attempts over many addresses (or spoofs forwarded-for headers).
  Only attempts that passed their address counter count here, so one address alone can
  never exhaust it.

Each counter is one `INSERT … ON CONFLICT DO UPDATE … RETURNING`: the row lock serialises
concurrent attempts, so of 50 simultaneous tries at most `max_attempts` get a number within
the limit and reach bcrypt; the rest are refused without a check, whatever the password. A
refused attempt does not move the window, so a lock ends at most `window` after the first
attempt of the window. Unknown usernames are counted the same way (and checked against a
dummy hash in `ragcore.access.users.authenticate`), so neither the answer nor its timing tells
which accounts exist. A success clears the counters of that username for that address and
the username-wide one. Rows of ended windows are deleted on every attempt, so the table
holds at most the keys tried within one window.

Behind a reverse proxy the address is the proxy's unless the proxy is one of TRUSTED_PROXIES
(none by default) and names the client in X-Forwarded-For (ragcore.access.addresses); otherwise
all clients behind it share one address and only the username counters separate them (see
SECURITY.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from ragcore.access import directory, ldap
from ragcore.access.users import authenticate
from ragcore.core import Settings, User
from ragcore.store import Database

_MAX_NAME = 200
_MAX_ADDRESS = 100
LOCAL_ADDRESS = "yerel"  # no client address (localhost, the CLI, tests)
EVERY_ADDRESS = "*"  # the username-wide counter
_CAP = 1_000_000  # counts beyond the limit only need to stay above it


@dataclass(frozen=True)
class ThrottlePolicy:
    max_attempts: int = 5
    max_attempts_per_name: int = 20
    window: timedelta = timedelta(minutes=15)


DEFAULT_POLICY = ThrottlePolicy()


@dataclass(frozen=True)
class LoginGate:
    """Whether an attempt may check its password; `retry_after` is in whole seconds when refused.

    `remaining` is how many more attempts the window allows after this one (0: the next one
    is refused).
    """

    allowed: bool
    attempts: int = 0
    remaining: int = 0
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


@dataclass(frozen=True)
class LoginResult:
    """The outcome of one attempt: the user when the password matched, and the gate it passed."""

    user: User | None
    gate: LoginGate
    refusal: str | None = None  # Turkish: the directory checked the password but refused access (or is down)

    @property
    def locked_now(self) -> bool:
        """The attempt failed and no further attempt is allowed in this window."""
        return self.user is None and (not self.gate.allowed or self.gate.remaining == 0)


def _key(username: str) -> str:
    return username.strip().lower()[:_MAX_NAME] or "?"


def _address(address: str | None) -> str:
    cleaned = (address or "").strip()[:_MAX_ADDRESS]
    return cleaned if cleaned and cleaned != EVERY_ADDRESS else LOCAL_ADDRESS


def _now(now: datetime | None) -> datetime:
    return now if now is not None else datetime.now(timezone.utc)  # noqa: UP017 - explicit tz


# One statement counts and decides: a window that has ended starts again at 1.
_COUNT_SQL = """
INSERT INTO login_attempts AS a (username, address, attempts, window_start)
VALUES (%(username)s, %(address)s, 1, %(now)s)
ON CONFLICT (username, address) DO UPDATE SET
    attempts = CASE WHEN a.window_start <= %(now)s - %(window)s THEN 1 ELSE least(a.attempts + 1, %(cap)s) END,
    window_start = CASE WHEN a.window_start <= %(now)s - %(window)s THEN %(now)s ELSE a.window_start END
RETURNING attempts, window_start"""


def _retry_after(window_start: datetime, current: datetime, policy: ThrottlePolicy) -> int:
    return max(1, math.ceil((window_start + policy.window - current).total_seconds()))


def begin_attempt(
    db: Database, username: str, address: str | None, *, policy: ThrottlePolicy = DEFAULT_POLICY,
    now: datetime | None = None,
) -> LoginGate:
    """Count one attempt for (username, address) and decide, before any password is checked."""
    current = _now(now)
    purge_stale(db, policy=policy, now=current)
    params = {"username": _key(username), "now": current, "window": policy.window, "cap": _CAP}
    with db.connection() as conn:
        attempts, started = conn.execute(_COUNT_SQL, {**params, "address": _address(address)}).fetchone()
        if attempts > policy.max_attempts:
            return LoginGate(False, attempts, 0, _retry_after(started, current, policy))
        name_attempts, name_started = conn.execute(_COUNT_SQL, {**params, "address": EVERY_ADDRESS}).fetchone()
        if name_attempts > policy.max_attempts_per_name:
            return LoginGate(False, attempts, 0, _retry_after(name_started, current, policy))
    remaining = min(policy.max_attempts - attempts, policy.max_attempts_per_name - name_attempts)
    return LoginGate(True, attempts, remaining)


def count_address_attempt(
    db: Database, key: str, address: str | None, *, policy: ThrottlePolicy = DEFAULT_POLICY,
    now: datetime | None = None,
) -> LoginGate:
    """Count one attempt for (key, address) alone, without the key-wide counter, and decide.

    For keys that are not accounts: the REST API counts every rejected token under one key
    per client address (ragcore.access.tokens), and a key-wide counter there would let a few
    addresses lock every client out. Same table, statement and purge as logins, so
    `policy.window` must be the login window (the purge of either would cut the other's).
    """
    if policy.window != DEFAULT_POLICY.window:
        raise ValueError("an address counter shares the login window (purge_stale serves both)")
    current = _now(now)
    purge_stale(db, policy=policy, now=current)
    with db.connection() as conn:
        attempts, started = conn.execute(_COUNT_SQL, {
            "username": _key(key), "address": _address(address), "now": current, "window": policy.window,
            "cap": _CAP}).fetchone()
    if attempts > policy.max_attempts:
        return LoginGate(False, attempts, 0, _retry_after(started, current, policy))
    return LoginGate(True, attempts, policy.max_attempts - attempts)


def login(
    db: Database, username: str, password: str, address: str | None, *, policy: ThrottlePolicy = DEFAULT_POLICY,
    now: datetime | None = None, settings: Settings | None = None,
) -> LoginResult:
    """The one way a password is checked: count the attempt, then (if allowed) bcrypt, then clear on success.

    With LDAP configured (`settings`), a name that is not a local account is checked by the
    directory (`ragcore.access.ldap.sign_in`): the same counters guard both.
    """
    gate = begin_attempt(db, username, address, policy=policy, now=now)
    if not gate.allowed:
        return LoginResult(None, gate)
    user, refusal = authenticate(db, username, password), None
    if user is None and settings is not None and ldap.configured(settings) and directory.source_of(db, username) in (
            None, "ldap"):
        user, refusal = ldap.sign_in(db, settings, username, password)
    if user is not None:
        record_success(db, username, address)
    return LoginResult(user, gate, refusal)


def check(
    db: Database, username: str, address: str | None = None, *, policy: ThrottlePolicy = DEFAULT_POLICY,
    now: datetime | None = None,
) -> LoginGate:
    """Would an attempt for (username, address) be allowed now? Read-only; counts nothing."""
    current = _now(now)
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT address, attempts, window_start FROM login_attempts "
            "WHERE username = %s AND address IN (%s, %s) AND window_start > %s",
            (_key(username), _address(address), EVERY_ADDRESS, current - policy.window),
        ).fetchall()
    counts = {row[0]: (row[1], row[2]) for row in rows}
    attempts, started = counts.get(_address(address), (0, current))
    name_attempts, name_started = counts.get(EVERY_ADDRESS, (0, current))
    if attempts >= policy.max_attempts:
        return LoginGate(False, attempts, 0, _retry_after(started, current, policy))
    if name_attempts >= policy.max_attempts_per_name:
        return LoginGate(False, attempts, 0, _retry_after(name_started, current, policy))
    return LoginGate(True, attempts, min(policy.max_attempts - attempts, policy.max_attempts_per_name - name_attempts))


@dataclass(frozen=True)
class LockStatus:
    """What the admin sees for one username: locked everywhere, or from how many addresses."""

    everywhere: bool
    addresses: int
    retry_after: int

    @property
    def locked(self) -> bool:
        return self.everywhere or self.addresses > 0

    @property
    def retry_minutes(self) -> int:
        return max(1, math.ceil(self.retry_after / 60))


def lock_status(
    db: Database, username: str, *, policy: ThrottlePolicy = DEFAULT_POLICY, now: datetime | None = None
) -> LockStatus:
    """Which counters of `username` are exhausted in their current window."""
    current = _now(now)
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT address, attempts, window_start FROM login_attempts WHERE username = %s AND window_start > %s",
            (_key(username), current - policy.window),
        ).fetchall()
    everywhere = [s for a, n, s in rows if a == EVERY_ADDRESS and n >= policy.max_attempts_per_name]
    by_address = [s for a, n, s in rows if a != EVERY_ADDRESS and n >= policy.max_attempts]
    retry = max((_retry_after(s, current, policy) for s in everywhere + by_address), default=0)
    return LockStatus(bool(everywhere), len(by_address), retry)


def record_success(db: Database, username: str, address: str | None) -> None:
    """A successful login forgets this address's attempts and the username-wide count."""
    with db.connection() as conn:
        conn.execute(
            "DELETE FROM login_attempts WHERE username = %s AND address IN (%s, %s)",
            (_key(username), _address(address), EVERY_ADDRESS),
        )


def unlock(db: Database, username: str) -> None:
    """Admin action (and part of a password reset): forget every counter of this username."""
    with db.connection() as conn:
        conn.execute("DELETE FROM login_attempts WHERE username = %s", (_key(username),))


def purge_stale(db: Database, *, policy: ThrottlePolicy = DEFAULT_POLICY, now: datetime | None = None) -> int:
    """Delete counters whose window has ended; returns how many.

    Its own transaction, skipping rows other attempts hold, so it never waits for (or
    deadlocks with) a concurrent attempt.
    """
    current = _now(now)
    with db.connection() as conn:
        cur = conn.execute(
            """DELETE FROM login_attempts WHERE (username, address) IN (
                   SELECT username, address FROM login_attempts WHERE window_start <= %s
                   FOR UPDATE SKIP LOCKED)""",
            (current - policy.window,),
        )
        return cur.rowcount
