"""Server-side revocation of sign-ins and the per-address login throttle, through the app.

AppTest cannot send cookies or a client address, so `st.context.cookies` and
`st.context.ip_address` are pointed at the session state of each simulated browser
(`browser` below): every AppTest is one browser with its own cookie jar and address, and
the app (and streamlit-authenticator) read them where they read a real browser's. The
cookie value is the real token the app hands to the browser (the argument of its
cookie-setting component), signed with COOKIE_KEY, so "a copied cookie" here is exactly what
an attacker would copy.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import pytest
import streamlit as st
from streamlit.runtime.context import ContextProxy
from streamlit.testing.v1 import AppTest

from ragcore.access import sessions, users
from ragcore.store import Database
from tests.app_support import COOKIE_KEY
from tests.test_app import (
    ADMIN_PASSWORD,
    APP,
    app_env,  # noqa: F401 - the app fixture, used by name
    button,
    login,
    shown,
    signed_in,
)
from ui import auth

PASSWORD = "mehmet-parola-1"
COOKIE = "test_browser_cookie"
ADDRESS = "test_browser_address"


def _cookies(_: object) -> dict[str, str]:
    token = st.session_state.get(COOKIE)
    return {auth.COOKIE_NAME: token} if token else {}


@pytest.fixture()
def browsers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each AppTest's cookie and client address live in its own session state."""
    monkeypatch.setattr(ContextProxy, "cookies", property(_cookies))
    monkeypatch.setattr(ContextProxy, "ip_address", property(lambda _: st.session_state.get(ADDRESS)))


