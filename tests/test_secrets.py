import stat
import threading
import time

import pytest

from ragcore.access import ensure_initial_admin, users
from ragcore.core import SecretError, cookie_key, initial_admin_password, initial_admin_password_path
from ragcore.core import secrets as secrets_module


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_cookie_key_is_generated_once_with_private_modes(settings):
    s = settings.replace(cookie_key=None)
    key = cookie_key(s)
    assert len(key) >= 40 and cookie_key(s) == key
    assert _mode(s.secrets_dir / "cookie_key") == 0o600
    assert _mode(s.secrets_dir) == 0o700


def test_configured_cookie_key_is_used_and_nothing_written(settings):
    assert cookie_key(settings.replace(cookie_key="from-env")) == "from-env"
    assert not (settings.secrets_dir / "cookie_key").exists()


def test_initial_admin_is_created_once_with_a_generated_password(db, settings):
    password = ensure_initial_admin(db, settings)
    assert password and len(password) >= 12
    assert _mode(initial_admin_password_path(settings)) == 0o600
    assert users.authenticate(db, "admin", password).role == "admin"
    assert ensure_initial_admin(db, settings) is None  # printed once only
    assert initial_admin_password(settings) == (password, False)


def test_initial_admin_uses_admin_password_when_given(db, settings):
    s = settings.replace(admin_password="cok-gizli-parola")
    assert ensure_initial_admin(db, s) is None
    assert users.authenticate(db, "admin", "cok-gizli-parola") is not None
    assert not initial_admin_password_path(s).exists()


# --------------------------------------------------------------------------- publishing a new secret


def _slow_generation(monkeypatch, seconds: float = 0.2) -> None:
    """Generating a secret takes `seconds`: long enough for others to look at the file meanwhile."""
    real = secrets_module.secrets.token_urlsafe

    def slow(nbytes: int) -> str:
        time.sleep(seconds)
        return real(nbytes)

    monkeypatch.setattr(secrets_module.secrets, "token_urlsafe", slow)


def test_concurrent_creators_all_read_the_one_key(settings, monkeypatch):
    s = settings.replace(cookie_key=None)
    _slow_generation(monkeypatch)
    start, keys = threading.Barrier(8), []

    def create() -> None:
        start.wait()
        keys.append(cookie_key(s))

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(keys) == 8 and len(set(keys)) == 1 and len(keys[0]) >= 40
    assert (s.secrets_dir / "cookie_key").read_text(encoding="utf-8") == keys[0] + "\n"
    assert sorted(p.name for p in s.secrets_dir.iterdir()) == ["cookie_key"]  # no temporary file left


def test_a_reader_finds_no_file_or_the_whole_key(settings, monkeypatch):
    s = settings.replace(cookie_key=None)
    path = s.secrets_dir / "cookie_key"
    _slow_generation(monkeypatch)
    seen, done = [], threading.Event()

    def watch() -> None:
        while not done.is_set():
            try:
                seen.append(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                pass

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        key = cookie_key(s)
    finally:
        done.set()
        watcher.join()
    seen.append(path.read_text(encoding="utf-8"))
    assert [text for text in seen if text != key + "\n"] == []


@pytest.mark.parametrize("content", ["", " \n\n"], ids=["empty", "blank"])
@pytest.mark.parametrize(("name", "read"), [
    ("cookie_key", lambda s: cookie_key(s.replace(cookie_key=None))),
    ("initial_admin_password", lambda s: initial_admin_password(s.replace(admin_password=None))),
], ids=["cookie_key", "initial_admin_password"])
def test_an_empty_secret_file_is_refused(settings, name, read, content):
    path = settings.secrets_dir / name
    settings.secrets_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SecretError, match=f"{name} is empty; delete it"):
        read(settings)
    assert path.read_text(encoding="utf-8") == content  # refused, not overwritten
