"""Users: bcrypt hashes, roles, activation (the first admin: `ragcore.access.first_admin`).

Passwords are validated before hashing because bcrypt silently ignores (or, in bcrypt 5,
rejects) bytes beyond 72; usernames are lowercase because streamlit-authenticator lowercases.
A password change and a deactivation void the user's sessions and cookies, a role change
their cookies, in the same statement (`ragcore.access.sessions`), whichever front end made it.
A user holds several roles (`user_roles`, migration 021); giving a user a new set of roles
makes that set's reader in the same transaction (`ragcore.access.roles`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import bcrypt
import psycopg

from ragcore.access import roles as role_registry
from ragcore.access.sessions import REVOKE_COOKIES, REVOKE_SESSIONS
from ragcore.access.sessions import now as session_clock
from ragcore.core import User
from ragcore.store import Database

MIN_PASSWORD_CHARS = 8
MAX_PASSWORD_BYTES = 72
USERNAME_RE = re.compile(r"^[a-z0-9._-]{2,64}$")
_COLUMNS = f"u.id, u.username, u.display_name, {role_registry.user_roles_sql('u')}, u.active, u.email"


class UserError(ValueError):
    """A user operation was refused; the message is Turkish and safe to show in the UI."""


def validate_username(username: str) -> str:
    name = username.strip().lower()
    if not USERNAME_RE.match(name):
        raise UserError("Kullanıcı adı 2–64 karakter olmalı; yalnızca a–z, 0–9, nokta, tire ve alt çizgi.")
    return name


def validate_password(password: str) -> None:
    if password != password.strip():
        # streamlit-authenticator strips the typed password, so such a password could never log in
        raise UserError("Parola boşlukla başlayamaz veya bitemez.")
    if len(password) < MIN_PASSWORD_CHARS:
        raise UserError(f"Parola en az {MIN_PASSWORD_CHARS} karakter olmalı.")
    if len(password.encode("utf-8")) > MAX_PASSWORD_BYTES:
        raise UserError(f"Parola en fazla {MAX_PASSWORD_BYTES} bayt olabilir (bcrypt sınırı).")


def validate_roles(db: Database, roles: str | Sequence[str]) -> tuple[str, ...]:
    """The roles (one name or several), sorted, when every one is a role; UserError otherwise."""
    wanted = [roles] if isinstance(roles, str) else list(roles)
    try:
        return role_registry.check_roles(db, wanted)
    except role_registry.RoleError as exc:
        raise UserError(str(exc)) from None


def hash_password(password: str) -> str:
    validate_password(password)
    return bcrypt.hashpw(password.encode("utf-8"), bcrypt.gensalt()).decode("ascii")


def check_password(password: str, password_hash: str) -> bool:
    encoded = password.encode("utf-8")
    if len(encoded) > MAX_PASSWORD_BYTES:
        return False
    return bcrypt.checkpw(encoded, password_hash.encode("ascii"))


def _row_to_user(row: tuple) -> User:
    return User(id=row[0], username=row[1], display_name=row[2], roles=tuple(row[3]), active=row[4], email=row[5])


def create_user(
    db: Database, username: str, roles: str | Sequence[str], password: str, display_name: str | None = None,
    email: str | None = None,
) -> User:
    """A new user holding `roles` (one name or several)."""
    name = validate_username(username)
    held = validate_roles(db, roles)
    password_hash = hash_password(password)
    try:
        with db.connection() as conn, conn.transaction():
            user_id = conn.execute(
                "INSERT INTO users (username, display_name, email, password_hash) VALUES (%s, %s, %s, %s) RETURNING id",
                (name, (display_name or name).strip() or name, email, password_hash),
            ).fetchone()[0]
            role_registry.set_user_roles(conn, user_id, held)
            row = conn.execute(f"SELECT {_COLUMNS} FROM users u WHERE u.id = %s", (user_id,)).fetchone()
    except psycopg.errors.UniqueViolation:
        raise UserError(f"'{name}' kullanıcı adı zaten kayıtlı.") from None
    except role_registry.RoleError as exc:
        raise UserError(str(exc)) from None
    return _row_to_user(row)


def get_user(db: Database, username: str) -> User | None:
    with db.connection() as conn:
        row = conn.execute(f"SELECT {_COLUMNS} FROM users u WHERE u.username = %s",
                           (username.strip().lower(),)).fetchone()
    return _row_to_user(row) if row else None


def list_users(db: Database) -> list[User]:
    with db.connection() as conn:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM users u ORDER BY u.username").fetchall()
    return [_row_to_user(r) for r in rows]


def credentials(db: Database) -> list[tuple[User, str]]:
    """Active users with their hashes, for building the login form's credentials each run."""
    with db.connection() as conn:
        rows = conn.execute(
            f"SELECT {_COLUMNS}, u.password_hash FROM users u WHERE u.active ORDER BY u.username").fetchall()
    return [(_row_to_user(r[:6]), r[6]) for r in rows]


