"""OpenID Connect sign-in against a real provider on loopback (`oidc-provider-mock`).

The authorization-code flow runs for real with Authlib's client (the library `st.login` uses):
the provider's discovery document, its authorization form, the code → token exchange, the ID
token verified with the provider's published keys; its claims then go through
`ragcore.access.oidc.sign_in` (groups → roles by the admin's table, the user created or refreshed).
"""

from __future__ import annotations

import secrets
import tomllib
from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from authlib.integrations.httpx_client import OAuth2Client
from authlib.jose import JsonWebKey, jwt
from oidc_provider_mock import run_server_in_thread

from ragcore.access import create_user, directory, get_user, oidc
from ragcore.core import Settings, SettingsError
from ragcore.store import Database

REDIRECT = "http://127.0.0.1:8501/oauth2callback"
CLIENT_ID, CLIENT_SECRET = "dayanak-test", "istemci-sirri-1"


@pytest.fixture(scope="session")
def provider() -> Iterator[str]:
    with run_server_in_thread() as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture()
def oidc_settings(settings: Settings, provider: str) -> Settings:
    return settings.replace(oidc_issuer_url=provider, oidc_client_id=CLIENT_ID, oidc_client_secret=CLIENT_SECRET,
                          oidc_redirect_url=REDIRECT)


def provider_user(provider: str, sub: str, **claims: object) -> None:
    httpx.put(f"{provider}/users/{sub}", json=claims).raise_for_status()


def provider_sign_in(settings: Settings, sub: str) -> dict:
    """The browser's part done by hand: the provider's form for `sub`, then the code exchanged
    for tokens by Authlib, and the ID token's verified claims."""
    metadata = httpx.get(oidc.metadata_url(settings)).raise_for_status().json()
    client = OAuth2Client(settings.oidc_client_id, settings.oidc_client_secret, redirect_uri=settings.oidc_redirect_url,
                          scope="openid profile email")
    nonce = secrets.token_urlsafe(16)
    url, state = client.create_authorization_url(metadata["authorization_endpoint"], nonce=nonce)
    answer = httpx.post(url, data={"sub": sub})
    assert answer.status_code == 302, answer.text
    location = answer.headers["location"]
    assert location.startswith(REDIRECT) and parse_qs(urlparse(location).query)["state"] == [state]
    token = client.fetch_token(metadata["token_endpoint"], authorization_response=location)
    keys = JsonWebKey.import_key_set(httpx.get(metadata["jwks_uri"]).raise_for_status().json())
    claims = jwt.decode(token["id_token"], keys, claims_options={
        "iss": {"essential": True, "value": metadata["issuer"]}, "aud": {"essential": True, "value": CLIENT_ID},
        "nonce": {"value": nonce}})
    claims.validate()
    return dict(claims)


def test_provider_groups_map_to_roles_and_create_the_user(db: Database, oidc_settings: Settings, provider: str):
    directory.add_group_role(db, "oidc", "Dayanak-ISG", "isg")
    directory.add_group_role(db, "oidc", "Dayanak-Herkes", "personel")
    provider_user(provider, "a1b2-fatma", preferred_username="Fatma.Kaya", name="Fatma Kaya",
                  email="fatma@firma.test", groups=["Dayanak-Herkes", "dayanak-isg", "Muhasebe"])
    claims = provider_sign_in(oidc_settings, "a1b2-fatma")
    user, refusal = oidc.sign_in(db, oidc_settings, claims)
    assert refusal is None and user is not None
    assert (user.username, user.display_name, user.email, user.roles) == ("fatma.kaya", "Fatma Kaya", "fatma@firma.test",
                                                                         ("isg", "personel"))
    assert user.reader == "isg+personel"  # every mapped role, read through their set's reader
    with db.connection() as conn:
        assert conn.execute("SELECT auth_source, external_id, password_hash FROM users WHERE id = %s",
                            (user.id,)).fetchone() == ("oidc", "a1b2-fatma", None)

    # the provider moves her out of the İSG group: her next sign-in keeps the remaining role, same account
    provider_user(provider, "a1b2-fatma", preferred_username="fatma.kaya", groups=["Dayanak-Herkes"])
    again, _ = oidc.sign_in(db, oidc_settings, provider_sign_in(oidc_settings, "a1b2-fatma"))
    assert again is not None and again.id == user.id and again.roles == ("personel",)

    # out of every mapped group: refused, and deactivated (sessions and tokens void)
    provider_user(provider, "a1b2-fatma", preferred_username="fatma.kaya", groups=["Muhasebe"])
    gone, refusal = oidc.sign_in(db, oidc_settings, provider_sign_in(oidc_settings, "a1b2-fatma"))
    assert gone is None and refusal == directory.NO_MAPPED_ROLE
    assert get_user(db, "fatma.kaya").active is False


