"""Login, logout and the "remember me" cookie on top of streamlit-authenticator 0.4.2.

What the library does for us: the session-state protocol (`authentication_status`,
`username`, `name`, `roles`, `logout`) and the signed re-authentication cookie (its JWT and
the browser component that writes and deletes it). What we do around it, and why (measured
against the library source in .venv/.../streamlit_authenticator):

* The credentials dict is built fresh from the `users` table on every run: the library
  mutates it (lowercases names, adds `logged_in` and `failed_login_attempts`), and only
  active users are in it, so a deactivated user's cookie is refused.
* The login form is ours (Turkish labels, autocomplete, "beni hatırla") and submits through
  an `on_click` callback (see the password check below). Callbacks run *before* the
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
  or a deactivation takes effect on the user's next rerun; a directory (LDAP) user is re-read
  from the directory at most every LDAP_RECHECK_SECONDS (`ragcore.access.ldap.recheck`).
* Passwords are checked only by `ragcore.access.auth.login`, which counts the attempt per username
  and client address *before* bcrypt; the library is then told who signed in through its
  token path (the same call its cookie re-authentication makes), so it never checks a
  password itself.
* Sign-ins are revocable server-side (`ragcore.access.sessions`): the session remembers when it
  signed in, a cookie's issue time follows from its `exp_date`, and both are compared with
  the user's revocation instants on every run. We read and verify the cookie ourselves
  instead of calling the library's `login()`, so a revoked cookie never signs anyone in.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

import jwt
import streamlit as st
import streamlit_authenticator as stauth

from ragcore.access import (
    MAX_PASSWORD_BYTES,
    UVICORN_DEFAULT_FORWARDED_ALLOW_IPS,
    cookie_issued_at,
    cookie_valid,
    credentials,
    get_user,
    ldap_recheck,
    login,
    login_gate,
    oidc_configured,
    oidc_sign_in,
    revoke_sessions,
    server_trusts_only,
    session_epochs,
    session_valid,
)
from ragcore.core import User, cookie_key
from ui import oidc as oidc_ui
from ui.context import AppContext
from ui.markdown import escape_markdown

log = logging.getLogger(__name__)

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
# When this session signed in (epoch seconds, the application's clock); compared with the
# user's revocation instants on every run.
SIGNED_IN_AT = "dayanak_signed_in_at"
# Per-user data cleared on sign-out so the next person on this browser starts clean.
USER_SCOPED_PREFIXES = ("chat_", "fb_", "doc_", "users_", "review_", "search_")

SESSION_ENDED = "Oturumunuz sona erdi. Lütfen yeniden giriş yapın."
SESSION_REVOKED = ("Oturumunuz kapatıldı (çıkış, parola değişikliği ya da yönetici işlemi). "
                   "Lütfen yeniden giriş yapın.")
DEACTIVATED = "Hesabınız devre dışı bırakıldı; oturumunuz kapatıldı. Yöneticinize başvurun."
DIRECTORY_REVOKED = ("Dizin (LDAP/Active Directory) artık bu hesaba Dayanak erişimi vermiyor: hesap silinmiş, "
                     "kapatılmış ya da rol verilen gruplardan çıkarılmış. Oturumunuz kapatıldı; BT birimine başvurun.")
# A directory user has no password here; the library's credentials need a string, and this one
# is no bcrypt hash, so nothing can ever match it (passwords are checked by ragcore.access.auth anyway).
DIRECTORY_PASSWORD = "!dizin"


def build_credentials(ctx: AppContext) -> dict[str, Any]:
    """A fresh credentials dict for this run: active users only, stored bcrypt hashes, DB roles."""
    return {"usernames": {user.username: _credential(user, password_hash) for user, password_hash in credentials(ctx.db)}}


def _credential(user: User, password_hash: str | None) -> dict[str, Any]:
    return {
        "name": user.display_name,
        "email": user.email or f"{user.username}@dayanak.local",
        "password": password_hash or DIRECTORY_PASSWORD,
        "roles": list(user.roles),
    }


def _known_to_library(authenticator: stauth.Authenticate, user: User) -> None:
    """A directory user created by this very sign-in is not in this run's credentials yet."""
    known = authenticator.authentication_controller.authentication_model.credentials["usernames"]
    known.setdefault(user.username, _credential(user, None))


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