_dummy_hash: list[str] = []


def _unknown_user_hash() -> str:
    """A hash to check against when the name is unknown, so timing does not reveal accounts."""
    if not _dummy_hash:
        _dummy_hash.append(bcrypt.hashpw(b"dayanak-no-such-user", bcrypt.gensalt()).decode("ascii"))
    return _dummy_hash[0]


def authenticate(db: Database, username: str, password: str) -> User | None:
    """The active user with this password, or None (unthrottled: front ends call `ragcore.access.auth.login`)."""
    with db.connection() as conn:
        row = conn.execute(
            f"SELECT {_COLUMNS}, u.password_hash FROM users u WHERE u.username = %s AND u.active "
            "AND u.auth_source = 'local'",
            (username.strip().lower(),),
        ).fetchone()
    if row is None:
        check_password(password, _unknown_user_hash())
        return None
    if not check_password(password, row[6]):
        return None
    return _row_to_user(row[:6])


def _update(db: Database, username: str, column: str, value: object, revoke: str | None = None) -> User:
    """Set one column; `revoke` (a `ragcore.access.sessions.REVOKE_*` assignment) voids sign-ins in the same statement."""
    extra = f", {revoke}" if revoke else ""
    with db.connection() as conn:
        row = conn.execute(
            f"UPDATE users u SET {column} = %(value)s, updated_at = now(){extra} "
            f"WHERE u.username = %(username)s RETURNING {_COLUMNS}",
            {"value": value, "username": username, "revoked_at": session_clock()},
        ).fetchone()
    if row is None:
        raise UserError(f"'{username}' adında bir kullanıcı yok.")
    return _row_to_user(row)


def set_roles(db: Database, username: str, roles: str | Sequence[str]) -> User:
    """The user holds exactly `roles` from now on (their set's reader made, a set nobody holds
    any more dropped, in one transaction). A role change voids the user's remember-me cookies;
    open sessions read the new roles on their next run."""
    held = validate_roles(db, roles)
    try:
        with db.connection() as conn, conn.transaction():
            row = conn.execute(
                f"UPDATE users SET updated_at = now(), {REVOKE_COOKIES} WHERE username = %(username)s RETURNING id",
                {"username": username, "revoked_at": session_clock()}).fetchone()
            if row is None:
                raise UserError(f"'{username}' adında bir kullanıcı yok.")
            role_registry.set_user_roles(conn, row[0], held)
            user = conn.execute(f"SELECT {_COLUMNS} FROM users u WHERE u.id = %s", (row[0],)).fetchone()
    except role_registry.RoleError as exc:
        raise UserError(str(exc)) from None
    return _row_to_user(user)


def set_role(db: Database, username: str, role: str) -> User:
    """One role (what a form with one choice sets): `set_roles` with it alone."""
    return set_roles(db, username, role)


def set_active(db: Database, username: str, active: bool) -> User:
    """Deactivation voids every session and cookie (they stay void after a reactivation).

    It is the admin's decision either way, so it clears a directory's deactivation mark
    (`ragcore.access.directory.refuse`): a directory sign-in does not undo an admin's deactivation.
    """
    revoke = "directory_refused_at = NULL" + ("" if active else f", {REVOKE_SESSIONS}")
    return _update(db, username, "active", active, revoke=revoke)


def set_password(db: Database, username: str, password: str) -> User:
    """A new password voids every session and cookie of the user (the caller renews its own).

    A directory user's password is the directory's; none is stored here.
    """
    with db.connection() as conn:
        row = conn.execute("SELECT auth_source FROM users WHERE username = %s", (username,)).fetchone()
    if row is not None and row[0] != "local":
        raise UserError(f"'{username}' dizinden (LDAP/kurumsal hesap) giriş yapıyor; parolası Dayanak'ta değil, "
                        "dizinde değiştirilir.")
    return _update(db, username, "password_hash", hash_password(password), revoke=REVOKE_SESSIONS)