def browser(cookie: str | None = None, address: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    if cookie:
        at.session_state[COOKIE] = cookie
    if address:
        at.session_state[ADDRESS] = address
    at.run()
    assert not at.exception, at.exception
    return at


def cookie_sent(at: AppTest) -> str:
    """The remember-me token the app asked this browser to store after sign-in."""
    for node in at.get("component_instance"):
        args = json.loads(node.proto.json_args)
        if args.get("method") == "set" and args.get("cookie") == auth.COOKIE_NAME:
            return args["value"]
    raise AssertionError("the app did not set the remember-me cookie")


def logout(at: AppTest) -> None:
    [b for b in at.sidebar.button if b.label == "Çıkış yap"][0].click()
    at.run()
    assert not at.exception, at.exception
    assert not signed_in(at)


def notices(at: AppTest) -> str:
    return "\n".join(shown(at.info))


# ----------------------------------------------------------------------------- cookies


@pytest.mark.usefixtures("app_env", "browsers")
def test_copied_cookie_signs_in_until_logout_then_never(db: Database) -> None:
    users.create_user(db, "mehmet", "isg", PASSWORD)
    owner = login(browser(), "mehmet", PASSWORD)
    token = cookie_sent(owner)
    copied = browser(cookie=token)
    assert signed_in(copied)  # the cookie works (so the refusals below are about revocation)
    assert copied.session_state["username"] == "mehmet"

    logout(owner)
    copied.run()  # the copy's open session ends on its next run
    assert not signed_in(copied)
    assert "Oturumunuz kapatıldı" in notices(copied)
    again = browser(cookie=token)  # a new visit with the copied cookie
    assert not signed_in(again)
    assert "Oturumunuz sona erdi" in notices(again)
    assert any(json.loads(n.proto.json_args).get("method") == "delete" for n in again.get("component_instance"))


@pytest.mark.usefixtures("app_env", "browsers")
def test_copied_cookie_refused_after_an_admin_resets_the_password(db: Database) -> None:
    users.create_user(db, "mehmet", "isg", PASSWORD)
    victim = login(browser(), "mehmet", PASSWORD)
    token = cookie_sent(victim)
    assert signed_in(browser(cookie=token))

    admin = login(browser(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/users.py").run()
    admin.selectbox(key="users_selected").set_value("mehmet").run()
    admin.text_input(key="users_reset_pw_mehmet").input("yeni-parola-123")
    admin.text_input(key="users_reset_rep_mehmet").input("yeni-parola-123")
    button(admin, "Parolayı değiştir").click()
    admin.run()
    assert not admin.exception and signed_in(admin)
    assert any("parolası değiştirildi" in text for text in shown(admin.success))

    assert not signed_in(browser(cookie=token))
    victim.run()
    assert not signed_in(victim) and "Oturumunuz kapatıldı" in notices(victim)
    assert signed_in(login(browser(), "mehmet", "yeni-parola-123"))


@pytest.mark.usefixtures("app_env", "browsers")
def test_role_change_voids_cookies_but_the_open_session_continues(db: Database) -> None:
    users.create_user(db, "ayse", "ik", "ayse-parola-1")
    open_session = login(browser(), "ayse", "ayse-parola-1")
    token = cookie_sent(open_session)
    users.set_role(db, "ayse", "isg")
    open_session.run()
    assert signed_in(open_session)
    open_session.switch_page("pages/search.py").run()  # the new role's page
    assert open_session.title[0].value == "Kaynak arama"
    assert not signed_in(browser(cookie=token))


@pytest.mark.usefixtures("app_env", "browsers")
def test_deactivation_voids_cookies_even_after_reactivation(db: Database) -> None:
    users.create_user(db, "ayse", "ik", "ayse-parola-1")
    token = cookie_sent(login(browser(), "ayse", "ayse-parola-1"))
    users.set_active(db, "ayse", False)
    users.set_active(db, "ayse", True)
    assert not signed_in(browser(cookie=token))


@pytest.mark.usefixtures("app_env", "browsers")
def test_forged_or_expired_tokens_sign_nobody_in(db: Database) -> None:
    import jwt

    users.create_user(db, "ayse", "ik", "ayse-parola-1")
    exp = (datetime.now() + timedelta(days=1)).timestamp()
    forged = jwt.encode({"username": "ayse", "exp_date": exp}, "another-key-0123456789abcdef0123", algorithm="HS256")
    expired = jwt.encode({"username": "ayse", "exp_date": time.time() - 1},
                         COOKIE_KEY, algorithm="HS256")
    for token in (forged, expired, "not-a-token"):
        assert not signed_in(browser(cookie=token))


@pytest.mark.usefixtures("app_env", "browsers")
def test_own_password_change_asks_for_the_current_one(db: Database) -> None:
    admin = login(browser(), "admin", ADMIN_PASSWORD)
    token = cookie_sent(admin)
    other = login(browser(), "admin", ADMIN_PASSWORD)  # the same admin in a second browser
    admin.switch_page("pages/users.py").run()
    admin.selectbox(key="users_selected").set_value("admin").run()
    admin.text_input(key="users_reset_cur_admin").input("yanlis-parola-1")
    admin.text_input(key="users_reset_pw_admin").input("yeni-yonetici-1")
    admin.text_input(key="users_reset_rep_admin").input("yeni-yonetici-1")
    button(admin, "Parolayı değiştir").click()
    admin.run()
    assert "Mevcut parola hatalı." in shown(admin.error)
    assert users.authenticate(db, "admin", ADMIN_PASSWORD) is not None  # unchanged

    admin.text_input(key="users_reset_cur_admin").input(ADMIN_PASSWORD)
    admin.text_input(key="users_reset_pw_admin").input("yeni-yonetici-1")
    admin.text_input(key="users_reset_rep_admin").input("yeni-yonetici-1")
    button(admin, "Parolayı değiştir").click()
    admin.run()
    assert not admin.exception
    assert users.authenticate(db, "admin", "yeni-yonetici-1") is not None
    assert signed_in(admin)  # this browser proved the old password: it stays signed in
    admin.run()
    assert signed_in(admin)
    other.run()
    assert not signed_in(other)  # every other session ends
    assert not signed_in(browser(cookie=token))  # and every cookie, this browser's included


# ----------------------------------------------------------------------------- throttling in the app


@pytest.mark.usefixtures("app_env", "browsers")
def test_a_stranger_cannot_lock_the_owner_out_from_elsewhere(db: Database) -> None:
    users.create_user(db, "mehmet", "isg", PASSWORD)
    stranger = browser(address="203.0.113.7")
    for _ in range(6):
        login(stranger, "mehmet", "yanlis-parola")
    assert any("çok fazla hatalı giriş" in text for text in shown(stranger.error))
    login(stranger, "mehmet", PASSWORD)  # the right password from the locked address: refused
    assert not signed_in(stranger)
    owner = login(browser(address="198.51.100.20"), "mehmet", PASSWORD)
    assert signed_in(owner)


# ----------------------------------------------------------------------------- the rules


def test_revocation_is_part_of_each_user_change(db: Database) -> None:
    users.create_user(db, "ayse", "ik", "ayse-parola-1")
    fresh = sessions.epochs(db, "ayse")
    assert fresh == sessions.Epochs(True, None, None)
    before = time.time()
    users.set_role(db, "ayse", "isg")
    after_role = sessions.epochs(db, "ayse")
    assert after_role.sessions_valid_after is None and after_role.cookies_valid_after.timestamp() >= before
    users.set_password(db, "ayse", "yeni-parola-12")
    after_password = sessions.epochs(db, "ayse")
    assert after_password.sessions_valid_after == after_password.cookies_valid_after
    assert after_password.sessions_valid_after > after_role.cookies_valid_after
    users.set_active(db, "ayse", True)  # already active: a reactivation voids nothing
    assert sessions.epochs(db, "ayse") == after_password  # not every change revokes


def test_validity_rules() -> None:
    t = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
    ts = t.timestamp()
    state = sessions.Epochs(True, t, t + timedelta(minutes=5))
    assert not sessions.session_valid(state, ts) and sessions.session_valid(state, ts + 1)
    assert not sessions.cookie_valid(state, ts + 60) and sessions.cookie_valid(state, ts + 301)
    assert not sessions.session_valid(sessions.Epochs(False, None, None), ts)
    assert not sessions.cookie_valid(None, ts)
    assert sessions.cookie_issued_at(ts + 7 * 86_400, 7) == ts
