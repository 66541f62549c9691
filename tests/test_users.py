"""ragcore.access.users and ragcore.access.first_admin on the real embedded database: hashes, validation,
roles, activation, first admin."""

from __future__ import annotations

import pytest

from ragcore.access import ensure_initial_admin, users
from ragcore.core import Settings, initial_admin_password_path
from ragcore.store import Database


def _hash(db: Database, username: str) -> str:
    with db.connection() as conn:
        return conn.execute("SELECT password_hash FROM users WHERE username = %s", (username,)).fetchone()[0]


def test_create_stores_bcrypt_hash_never_plaintext(db: Database) -> None:
    user = users.create_user(db, "Mehmet", "isg", "gizli-parola-1", display_name="Mehmet Yılmaz")
    assert user.username == "mehmet" and user.role == "isg" and user.active
    stored = _hash(db, "mehmet")
    assert stored.startswith("$2b$") and "gizli-parola-1" not in stored
    assert users.authenticate(db, "MEHMET ", "gizli-parola-1") == user
    assert users.authenticate(db, "mehmet", "yanlis-parola") is None
    assert users.authenticate(db, "kimse", "gizli-parola-1") is None


@pytest.mark.parametrize(
    ("username", "password", "fragment"),
    [
        ("a", "gizli-parola-1", "Kullanıcı adı"),
        ("ali veli", "gizli-parola-1", "Kullanıcı adı"),
        ("ali", "kisa", "en az 8"),
        ("ali", "ş" * 37, "72 bayt"),  # 37 characters but 74 bytes in UTF-8
    ],
)
def test_validation_messages_are_turkish(db: Database, username: str, password: str, fragment: str) -> None:
    with pytest.raises(users.UserError, match=fragment):
        users.create_user(db, username, "isg", password)


def test_72_byte_password_is_the_limit(db: Database) -> None:
    users.create_user(db, "sinir", "ik", "ş" * 36)  # exactly 72 bytes
    assert users.authenticate(db, "sinir", "ş" * 36)
    assert users.authenticate(db, "sinir", "ş" * 37) is None  # over the limit never matches


def test_duplicate_and_unknown_role(db: Database) -> None:
    users.create_user(db, "ayse", "ik", "gizli-parola-1")
    with pytest.raises(users.UserError, match="zaten kayıtlı"):
        users.create_user(db, "Ayse", "ik", "gizli-parola-1")
    with pytest.raises(users.UserError, match="Bilinmeyen rol"):
        users.create_user(db, "fatma", "mudur", "gizli-parola-1")


def test_role_activation_password_changes(db: Database) -> None:
    users.create_user(db, "ayse", "ik", "gizli-parola-1")
    assert users.set_role(db, "ayse", "personel").role == "personel"
    with pytest.raises(users.UserError):
        users.set_role(db, "ayse", "root")
    assert not users.set_active(db, "ayse", False).active
    assert users.authenticate(db, "ayse", "gizli-parola-1") is None
    assert [u.username for u, _ in users.credentials(db)] == []
    users.set_active(db, "ayse", True)
    users.set_password(db, "ayse", "yeni-parola-22")
    assert users.authenticate(db, "ayse", "gizli-parola-1") is None
    assert users.authenticate(db, "ayse", "yeni-parola-22")
    with pytest.raises(users.UserError, match="adında bir kullanıcı yok"):
        users.set_active(db, "yok", False)


def test_credentials_lists_active_users_with_hashes(db: Database) -> None:
    users.create_user(db, "ayse", "ik", "gizli-parola-1")
    users.create_user(db, "mehmet", "isg", "gizli-parola-2")
    users.set_active(db, "mehmet", False)
    rows = users.credentials(db)
    assert [(u.username, u.role) for u, _ in rows] == [("ayse", "ik")]
    assert users.check_password("gizli-parola-1", rows[0][1])


def test_initial_admin_generated_once_and_stored_0600(db: Database, settings: Settings) -> None:
    settings = settings.replace(admin_password=None)
    password = ensure_initial_admin(db, settings)
    assert password and len(password) >= 12
    path = initial_admin_password_path(settings)
    assert path.read_text().strip() == password and (path.stat().st_mode & 0o777) == 0o600
    assert users.authenticate(db, "admin", password).role == "admin"
    assert ensure_initial_admin(db, settings) is None  # an admin exists: nothing printed again


def test_initial_admin_from_environment_is_not_printed(db: Database, settings: Settings) -> None:
    settings = settings.replace(admin_password="verilen-parola-1")
    assert ensure_initial_admin(db, settings) is None
    assert users.authenticate(db, "admin", "verilen-parola-1")