def test_missing_claims_and_a_taken_name_are_refused_in_turkish(db: Database, oidc_settings: Settings, provider: str):
    directory.add_group_role(db, "oidc", "Dayanak-Herkes", "personel")
    provider_user(provider, "isimsiz", groups=["Dayanak-Herkes"])
    user, refusal = oidc.sign_in(db, oidc_settings, provider_sign_in(oidc_settings, "isimsiz"))
    assert user is None and refusal == oidc.MISSING_CLAIM.format(claim="preferred_username")

    create_user(db, "admin", "admin", "yerel-parola-1")
    provider_user(provider, "baskasi", preferred_username="admin", groups=["Dayanak-Herkes"])
    user, refusal = oidc.sign_in(db, oidc_settings, provider_sign_in(oidc_settings, "baskasi"))
    assert user is None and refusal is not None and "başka bir hesaba" in refusal
    assert get_user(db, "admin").roles == ("admin",)  # a provider never takes over a local account


def test_groups_claim_shapes():
    assert oidc.groups({"groups": "Tek-Grup"}, "groups") == ("Tek-Grup",)
    assert oidc.groups({"groups": ["a", 3, None, " b ", ""]}, "groups") == ("a", "b")
    assert oidc.groups({"groups": {"a": 1}}, "groups") == ()
    assert oidc.groups({}, "groups") == ()
    assert len(oidc.groups({"roles": [f"g{i}" for i in range(5000)]}, "roles")) == directory.MAX_GROUPS


def test_secrets_for_st_login_come_from_the_settings(oidc_settings: Settings):
    parsed = tomllib.loads(oidc.secrets_toml(oidc_settings))
    assert parsed["auth"]["redirect_uri"] == REDIRECT
    assert len(parsed["auth"]["cookie_secret"]) == 64 and oidc_settings.cookie_key not in parsed["auth"]["cookie_secret"]
    assert parsed["auth"][oidc.PROVIDER] == {
        "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
        "server_metadata_url": f"{oidc_settings.oidc_issuer_url}/.well-known/openid-configuration",
        "client_kwargs": {"scope": "openid profile email"}}
    quoted = oidc_settings.replace(oidc_client_secret='a"b\\c\nd')
    assert tomllib.loads(oidc.secrets_toml(quoted))["auth"][oidc.PROVIDER]["client_secret"] == 'a"b\\c\nd'


def test_oidc_settings_are_all_or_nothing():
    with pytest.raises(SettingsError, match="missing: OIDC_CLIENT_SECRET, OIDC_REDIRECT_URL"):
        Settings.from_env({"OIDC_ISSUER_URL": "https://giris.firma.test", "OIDC_CLIENT_ID": "x"}, dotenv=None)
    assert Settings.from_env({}, dotenv=None).oidc_issuer_url is None


def test_st_login_secrets_are_written_private_and_a_foreign_file_is_left_alone(oidc_settings: Settings, tmp_path):
    from ui.oidc import write_secrets

    path = tmp_path / ".streamlit" / "secrets.toml"
    assert write_secrets(oidc_settings, path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert tomllib.loads(path.read_text())["auth"][oidc.PROVIDER]["client_id"] == CLIENT_ID
    assert write_secrets(oidc_settings.replace(oidc_client_id="yeni"), path)  # ours: rewritten from the settings
    assert tomllib.loads(path.read_text())["auth"][oidc.PROVIDER]["client_id"] == "yeni"
    path.write_text('[auth]\nredirect_uri = "operatorun"\n')
    assert not write_secrets(oidc_settings, path)
    assert path.read_text() == '[auth]\nredirect_uri = "operatorun"\n'
    unset = oidc_settings.replace(oidc_issuer_url=None, oidc_client_id=None, oidc_client_secret=None, oidc_redirect_url=None)
    assert not write_secrets(unset, tmp_path / "yok.toml")
    assert not (tmp_path / "yok.toml").exists()
