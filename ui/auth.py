"""Login, logout and the "remember me" cookie on top of streamlit-authenticator 0.4.2.

What the library does for us: the session-state protocol (`authentication_status`,
`username`, `name`, `roles`, `logout`), bcrypt checking against our stored hashes
(`auto_hash=False`), and the signed re-authentication cookie. What we do around it, and why
(measured against the library source in .venv/.../streamlit_authenticator):

* The credentials dict is built fresh from the `users` table on every run: the library
  mutates it (lowercases names, adds `logged_in` and `failed_login_attempts`), and only
  active users are in it, so a deactivated user's cookie is refused.
* The login form is ours (Turkish labels, autocomplete, "beni hatırla") and submits through
  an `on_click` callback that calls the library's controller. Callbacks run *before* the
  script, so the same run already sees the signed-in state and builds the role's navigation
  without `st.rerun()` — the rerun is what kept the library's own `login()` from ever
  setting its cookie (its cookie component never reached the browser) and what made
  navigation lag one click behind (issues #179, #184/#204).
* The cookie is written through the library's cookie controller exactly once per sign-in, on
  the first signed-in run without a valid cookie; re-rendering the setter on later runs would
  re-set it and trigger more component reruns.
* Logout is an `on_click` callback too (a plain `if st.button()` needs a second click to
  rebuild navigation, issues #3/#91); the cookie delete component is rendered on the first
  signed-out run, otherwise a reload would sign the user straight back in.
* The role and the active flag are read from the database on every run, so a role change
  or a deactivation takes effect on the user's next rerun.
* Failed logins are throttled per username in PostgreSQL (`ragcore.auth`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import jwt
import streamlit as st
import streamlit_authenticator as stauth

from ragcore import auth as throttle
from ragcore.models import User
from ragcore.secrets import cookie_key
from ragcore.users import MAX_PASSWORD_BYTES, credentials, get_user
from ui.context import AppContext

COOKIE_NAME = "dayanak_oturum"
COOKIE_EXPIRY_DAYS = 7.0

# Session-state keys owned by this module.
USER = "dayanak_user"
NOTICE = "dayanak_login_notice"
LOGIN_ERROR = "dayanak_login_error"
COOKIE_WRITTEN_FOR = "dayanak_cookie_written_for"
DELETE_COOKIE = "dayanak_delete_cookie"
REMEMBER = "dayanak_remember"
# st.context.cookies is fixed when the websocket connects; after we delete the cookie in this
# session it still shows the old one, so it must not be trusted any more.
COOKIE_STALE = "dayanak_cookie_stale"
# Per-user data cleared on sign-out so the next person on this browser starts clean.
USER_SCOPED_PREFIXES = ("chat_", "fb_", "doc_", "users_", "review_", "search_")




def build_credentials(ctx: AppContext) -> dict[str, Any]:
    """A fresh credentials dict for this run: active users only, stored bcrypt hashes, DB roles."""
    users: dict[str, Any] = {}
    for user, password_hash in credentials(ctx.db):
        users[user.username] = {
            "name": user.display_name,
            "email": user.email or f"{user.username}@dayanak.local",
            "password": password_hash,
            "roles": [user.role],
        }
    return {"usernames": users}


def make_authenticator(ctx: AppContext) -> stauth.Authenticate:
    """The authenticator for this run (it renders the library's invisible cookie reader)."""
    return stauth.Authenticate(
        build_credentials(ctx),
        cookie_name=COOKIE_NAME,
        cookie_key=cookie_key(ctx.settings),
        cookie_expiry_days=COOKIE_EXPIRY_DAYS,
        auto_hash=False,
        login_sleep_time=ctx.settings.login_sleep_time,
    )


def _cookie_username(ctx: AppContext) -> str | None:
    """The username in a valid, unexpired cookie sent by this browser, if any."""
    token = st.context.cookies.get(COOKIE_NAME) if st.context.cookies else None
    if not token:
        return None
    try:
        payload = jwt.decode(token, cookie_key(ctx.settings), algorithms=["HS256"])
    except jwt.PyJWTError:
        return None
    if payload.get("exp_date", 0) <= datetime.now().timestamp():
        return None
    return payload.get("username")


def _clear_user_state() -> None:
    for key in list(st.session_state.keys()):
        if isinstance(key, str) and (key.startswith(USER_SCOPED_PREFIXES) or key in (USER, COOKIE_WRITTEN_FOR)):
            del st.session_state[key]


def sign_out(authenticator: stauth.Authenticate, notice: str | None = None) -> None:
    """Library logout plus our clean-up; safe to call from a callback."""
    if st.session_state.get("authentication_status"):
        authenticator.authentication_controller.logout()
    st.session_state[DELETE_COOKIE] = True
    _clear_user_state()
    if notice:
        st.session_state[NOTICE] = notice


def attempt_login(ctx: AppContext, authenticator: stauth.Authenticate, username: str, password: str) -> str | None:
    """Check throttling, validate, then let the library check the password. Returns an error or None."""
    username = username.strip().lower()
    if not username or not password:
        return "Kullanıcı adı ve parolayı girin."
    gate = throttle.check(ctx.db, username)
    if not gate.allowed:
        return gate.message()
    ok = False
    # bcrypt 5 raises on > 72 bytes; such a password can never match a stored hash.
    if len(password.encode("utf-8")) <= MAX_PASSWORD_BYTES:
        try:
            ok = bool(authenticator.authentication_controller.login(username, password))
        except stauth.LoginError:
            ok = False
    if ok:
        throttle.record_success(ctx.db, username)
        return None
    st.session_state["authentication_status"] = None  # keep the library's "failed" state out of our way
    gate = throttle.record_failure(ctx.db, username)
    return gate.message() if not gate.allowed else "Kullanıcı adı veya parola hatalı."


def _on_login_submit(ctx: AppContext, authenticator: stauth.Authenticate) -> None:
    error = attempt_login(
        ctx, authenticator, st.session_state.get("login_username", ""), st.session_state.get("login_password", "")
    )
    st.session_state["login_password"] = ""
    if error:
        st.session_state[LOGIN_ERROR] = error
    else:
        st.session_state.pop(LOGIN_ERROR, None)
        st.session_state.pop(NOTICE, None)
        st.session_state[REMEMBER] = bool(st.session_state.get("login_remember", True))
        st.session_state.pop(COOKIE_WRITTEN_FOR, None)


def render_login_form(ctx: AppContext, authenticator: stauth.Authenticate) -> None:
    """The Turkish login form; the attempt itself runs in the submit callback."""
    if st.session_state.get(NOTICE):
        st.info(st.session_state[NOTICE])
    with st.form("login_form", clear_on_submit=False, enter_to_submit=True):
        st.subheader("Giriş")
        st.text_input("Kullanıcı adı", key="login_username", autocomplete="username")
        st.text_input("Parola", type="password", key="login_password", autocomplete="current-password")
        st.checkbox(
            "Beni hatırla",
            value=True,
            key="login_remember",
            help=f"Bu tarayıcıda {int(COOKIE_EXPIRY_DAYS)} gün boyunca yeniden parola sorulmaz.",
        )
        st.form_submit_button("Giriş yap", type="primary", on_click=_on_login_submit, args=(ctx, authenticator))
    if st.session_state.get(LOGIN_ERROR):
        st.error(st.session_state[LOGIN_ERROR])


def resolve_user(ctx: AppContext, authenticator: stauth.Authenticate) -> User | None:
    """The signed-in, still active user with the role from the database, or None.

    Runs the library's cookie re-authentication (and its `login_sleep_time`) when signed out;
    signs out a user who was deactivated or deleted since the last run.
    """
    if not st.session_state.get("authentication_status"):
        try:
            authenticator.login(location="unrendered")
        except stauth.LoginError:
            # A valid cookie for a user who is no longer active: forget it.
            st.session_state[DELETE_COOKIE] = True
            st.session_state[NOTICE] = "Oturumunuz sona erdi. Lütfen yeniden giriş yapın."
            st.session_state["authentication_status"] = None
    if not st.session_state.get("authentication_status") or not st.session_state.get("username"):
        st.session_state.pop(USER, None)
        return None
    user = get_user(ctx.db, st.session_state["username"])
    if user is None or not user.active:
        sign_out(authenticator, "Hesabınız devre dışı bırakıldı; oturumunuz kapatıldı. Yöneticinize başvurun.")
        return None
    st.session_state[USER] = user
    st.session_state["roles"] = [user.role]
    return user


def _component_done(key: str) -> bool:
    """Whether the cookie component rendered under `key` reported back (it returns True when done)."""
    try:
        return bool(st.session_state[key])
    except (KeyError, AttributeError):
        return False


def sync_cookie(ctx: AppContext, authenticator: stauth.Authenticate, user: User | None) -> None:
    """Write the remember-me cookie after sign-in, or delete it after sign-out.

    The library's cookie component executes in the browser only if it is still on the page when
    its iframe loads; a rerun that arrives first (the cookie reader's own value, another click)
    drops it. So it is rendered on every run until the component itself reports success under
    its key ("set"/"delete"), which the measured once-only variant missed 1 run in 3.
    """
    if user is None:
        st.session_state.pop(COOKIE_WRITTEN_FOR, None)
        if st.session_state.get(DELETE_COOKIE):
            st.session_state[COOKIE_STALE] = True
            if _component_done("delete"):
                st.session_state.pop(DELETE_COOKIE, None)
            else:
                authenticator.cookie_controller.delete_cookie()
        return
    st.session_state.pop(DELETE_COOKIE, None)
    if st.session_state.get(COOKIE_WRITTEN_FOR) == user.username:
        return
    has_valid = not st.session_state.get(COOKIE_STALE) and _cookie_username(ctx) == user.username
    if not st.session_state.get(REMEMBER, True) or has_valid or _component_done("set"):
        st.session_state[COOKIE_WRITTEN_FOR] = user.username
        return
    authenticator.cookie_controller.set_cookie()


def render_logout_button(authenticator: stauth.Authenticate) -> None:
    st.sidebar.button(
        "Çıkış yap", icon=":material/logout:", key="logout_button", on_click=sign_out, args=(authenticator,),
        width="stretch",
    )


def signed_in_user() -> User:
    """The user resolved by app.py for this run; pages call this (they only run via navigation)."""
    user = st.session_state.get(USER)
    if user is None:
        st.warning("Oturum bulunamadı. Lütfen yeniden giriş yapın.")
        st.stop()
    return user


def require_role(*roles: str) -> User:
    """Defence in depth: navigation already hides the page, this refuses it anyway."""
    user = signed_in_user()
    if user.role not in roles:
        st.error("Bu sayfayı görme yetkiniz yok.")
        st.stop()
    return user
