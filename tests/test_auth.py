"""Login throttling (ragcore.access.auth) on the real embedded database, concurrency included."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import bcrypt
import pytest

from ragcore.access import auth, create_user, server_trusts_only
from ragcore.core import Settings
from ragcore.store import Database

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
POLICY = auth.ThrottlePolicy(max_attempts=3, max_attempts_per_name=7, window=timedelta(minutes=10))
OWNER_PASSWORD = "sahibin-parolasi-1"
ATTACKER = "203.0.113.7"
OWNER = "198.51.100.20"


@pytest.fixture()
def adb(db: Database) -> Database:
    with db.connection() as conn:
        conn.execute("DELETE FROM login_attempts")
    return db


@pytest.fixture()
def bcrypt_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts every bcrypt password check, from any thread."""
    calls: list[int] = []
    lock = threading.Lock()
    real = bcrypt.checkpw

    def counting(password: bytes, hashed: bytes) -> bool:
        with lock:
            calls.append(1)
        return real(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", counting)
    yield calls


def _attempt(db: Database, name: str, address: str, seconds: float = 0) -> auth.LoginGate:
    return auth.begin_attempt(db, name, address, policy=POLICY, now=T0 + timedelta(seconds=seconds))


def test_unknown_name_is_allowed(adb: Database) -> None:
    gate = auth.check(adb, "mehmet", ATTACKER, policy=POLICY, now=T0)
    assert gate.allowed and gate.attempts == 0 and gate.message() == ""


def test_attempts_are_counted_before_the_check_and_refused_past_the_limit(adb: Database) -> None:
    for i in range(3):
        gate = _attempt(adb, "mehmet", ATTACKER, i)
        assert gate.allowed and gate.attempts == i + 1 and gate.remaining == 2 - i
    refused = _attempt(adb, "mehmet", ATTACKER, 60)
    assert not refused.allowed and refused.retry_after == 540  # the window started at T0
    assert "9 dakika" in refused.message()
    # Refused attempts do not move the window: it ends 10 minutes after its first attempt.
    assert not _attempt(adb, "mehmet", ATTACKER, 599).allowed
    fresh = _attempt(adb, "mehmet", ATTACKER, 600)
    assert fresh.allowed and fresh.attempts == 1


def test_case_and_spaces_share_one_counter(adb: Database) -> None:
    for name in ("Mehmet ", "MEHMET", " mehmet"):
        assert _attempt(adb, name, ATTACKER).allowed
    assert not _attempt(adb, "mehmet", ATTACKER).allowed


def test_a_stranger_locks_out_only_their_own_address(adb: Database) -> None:
    for i in range(10):
        _attempt(adb, "admin", ATTACKER, i)
    assert not auth.check(adb, "admin", ATTACKER, policy=POLICY, now=T0 + timedelta(seconds=20)).allowed
    owner = auth.check(adb, "admin", OWNER, policy=POLICY, now=T0 + timedelta(seconds=20))
    assert owner.allowed and owner.remaining == 3
    # Only the 3 attempts that passed their address counter count towards the username.
    with adb.connection() as conn:
        assert conn.execute("SELECT attempts FROM login_attempts WHERE address = '*'").fetchone()[0] == 3


def test_many_addresses_hit_the_username_cap(adb: Database) -> None:
    allowed = sum(_attempt(adb, "admin", f"203.0.113.{i // 3}", i).allowed for i in range(30))
    assert allowed == POLICY.max_attempts_per_name
    gate = auth.check(adb, "admin", "192.0.2.1", policy=POLICY, now=T0 + timedelta(seconds=31))
    assert not gate.allowed and gate.retry_after == 569
    status = auth.lock_status(adb, "admin", policy=POLICY, now=T0 + timedelta(seconds=31))
    assert status.locked and status.everywhere and status.addresses == 10  # each address used its 3 tries


def test_success_clears_its_address_and_the_username_count(adb: Database) -> None:
    create_user(adb, "ayse", "ik", OWNER_PASSWORD)
    auth.login(adb, "ayse", "yanlis-parola", ATTACKER, policy=POLICY, now=T0)
    for _ in range(2):
        auth.login(adb, "ayse", "yanlis-parola", OWNER, policy=POLICY, now=T0)
    result = auth.login(adb, "ayse", OWNER_PASSWORD, OWNER, policy=POLICY, now=T0)
    assert result.user is not None and result.user.username == "ayse"
    with adb.connection() as conn:
        rows = conn.execute("SELECT address, attempts FROM login_attempts").fetchall()
    assert rows == [(ATTACKER, 1)]
    auth.unlock(adb, "ayse")
    with adb.connection() as conn:
        assert conn.execute("SELECT count(*) FROM login_attempts").fetchone()[0] == 0


def test_purge_removes_ended_windows_only(adb: Database) -> None:
    _attempt(adb, "old", ATTACKER)
    for _ in range(4):
        _attempt(adb, "locked", ATTACKER, 8 * 60)
    removed = auth.purge_stale(adb, policy=POLICY, now=T0 + timedelta(minutes=12))
    assert removed == 2  # "old": its address and username rows
    assert not auth.check(adb, "locked", ATTACKER, policy=POLICY, now=T0 + timedelta(minutes=12)).allowed


def test_every_attempt_purges_so_the_table_stays_bounded(adb: Database) -> None:
    for i in range(20):
        _attempt(adb, f"kisi{i}", f"203.0.113.{i}", i * 60)  # a new name every minute
    _attempt(adb, "son", ATTACKER, 20 * 60)  # windows that started at or before minute 10 have ended
    with adb.connection() as conn:
        names = {row[0] for row in conn.execute("SELECT username FROM login_attempts")}
    assert names == {f"kisi{i}" for i in range(11, 20)} | {"son"}


def _burst(db: Database, passwords: list[str], address: str) -> list[auth.LoginResult]:
    """All attempts start together (a barrier) on their own connections."""
    results: list[auth.LoginResult | BaseException] = [None] * len(passwords)  # type: ignore[list-item]
    barrier = threading.Barrier(len(passwords))

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = auth.login(db, "admin", passwords[i], address, policy=POLICY)
        except BaseException as exc:  # re-raised below in the test thread
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(passwords))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors[:3]
    return results  # type: ignore[return-value]


