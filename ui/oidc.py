"""Streamlit's side of OpenID Connect sign-in: `st.login`'s secrets file, the button, `st.user`.

`st.login` reads its provider from `.streamlit/secrets.toml` (`[auth]`); the file is written at
app start from the OIDC_* settings (`ragcore.access.oidc.write_secrets`). What the claims mean (groups → roles, the user
created or refreshed) is `ragcore.access.oidc`; ui/auth.py turns an accepted sign-in into our
session, so revocation, the remember-me cookie and the role checks work as for any user.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import streamlit as st

from ragcore.access import OIDC_PROVIDER, oidc_configured, write_oidc_secrets
from ragcore.core import Settings

BUTTON = "Kurumsal hesapla giriş"
# Session-state keys owned by this module.
REFUSED_SUB = "dayanak_oidc_refused"  # the provider's `sub` we refused in this session (not retried every run)
LOGOUT_PENDING = "dayanak_oidc_logout"  # our sign-out happened; end the provider's session on the next run


def secrets_path() -> Path:
    """The secrets file Streamlit reads last (it wins): `.streamlit/secrets.toml` in the working
    directory unless Streamlit's `secrets.files` option (STREAMLIT_SECRETS_FILES) says otherwise."""
    return Path(st.get_option("secrets.files")[-1])


def write_secrets(settings: Settings, path: Path | None = None) -> bool:
    """Write st.login's `[auth]` section where Streamlit reads it (`ragcore.access.oidc.write_secrets`)."""
    return write_oidc_secrets(settings, path or secrets_path())


def provider_claims(settings: Settings) -> dict[str, Any] | None:
    """The signed-in provider user's claims (`st.user`), or None (OIDC off, nobody signed in there)."""
    if not oidc_configured(settings) or not st.user.is_logged_in:
        return None
    return {key: value for key, value in st.user.to_dict().items() if key != "is_logged_in"}


def expired(claims: dict[str, Any]) -> bool:
    """The ID token's own expiry has passed: ask the provider again rather than trust old groups."""
    exp = claims.get("exp")
    return isinstance(exp, int | float) and exp <= time.time()


def render_button(settings: Settings) -> None:
    if not oidc_configured(settings):
        return
    if st.session_state.get(REFUSED_SUB) and st.user.is_logged_in:
        # refused (the reason is shown above): let someone else sign in at the provider on this browser
        if st.button("Kurumsal oturumu kapat", icon=":material/logout:", key="oidc_logout", width="stretch"):
            st.session_state.pop(REFUSED_SUB, None)
            st.logout()
        return
    if st.button(BUTTON, icon=":material/domain:", key="oidc_login", width="stretch",
                 help="Şirketinizin oturum açma sayfasına yönlendirilirsiniz."):
        st.login(OIDC_PROVIDER)