def client_address(ctx: AppContext) -> str | None:
    """The client's address for the login throttle (None on localhost, the shared `yerel` key).

    Streamlit's uvicorn may already have replaced the TCP peer with the X-Forwarded-For value
    (it believes the header from FORWARDED_ALLOW_IPS, by default 127.0.0.1 and ::1). When that
    server trusts a peer TRUSTED_PROXIES does not, the header may be the client's own
    invention, so a request carrying it gets no address of its own: rotating the header then
    opens no fresh counters (ragcore.access.addresses). Only a string counts: AppTest's
    stand-in client answers with a mock object.
    """
    address = st.context.ip_address
    if not isinstance(address, str):
        return None
    if st.context.headers.get("X-Forwarded-For") is not None and not _server_forwarding_trusted(
            os.environ.get("FORWARDED_ALLOW_IPS"), ctx.settings.trusted_proxies):
        return None
    return address


@functools.cache
def _server_forwarding_trusted(forwarded_allow_ips: str | None, trusted_proxies: tuple[str, ...]) -> bool:
    """`addresses.server_trusts_only` for this process's server, with one warning when it is not.

    FORWARDED_ALLOW_IPS is read from the environment because it is Streamlit's uvicorn's own
    setting (read by that server at start, before any Dayanak code runs), not one of ours.
    """
    trusted = server_trusts_only(forwarded_allow_ips, trusted_proxies)
    if not trusted:
        log.warning("Streamlit's server believes X-Forwarded-For from FORWARDED_ALLOW_IPS=%r, wider than "
                    "TRUSTED_PROXIES=%r; requests carrying that header share one login-throttle address. "
                    "Set FORWARDED_ALLOW_IPS to the same proxies (see SECURITY.md).",
                    forwarded_allow_ips if forwarded_allow_ips is not None else UVICORN_DEFAULT_FORWARDED_ALLOW_IPS,
                    ",".join(trusted_proxies))
    return trusted


def browser_cookie() -> str | None:
    """The remember-me token this browser sent when the session connected, if any."""
    cookies = st.context.cookies
    token = cookies.get(COOKIE_NAME) if cookies else None
    return token if isinstance(token, str) else None


@dataclass(frozen=True)
class CookieClaims:
    username: str
    issued_at: float


def cookie_claims(ctx: AppContext, token: str | None) -> CookieClaims | None:
    """The username and issue time of a correctly signed, unexpired token; None otherwise."""
    if not token:
        return None
    try:
        payload = jwt.decode(token, cookie_key(ctx.settings), algorithms=["HS256"])
    except jwt.PyJWTError:
        return None
    username, exp_date = payload.get("username"), payload.get("exp_date")
    if not isinstance(username, str) or not isinstance(exp_date, int | float) or exp_date <= time.time():
        return None
    return CookieClaims(username, cookie_issued_at(float(exp_date), COOKIE_EXPIRY_DAYS))


def _cookie_accepted(ctx: AppContext, claims: CookieClaims) -> bool:
    """Not revoked on the server: issued after the user's last logout, password or role change."""
    return cookie_valid(session_epochs(ctx.db, claims.username), claims.issued_at)


def _valid_cookie(ctx: AppContext) -> CookieClaims | None:
    """This browser's cookie if it may still sign its user in (signature, expiry, revocation)."""
    if st.session_state.get(COOKIE_STALE):
        return None
    claims = cookie_claims(ctx, browser_cookie())
    return claims if claims is not None and _cookie_accepted(ctx, claims) else None


def _clear_user_state() -> None:
    for key in list(st.session_state.keys()):
        if isinstance(key, str) and (key.startswith(USER_SCOPED_PREFIXES)
                                     or key in (USER, COOKIE_WRITTEN_FOR, SIGNED_IN_AT)):
            del st.session_state[key]