def test_fifty_concurrent_attempts_reach_bcrypt_at_most_n_times(db: Database, pg_url: str, bcrypt_calls) -> None:
    with db.connection() as conn:
        conn.execute("DELETE FROM login_attempts")
    create_user(db, "admin", "admin", OWNER_PASSWORD)
    bcrypt_calls.clear()
    with Database(pg_url, max_size=50) as wide:  # every attempt really runs at the same time
        wrong = _burst(wide, [f"yanlis-{i}" for i in range(50)], ATTACKER)
        assert len(bcrypt_calls) <= POLICY.max_attempts, len(bcrypt_calls)
        assert sum(r.gate.allowed for r in wrong) <= POLICY.max_attempts
        assert not any(r.user for r in wrong)
        # Once the limit is hit, the right password does not get in from that address either,
        # not even 50 times at once, and costs no bcrypt check.
        calls = len(bcrypt_calls)
        right = _burst(wide, [OWNER_PASSWORD] * 50, ATTACKER)
        assert not any(r.user for r in right) and len(bcrypt_calls) == calls
        assert all(r.gate.message() for r in right)
        # The owner, from another address, is not locked out.
        owner = auth.login(wide, "admin", OWNER_PASSWORD, OWNER, policy=POLICY)
        assert owner.user is not None and owner.user.username == "admin"


def test_unknown_names_cost_a_bcrypt_check_too(adb: Database, bcrypt_calls) -> None:
    """Same work for a name that does not exist, so timing does not reveal accounts."""
    result = auth.login(adb, "kimse-yok", "bir-parola-1", ATTACKER, policy=POLICY)
    assert result.user is None and len(bcrypt_calls) == 1


# ----------------------------------------------------------------------------- which address counts


@pytest.mark.parametrize(("forwarded_allow_ips", "trusted", "expected"), [
    (None, (), False),  # uvicorn's default trusts loopback; TRUSTED_PROXIES trusts nobody
    ("", (), True),
    (None, ("127.0.0.1/32", "::1/128"), True),
    ("10.0.0.5", ("10.0.0.0/24",), True),
    ("10.0.0.0/16", ("10.0.0.0/24",), False),
    ("*", ("0.0.0.0/0",), False),
    ("proxy.local", ("10.0.0.0/24",), False),
])
def test_the_streamlit_server_may_trust_forwarded_for_only_within_trusted_proxies(
        forwarded_allow_ips, trusted, expected) -> None:
    assert server_trusts_only(forwarded_allow_ips, trusted) is expected


def test_the_login_form_ignores_an_address_the_client_may_have_written(monkeypatch) -> None:
    """The app's uvicorn rewrites the peer from X-Forwarded-For when the peer is in its
    FORWARDED_ALLOW_IPS (127.0.0.1 by default); with TRUSTED_PROXIES unset such a request gets
    the shared key, so rotating the header opens no fresh login counters."""
    from ui import auth as ui_auth

    def seen(address: str, headers: dict[str, str], trusted: tuple[str, ...], allow: str | None) -> str | None:
        monkeypatch.setattr(ui_auth, "st", SimpleNamespace(context=SimpleNamespace(ip_address=address, headers=headers)))
        if allow is None:
            monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
        else:
            monkeypatch.setenv("FORWARDED_ALLOW_IPS", allow)
        return ui_auth.client_address(SimpleNamespace(settings=Settings(trusted_proxies=trusted)))

    forged = {"X-Forwarded-For": "198.51.100.9"}
    assert seen("198.51.100.9", forged, (), None) is None
    assert seen("198.51.100.9", forged, ("127.0.0.1/32",), None) is None  # ::1 is trusted by the server, not by us
    assert seen("198.51.100.9", forged, ("127.0.0.1/32", "::1/128"), None) == "198.51.100.9"
    assert seen("198.51.100.9", forged, ("10.0.0.5/32",), "10.0.0.5") == "198.51.100.9"
    assert seen("203.0.113.4", {}, (), None) == "203.0.113.4"  # no header: the TCP peer itself
