"""API tokens (ragcore.access.tokens, migration 008): made, stored hashed, listed, revoked — by the
module, by `python -m ragcore token …` and on the Kullanıcılar page."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

import pytest

from ragcore.access import auth, tokens, users
from ragcore.cli import main as cli_main
from tests.test_app import ADMIN_PASSWORD, app_env, button, login, new_app  # noqa: F401 - app_env is a fixture


@pytest.fixture()
def mehmet(db):
    return users.create_user(db, "mehmet", "isg", "mehmet-parola-1")


def test_a_token_is_random_prefixed_and_only_its_sha256_is_stored(db, mehmet) -> None:
    made = tokens.create_token(db, "mehmet", name="portal", created_by="admin")
    other = tokens.create_token(db, "mehmet")
    assert made.secret.startswith("dyk_") and len(made.secret) == 47 and tokens.well_formed(made.secret)
    assert made.secret != other.secret and other.token.name == tokens.DEFAULT_NAME
    assert made.token.prefix == made.secret[:12] and made.token.created_by == "admin"
    with db.connection() as conn:
        rows = conn.execute("SELECT prefix, token_hash, api_tokens::text FROM api_tokens ORDER BY id").fetchall()
    assert bytes(rows[0][1]) == hashlib.sha256(made.secret.encode()).digest()
    assert all(made.secret not in row[2] and other.secret not in row[2] for row in rows)
    assert tokens.authenticate(db, made.secret, "10.0.0.1").user.username == "mehmet"


def test_create_refuses_unknown_or_inactive_users_and_bad_options(db, mehmet) -> None:
    with pytest.raises(tokens.TokenError, match="kullanıcı yok"):
        tokens.create_token(db, "kimse")
    with pytest.raises(tokens.TokenError, match="Geçerlilik"):
        tokens.create_token(db, "mehmet", expires_days=0)
    with pytest.raises(tokens.TokenError, match="Geçerlilik"):
        tokens.create_token(db, "mehmet", expires_days=tokens.MAX_EXPIRY_DAYS + 1)
    with pytest.raises(tokens.TokenError, match="en fazla"):
        tokens.create_token(db, "mehmet", name="n" * 101)
    users.set_active(db, "mehmet", False)
    with pytest.raises(tokens.TokenError, match="devre dışı"):
        tokens.create_token(db, "mehmet")
    assert tokens.list_tokens(db) == []


def test_expiry_is_recorded_and_honoured(db, mehmet) -> None:
    made = tokens.create_token(db, "mehmet", expires_days=7)
    token = made.token
    assert timedelta(days=6, hours=23) < token.expires_at - token.created_at <= timedelta(days=7)
    assert token.state(token.created_at) == "etkin"
    assert token.state(token.expires_at) == "süresi doldu" and not token.usable(token.expires_at)
    with db.connection() as conn:
        conn.execute("UPDATE api_tokens SET expires_at = now() - interval '1 minute'")
    assert tokens.authenticate(db, made.secret, None).user is None


def test_revocation_by_hand_password_and_deactivation(db, mehmet) -> None:
    first, second, third = (tokens.create_token(db, "mehmet") for _ in range(3))
    revoked = tokens.revoke_token(db, first.token.id)
    assert revoked.revoked_reason == "manual" and revoked.state(revoked.created_at) == "iptal edildi"
    with pytest.raises(tokens.TokenError, match="zaten"):
        tokens.revoke_token(db, first.token.id)
    with pytest.raises(tokens.TokenError, match="bulunamadı"):
        tokens.revoke_token(db, 999_999)
    with pytest.raises(tokens.TokenError, match="bulunamadı"):
        tokens.revoke_token(db, 2**70)
    users.set_role(db, "mehmet", "ik")  # a role change revokes nothing; the role is read per request
    assert tokens.authenticate(db, second.secret, None).user.role == "ik"
    users.set_password(db, "mehmet", "yeni-parola-123")
    states = {t.id: t.revoked_reason for t in tokens.list_tokens(db, "mehmet")}
    assert states == {first.token.id: "manual", second.token.id: "password", third.token.id: "password"}
    fourth = tokens.create_token(db, "mehmet")
    users.set_active(db, "mehmet", True)  # already active: other updates revoke nothing
    assert tokens.authenticate(db, fourth.secret, None).user is not None
    users.set_active(db, "mehmet", False)
    assert tokens.get_token(db, fourth.token.id).revoked_reason == "deactivated"
    assert tokens.list_tokens(db, "mehmet", include_revoked=False) == []


def test_rejections_are_counted_per_address_under_a_key_no_user_can_have(db, mehmet) -> None:
    good = tokens.create_token(db, "mehmet").secret
    for n in range(tokens.TOKEN_POLICY.max_attempts):
        check = tokens.authenticate(db, f"dyk_{n:043d}", "10.1.1.1")
        assert check.user is None and not check.throttled
        assert check.gate.remaining == tokens.TOKEN_POLICY.max_attempts - n - 1
    refused = tokens.authenticate(db, "dyk_" + "s" * 43, "10.1.1.1")
    assert refused.throttled and refused.user is None and refused.gate.retry_after > 0
    # A valid token from the same address is checked first and passes: the stale token
    # of one client behind a NAT does not lock out the others.
    passed = tokens.authenticate(db, good, "10.1.1.1")
    assert passed.user is not None and passed.user.username == "mehmet" and not passed.throttled
    assert tokens.authenticate(db, "dyk_" + "t" * 43, "10.1.1.1").throttled  # still counted and refused
    assert tokens.authenticate(db, good, "10.1.1.2").user is not None
    assert not users.USERNAME_RE.match(tokens.THROTTLE_KEY)
    assert auth.lock_status(db, "mehmet").locked is False  # the owner's logins are untouched


def test_the_address_counter_must_share_the_login_window(db) -> None:
    with pytest.raises(ValueError, match="login window"):
        auth.count_address_attempt(db, "~x", "10.0.0.1", policy=auth.ThrottlePolicy(window=timedelta(minutes=1)))


# ----------------------------------------------------------------------------- CLI


@pytest.fixture()
def cli_env(settings, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name, value in {"DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir),
                        "EMBED_BACKEND": "use", "LLM_BACKEND": "extractive"}.items():
        monkeypatch.setenv(name, value)


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_creates_lists_and_revokes_tokens(db, mehmet, cli_env, capsys) -> None:
    code, out, _ = _cli(capsys, "token", "create", "mehmet", "--name", "rapor betiği", "--expires-days", "30", "--json")
    assert code == 0
    made = json.loads(out)
    assert tokens.authenticate(db, made["token"], None).user.username == "mehmet"
    assert made["name"] == "rapor betiği" and made["created_by"] == "cli" and made["expires_at"]

    code, out, _ = _cli(capsys, "token", "create", "mehmet")
    assert code == 0 and "yalnızca şimdi" in out
    human_secret = next(word for word in out.split() if word.startswith("dyk_"))
    assert tokens.well_formed(human_secret)

    code, out, _ = _cli(capsys, "token", "list", "--json")
    listed = json.loads(out)
    assert code == 0 and [t["state"] for t in listed] == ["etkin", "etkin"]
    assert made["token"] not in out and human_secret not in out

    code, out, _ = _cli(capsys, "token", "revoke", str(made["id"]), "--json")
    assert code == 0 and json.loads(out)["revoked_reason"] == "manual"
    assert tokens.authenticate(db, made["token"], None).user is None
    code, _, err = _cli(capsys, "token", "revoke", str(made["id"]))
    assert code == 1 and "zaten" in err
    code, out, _ = _cli(capsys, "token", "list", "--active")
    assert code == 0 and out.count("dyk_") == 1 and human_secret not in out
    code, _, err = _cli(capsys, "token", "create", "kimse")
    assert code == 1 and "kullanıcı yok" in err


# ----------------------------------------------------------------------------- Kullanıcılar page


@pytest.mark.usefixtures("app_env")
def test_admin_makes_and_revokes_a_token_on_the_users_page(db) -> None:
    users.create_user(db, "mehmet", "isg", "mehmet-parola-1")
    admin = login(new_app(), "admin", ADMIN_PASSWORD)
    admin.switch_page("pages/users.py").run()
    admin.selectbox(key="users_selected").set_value("mehmet").run()
    assert any("API anahtarı yok" in c.value for c in admin.caption)
    admin.text_input(key="users_token_name_mehmet").input("intranet **portal**")
    admin.number_input(key="users_token_days_mehmet").set_value(0)
    button(admin, "API anahtarı oluştur").click()
    admin.run()
    assert not admin.exception, admin.exception
    (shown,) = [c.value for c in admin.code]  # the secret, once, as plain text
    check = tokens.authenticate(db, shown, None)
    assert check.user is not None and check.user.username == "mehmet"
    (token,) = tokens.list_tokens(db, "mehmet")
    assert token.name == "intranet **portal**" and token.expires_at is None and token.created_by == "admin"

    admin.run()  # the next run no longer shows it
    assert not admin.code
    (table,) = [d.value for d in admin.dataframe if "Önek" in d.value.columns]
    assert list(table["Önek"]) == [f"{token.prefix}…"] and shown not in table.to_string()
    assert admin.selectbox(key="users_token_pick_mehmet").value == token.id
    button(admin, "Anahtarı iptal et").click()
    admin.run()
    assert not admin.exception, admin.exception
    assert tokens.authenticate(db, shown, None).user is None
    assert tokens.get_token(db, token.id).revoked_reason == "manual"
