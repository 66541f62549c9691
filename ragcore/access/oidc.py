"""Sign-in through an OpenID Connect provider (Azure AD/Entra ID, Keycloak, Google Workspace…).

The browser side is Streamlit's own `st.login` (Authlib underneath): it reads the `[auth]`
section of `.streamlit/secrets.toml`, which `secrets_toml` builds from our OIDC_* settings so
the operator configures one place. After the provider signs the user in, the ID token's
claims (`st.user`) come here: `sub` is the user's stable id, OIDC_USERNAME_CLAIM their name,
OIDC_GROUPS_CLAIM their groups, mapped to roles by the same table as LDAP groups
(`ragcore.access.directory`, source `oidc`).

The claims are those of the last provider sign-in: unlike LDAP there is no directory to re-ask
between sign-ins, so a change at the provider applies at the user's next provider sign-in (the
app asks for one when the ID token has expired, see ui/auth.py). An admin's deactivation here
applies at once, as for every user.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from ragcore.access import directory
from ragcore.core import Settings, User, cookie_key, create_private
from ragcore.store import Database

log = logging.getLogger(__name__)

PROVIDER = "kurumsal"  # the `[auth.kurumsal]` section; `st.login(PROVIDER)`
MAX_CLAIM_CHARS = 1024
MISSING_CLAIM = ("Kurumsal hesabınızdan gelen bilgilerde '{claim}' alanı yok; giriş yapılamadı. "
                 "BT biriminden bu alanı Dayanak uygulamasına göndermesini isteyin.")


def configured(settings: Settings) -> bool:
    return settings.oidc_issuer_url is not None


def metadata_url(settings: Settings) -> str:
    return f"{settings.oidc_issuer_url}/.well-known/openid-configuration"


def cookie_secret(settings: Settings) -> str:
    """Streamlit's sign-in cookie key, derived from COOKIE_KEY: stable across restarts, never the key itself."""
    return hmac.new(cookie_key(settings).encode("utf-8"), b"dayanak-oidc-cookie", hashlib.sha256).hexdigest()


def secrets_toml(settings: Settings) -> str:
    """The `[auth]` section `st.login` reads (JSON strings are valid TOML basic strings)."""
    if not configured(settings):
        raise ValueError("OpenID Connect is not configured (OIDC_ISSUER_URL)")
    q = json.dumps
    return "\n".join([
        "# Written by Dayanak at start from the OIDC_* settings; edit those, not this file.",
        "[auth]",
        f"redirect_uri = {q(settings.oidc_redirect_url)}",
        f"cookie_secret = {q(cookie_secret(settings))}",
        "",
        f"[auth.{PROVIDER}]",
        f"client_id = {q(settings.oidc_client_id)}",
        f"client_secret = {q(settings.oidc_client_secret)}",
        f"server_metadata_url = {q(metadata_url(settings))}",
        'client_kwargs = { scope = "openid profile email" }',
        "",
    ])


def write_secrets(settings: Settings, path: Path) -> bool:
    """Write `secrets_toml` to `path`: mode 0600 from creation, replaced atomically, only when it
    changed. A file Dayanak did not write is left alone (logged; the operator keeps their own).
    False when OIDC is off or the file is someone else's."""
    if not configured(settings):
        return False
    text = secrets_toml(settings)
    if path.is_file():
        current = path.read_text(encoding="utf-8")
        if current == text:
            path.chmod(0o600)
            return True
        if not current.startswith(text.splitlines()[0]):
            log.error("%s exists and was not written by Dayanak; OpenID Connect sign-in uses it as it is "
                      "(remove it to let Dayanak write it from the OIDC_* settings)", path)
            return False
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    staging.unlink(missing_ok=True)
    with create_private(staging) as out:
        out.write(text.encode("utf-8"))
    os.replace(staging, path)
    return True


def _text(claims: Mapping[str, object], name: str) -> str:
    value = claims.get(name)
    if not isinstance(value, str) or not value.strip():
        raise directory.DirectoryRefusal(MISSING_CLAIM.format(claim=name))
    return value.strip()[:MAX_CLAIM_CHARS]


def groups(claims: Mapping[str, object], claim: str) -> tuple[str, ...]:
    """The groups claim as strings: a list (the usual form) or one string; anything else is no group."""
    value = claims.get(claim)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        return ()
    found = [item.strip()[:directory.MAX_GROUP_NAME_CHARS] for item in value if isinstance(item, str) and item.strip()]
    if len(found) > directory.MAX_GROUPS:
        log.warning("OIDC groups claim lists %d groups; only the first %d are mapped", len(found), directory.MAX_GROUPS)
    return tuple(found[:directory.MAX_GROUPS])


def account(settings: Settings, claims: Mapping[str, object]) -> directory.DirectoryAccount:
    """What the provider's claims say about the user (refused in Turkish when `sub` or the name is missing)."""
    username = _text(claims, settings.oidc_username_claim)
    name = claims.get("name")
    email = claims.get("email")
    return directory.DirectoryAccount(
        source="oidc", external_id=_text(claims, "sub"), username=username.lower(),
        display_name=name.strip()[:200] if isinstance(name, str) and name.strip() else username,
        email=email.strip()[:MAX_CLAIM_CHARS] if isinstance(email, str) and email.strip() else None,
        groups=groups(claims, settings.oidc_groups_claim))


def sign_in(db: Database, settings: Settings, claims: Mapping[str, object]) -> tuple[User | None, str | None]:
    """(user, None), or (None, the Turkish reason) — the provider already checked who this is."""
    try:
        return directory.sign_in(db, account(settings, claims)), None
    except directory.DirectoryRefusal as refusal:
        log.info("OIDC sign-in of sub %r refused: %s", str(claims.get("sub"))[:100], refusal)
        return None, str(refusal)