def sign_out(ctx: AppContext, authenticator: stauth.Authenticate, notice: str | None = None,
             *, revoke: bool = True) -> None:
    """Library logout plus our clean-up; safe to call from a callback.

    `revoke` (the logout button) voids every session and cookie of the user on the server,
    so a copied cookie or another open browser of theirs is signed out too.
    """
    username = st.session_state.get("username")
    if revoke and username:
        revoke_sessions(ctx.db, username)
    if oidc_configured(ctx.settings) and st.user.is_logged_in:
        st.session_state[oidc_ui.LOGOUT_PENDING] = True  # else the provider's cookie signs them straight back in
    if st.session_state.get("authentication_status"):
        authenticator.authentication_controller.logout()
    st.session_state[DELETE_COOKIE] = True
    st.session_state[COOKIE_STALE] = True
    _clear_user_state()
    if notice:
        st.session_state[NOTICE] = notice


def _sign_in(authenticator: stauth.Authenticate, username: str, signed_in_at: float) -> bool:
    """Tell the library who signed in (its token path; no password check there)."""
    try:
        authenticator.authentication_controller.login(token={"username": username})
    except stauth.LoginError:  # not in the credentials: deactivated since the check
        return False
    st.session_state[SIGNED_IN_AT] = signed_in_at
    return True


def attempt_login(ctx: AppContext, authenticator: stauth.Authenticate, username: str, password: str) -> str | None:
    """Count the attempt, check the password (`ragcore.access.auth.login`), sign in. Returns an error or None."""
    username = username.strip().lower()
    if not username or not password:
        return "Kullanıcı adı ve parolayı girin."
    started = time.time()  # a revocation during the check must void this sign-in too
    password = password.strip()  # as the library did: stored passwords cannot start or end with a space
    if len(password.encode("utf-8")) > MAX_PASSWORD_BYTES:
        password = ""  # can never match a stored hash; still counted as an attempt
    result = login(ctx.db, username, password, client_address(ctx), settings=ctx.settings)
    if result.user is not None:
        _known_to_library(authenticator, result.user)
        if _sign_in(authenticator, result.user.username, started):
            return None
    if result.refusal:
        return result.refusal
    if result.locked_now:
        gate = result.gate if not result.gate.allowed else login_gate(ctx.db, username, client_address(ctx))
        if not gate.allowed:
            return gate.message()
    return "Kullanıcı adı veya parola hatalı."


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
        st.info(escape_markdown(st.session_state[NOTICE]))
    with st.form("login_form", clear_on_submit=False, enter_to_submit=True):
        st.subheader("Giriş")
        st.text_input("Kullanıcı adı", key="login_username", autocomplete="username")
        st.text_input("Parola", type="password", key="login_password", autocomplete="current-password")
        st.checkbox(
            "Beni hatırla",
            value=True,
            key="login_remember",
            help=f"Bu tarayıcıda {COOKIE_EXPIRY_DAYS:.0f} gün boyunca yeniden parola sorulmaz.",
        )
        st.form_submit_button("Giriş yap", type="primary", on_click=_on_login_submit, args=(ctx, authenticator))
    if st.session_state.get(LOGIN_ERROR):
        st.error(escape_markdown(st.session_state[LOGIN_ERROR]))


def _sign_in_from_cookie(ctx: AppContext, authenticator: stauth.Authenticate) -> None:
    """Re-authenticate from the remember-me cookie if it is still valid; forget it if revoked."""
    if st.session_state.get(COOKIE_STALE):
        return
    claims = cookie_claims(ctx, browser_cookie())
    if claims is None:
        return
    if not _cookie_accepted(ctx, claims) or not _sign_in(authenticator, claims.username, claims.issued_at):
        st.session_state[DELETE_COOKIE] = True
        st.session_state[COOKIE_STALE] = True
        st.session_state[NOTICE] = SESSION_ENDED
        st.session_state["authentication_status"] = None
        return
    st.session_state[COOKIE_WRITTEN_FOR] = claims.username  # the browser already holds a valid cookie


