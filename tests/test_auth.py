"""Login throttling (ragcore.auth) on the real embedded database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from ragcore import auth
from ragcore.db import Database

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
POLICY = auth.ThrottlePolicy(max_failures=3, window=timedelta(minutes=10), lockout=timedelta(minutes=5))


@pytest.fixture()
def adb(db: Database) -> Database:
    with db.connection() as conn:
        conn.execute("DELETE FROM login_attempts")
    return db


def test_unknown_name_is_allowed(adb: Database) -> None:
    gate = auth.check(adb, "mehmet", now=T0)
    assert gate.allowed and gate.failures == 0 and gate.message() == ""


def test_locks_after_max_failures_and_unlocks_after_lockout(adb: Database) -> None:
    for i in range(2):
        gate = auth.record_failure(adb, "mehmet", policy=POLICY, now=T0 + timedelta(seconds=i))
        assert gate.allowed and gate.failures == i + 1
    gate = auth.record_failure(adb, "mehmet", policy=POLICY, now=T0 + timedelta(seconds=2))
    assert not gate.allowed and gate.retry_after == 300
    assert "5 dakika" in gate.message()

    during = auth.check(adb, "mehmet", now=T0 + timedelta(minutes=2))
    assert not during.allowed and during.retry_minutes == 4  # 182 s left -> rounded up
    # Attempts while locked are refused and do not extend the lock.
    again = auth.record_failure(adb, "mehmet", policy=POLICY, now=T0 + timedelta(minutes=4))
    assert not again.allowed
    assert auth.check(adb, "mehmet", now=T0 + timedelta(minutes=5, seconds=3)).allowed
    # After the lock, a new failure starts a fresh window.
    after = auth.record_failure(adb, "mehmet", policy=POLICY, now=T0 + timedelta(minutes=6))
    assert after.allowed and after.failures == 1


def test_case_and_spaces_share_one_counter(adb: Database) -> None:
    auth.record_failure(adb, "Mehmet ", policy=POLICY, now=T0)
    auth.record_failure(adb, "MEHMET", policy=POLICY, now=T0)
    assert not auth.record_failure(adb, " mehmet", policy=POLICY, now=T0).allowed


def test_failures_outside_window_do_not_add_up(adb: Database) -> None:
    auth.record_failure(adb, "ayse", policy=POLICY, now=T0)
    auth.record_failure(adb, "ayse", policy=POLICY, now=T0 + timedelta(minutes=1))
    gate = auth.record_failure(adb, "ayse", policy=POLICY, now=T0 + timedelta(minutes=11))
    assert gate.allowed and gate.failures == 1


def test_success_clears_and_names_are_independent(adb: Database) -> None:
    for _ in range(2):
        auth.record_failure(adb, "ayse", policy=POLICY, now=T0)
    auth.record_success(adb, "ayse")
    assert auth.check(adb, "ayse", now=T0).failures == 0
    for _ in range(3):
        auth.record_failure(adb, "mehmet", policy=POLICY, now=T0)
    assert not auth.check(adb, "mehmet", now=T0).allowed
    assert auth.check(adb, "ayse", now=T0).allowed
    auth.unlock(adb, "mehmet")
    assert auth.check(adb, "mehmet", now=T0).allowed


def test_purge_stale_keeps_active_records(adb: Database) -> None:
    auth.record_failure(adb, "old", policy=POLICY, now=T0)
    for _ in range(3):
        auth.record_failure(adb, "locked", policy=POLICY, now=T0 + timedelta(minutes=8))
    removed = auth.purge_stale(adb, policy=POLICY, now=T0 + timedelta(minutes=12))
    assert removed == 1
    assert not auth.check(adb, "locked", now=T0 + timedelta(minutes=12)).allowed
