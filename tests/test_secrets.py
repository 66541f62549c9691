import stat

from ragcore.access import first_admin, users
from ragcore.core import cookie_key, initial_admin_password, initial_admin_password_path


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_cookie_key_is_generated_once_with_private_modes(settings):
    s = settings.with_(cookie_key=None)
    key = cookie_key(s)
    assert len(key) >= 40 and cookie_key(s) == key
    assert _mode(s.secrets_dir / "cookie_key") == 0o600
    assert _mode(s.secrets_dir) == 0o700


def test_configured_cookie_key_is_used_and_nothing_written(settings):
    assert cookie_key(settings.with_(cookie_key="from-env")) == "from-env"
    assert not (settings.secrets_dir / "cookie_key").exists()


def test_initial_admin_is_created_once_with_a_generated_password(db, settings):
    password = first_admin.ensure_initial_admin(db, settings)
    assert password and len(password) >= 12
    assert _mode(initial_admin_password_path(settings)) == 0o600
    assert users.authenticate(db, "admin", password).role == "admin"
    assert first_admin.ensure_initial_admin(db, settings) is None  # printed once only
    assert initial_admin_password(settings) == (password, False)


def test_initial_admin_uses_admin_password_when_given(db, settings):
    s = settings.with_(admin_password="cok-gizli-parola")
    assert first_admin.ensure_initial_admin(db, s) is None
    assert users.authenticate(db, "admin", "cok-gizli-parola") is not None
    assert not initial_admin_password_path(s).exists()