def _sign_in_from_provider(ctx: AppContext, authenticator: stauth.Authenticate) -> None:
    """Turn an OpenID Connect sign-in (`st.user`, from `st.login`) into our session.

    After our sign-out, or once the ID token has expired, the provider's session is ended
    instead (`st.logout`), so a logout or a revocation is not undone by the provider's cookie
    and no old groups are trusted. A refused `sub` is not retried on every run.
    """
    claims = oidc_ui.provider_claims(ctx.settings)
    if claims is None:
        st.session_state.pop(oidc_ui.LOGOUT_PENDING, None)
        return
    if st.session_state.pop(oidc_ui.LOGOUT_PENDING, False) or oidc_ui.expired(claims):
        st.logout()
        return
    sub = str(claims.get("sub"))
    if st.session_state.get(oidc_ui.REFUSED_SUB) == sub:
        return
    started = time.time()
    user, refusal = oidc_sign_in(ctx.db, ctx.settings, claims)
    if user is None:
        st.session_state[oidc_ui.REFUSED_SUB] = sub
        st.session_state[LOGIN_ERROR] = refusal or "Kurumsal hesapla giriş yapılamadı."
        return
    _known_to_library(authenticator, user)
    if _sign_in(authenticator, user.username, started):
        st.session_state[REMEMBER] = False  # the provider's session remembers; ours would outlive its groups
        st.session_state.pop(LOGIN_ERROR, None)
        st.session_state.pop(NOTICE, None)
        st.session_state.pop(COOKIE_WRITTEN_FOR, None)


def resolve_user(ctx: AppContext, authenticator: stauth.Authenticate) -> User | None:
    """The signed-in, still active, unrevoked user with the role from the database, or None.

    When signed out: cookie re-authentication, then `login_sleep_time` (slows guessing).
    Signs out a session that was revoked, or whose user was deactivated or deleted, since the
    last run.
    """
    if not st.session_state.get("authentication_status"):
        _sign_in_from_cookie(ctx, authenticator)
        if not st.session_state.get("authentication_status"):
            _sign_in_from_provider(ctx, authenticator)
        time.sleep(ctx.settings.login_sleep_time)
    if not st.session_state.get("authentication_status") or not st.session_state.get("username"):
        st.session_state.pop(USER, None)
        return None
    username = st.session_state["username"]
    user = get_user(ctx.db, username)
    if user is None or not user.active:
        sign_out(ctx, authenticator, DEACTIVATED, revoke=False)
        return None
    if not session_valid(session_epochs(ctx.db, username), st.session_state.get(SIGNED_IN_AT)):
        sign_out(ctx, authenticator, SESSION_REVOKED, revoke=False)
        return None
    user = ldap_recheck(ctx.db, ctx.settings, user)
    if user is None:
        sign_out(ctx, authenticator, DIRECTORY_REVOKED, revoke=False)
        return None
    st.session_state[USER] = user
    st.session_state["roles"] = list(user.roles)
    return user


def renew_session() -> None:
    """After the user changed their own password: keep this session (it proved the old one).

    Every other session and every cookie, this browser's included, stay void; the next visit
    here asks for the new password.
    """
    st.session_state[SIGNED_IN_AT] = time.time()
    st.session_state[COOKIE_STALE] = True


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
    valid = _valid_cookie(ctx)
    has_valid = valid is not None and valid.username == user.username
    if not st.session_state.get(REMEMBER, True) or has_valid or _component_done("set"):
        st.session_state[COOKIE_WRITTEN_FOR] = user.username
        return
    authenticator.cookie_controller.set_cookie()


def render_logout_button(ctx: AppContext, authenticator: stauth.Authenticate) -> None:
    st.sidebar.button(
        "Çıkış yap", icon=":material/logout:", key="logout_button", on_click=sign_out, args=(ctx, authenticator),
        width="stretch", help="Bu hesabın bütün tarayıcılardaki oturumlarını kapatır.",
    )


def signed_in_user() -> User:
    """The user resolved by app.py for this run; pages call this (they only run via navigation)."""
    user = st.session_state.get(USER)
    if user is None:
        st.warning("Oturum bulunamadı. Lütfen yeniden giriş yapın.")
        st.stop()
    return user


def require_role(*roles: str) -> User:
    """Defence in depth: navigation already hides the page, this refuses it anyway (a page any
    of the user's roles may open is theirs)."""
    user = signed_in_user()
    if not set(user.roles) & set(roles):
        st.error("Bu sayfayı görme yetkiniz yok.")
        st.stop()
    return user
