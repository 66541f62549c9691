"""Directory users (LDAP/Active Directory, OpenID Connect): the group → role table, and what a
directory sign-in does to the `users` table.

The directory decides who a person is and which groups they are in; Dayanak decides which
roles a group gives, in `directory_group_roles`, a table the admin edits on the Kullanıcılar
page (no list of groups is guessed here: every company names its own). A directory user is
created on the first sign-in and their roles are re-derived from their groups on every
sign-in and re-check (`ragcore.access.ldap.recheck`); no group that maps to a role, a
disabled account, or an account gone from the directory deactivates the user, which voids
their sessions, cookies and API tokens the way an admin's deactivation does (migration 008's
trigger, `ragcore.access.sessions`). A directory user never has a password here.

Roles are written by ONE function, `apply_mapped_roles`: a directory user holds every role
their groups map to (`ragcore.access.users.set_roles`, so the reader of that set of roles exists
from the same transaction on). The table may name any role of the registry (`roles`, migration
021): `denetci` and roles an admin created included.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import psycopg

from ragcore.access import roles as role_registry
from ragcore.access.sessions import REVOKE_SESSIONS
from ragcore.access.sessions import now as session_clock
from ragcore.access.users import UserError, get_user, set_roles, validate_username
from ragcore.core import User
from ragcore.store import Database

log = logging.getLogger(__name__)

SOURCES: tuple[str, ...] = ("ldap", "oidc")
SOURCE_LABELS = {"local": "Yerel parola", "ldap": "LDAP / Active Directory", "oidc": "Kurumsal hesap (OpenID Connect)"}
MAX_GROUP_NAME_CHARS = 512
MAX_GROUPS = 1000  # groups read for one user; a directory with more is cut here (and logged)

NO_MAPPED_ROLE = ("Dizindeki gruplarınızdan hiçbiri Dayanak'ta bir role eşlenmemiş; giriş izni verilmedi. "
                  "Yöneticinizden grubunuzu Kullanıcılar sayfasındaki grup–rol tablosuna eklemesini isteyin.")
ACCOUNT_DISABLED = "Dizin hesabınız devre dışı ya da kilitli; giriş izni verilmedi. BT birimine başvurun."
ADMIN_DEACTIVATED = "Hesabınız Dayanak'ta yönetici tarafından devre dışı bırakıldı. Yöneticinize başvurun."


class DirectoryRefusal(UserError):
    """A directory user may not sign in; the message is Turkish and says what to do."""


@dataclass(frozen=True)
class DirectoryAccount:
    """What a directory says about one person, after it checked their password or token."""

    source: str
    external_id: str  # the LDAP entry's DN, or the OIDC `sub`
    username: str
    display_name: str
    email: str | None
    groups: tuple[str, ...]  # every name a mapping may use: LDAP group DNs and their cn, OIDC group values
    disabled: bool = False


@dataclass(frozen=True)
class GroupRole:
    """One row of the group → role table."""

    id: int
    source: str
    group_name: str
    role: str
    created_by: str | None
    created_at: datetime


def normalise_group(name: str) -> str:
    """Case and the spaces around a DN's `,` and `=` do not matter (`CN=X, OU=Y` is `cn=x,ou=y`)."""
    return re.sub(r"\s*([,=])\s*", r"\1", name.strip()).casefold()


def _check_source(source: str) -> str:
    if source not in SOURCES:
        raise UserError(f"Bilinmeyen dizin türü: {source!r}. Geçerli olanlar: {', '.join(SOURCES)}.")
    return source


def list_group_roles(db: Database, source: str | None = None) -> list[GroupRole]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT id, source, group_name, role, created_by, created_at FROM directory_group_roles "
            "WHERE %(source)s::text IS NULL OR source = %(source)s ORDER BY source, lower(group_name), role",
            {"source": source}).fetchall()
    return [GroupRole(*row) for row in rows]


def add_group_role(db: Database, source: str, group_name: str, role: str, *, created_by: str | None = None) -> GroupRole:
    """Map a directory group to a role (admin action); the next sign-in or re-check applies it."""
    _check_source(source)
    name = group_name.strip()
    if not 1 <= len(name) <= MAX_GROUP_NAME_CHARS:
        raise UserError(f"Grup adı 1–{MAX_GROUP_NAME_CHARS} karakter olmalı.")
    try:
        role_registry.check_roles(db, [role])
    except role_registry.RoleError as exc:
        raise UserError(str(exc)) from None
    try:
        with db.connection() as conn:
            row = conn.execute(
                "INSERT INTO directory_group_roles (source, group_name, role, created_by) VALUES (%s, %s, %s, %s) "
                "RETURNING id, source, group_name, role, created_by, created_at",
                (source, name, role, created_by)).fetchone()
    except psycopg.errors.UniqueViolation:
        raise UserError(f"'{name}' grubu zaten '{role}' rolüne eşlenmiş.") from None
    log.info("Directory group %s:%s mapped to role %s by %s", source, name, role, created_by or "-")
    return GroupRole(*row)


def delete_group_role(db: Database, mapping_id: int) -> None:
    """Remove one mapping; users who got a role only through it lose it at their next re-check or sign-in."""
    with db.connection() as conn:
        row = conn.execute("DELETE FROM directory_group_roles WHERE id = %s RETURNING source, group_name, role",
                           (mapping_id,)).fetchone()
    if row is None:
        raise UserError(f"Grup–rol eşlemesi #{mapping_id} bulunamadı.")
    log.info("Directory group %s:%s no longer maps to role %s", *row)


def mapped_roles(db: Database, source: str, groups: Iterable[str]) -> list[str]:
    """The roles `groups` map to, sorted; a mapping whose role is no longer in the registry (an
    admin deleted it) is skipped."""
    names = {normalise_group(group) for group in groups}
    found = {m.role for m in list_group_roles(db, source) if normalise_group(m.group_name) in names}
    return sorted(found & set(role_registry.role_names(db)))


def apply_mapped_roles(db: Database, user_id: int, roles: list[str]) -> User:
    """THE one place a directory user's roles are written.

    The user holds exactly the known ones of `roles` (`ragcore.access.users.set_roles`: their
    set's reader made, a set nobody holds any more dropped, in one transaction). A change voids
    the user's remember-me cookies, as an admin's role change does; open sessions and API tokens
    read the roles afresh on their next request. Unchanged roles write nothing. No known role →
    `DirectoryRefusal`.
    """
    known = sorted(set(roles) & set(role_registry.role_names(db)))
    if not known:
        raise DirectoryRefusal(NO_MAPPED_ROLE)
    with db.connection() as conn:
        row = conn.execute("SELECT username FROM users WHERE id = %s", (user_id,)).fetchone()
    if row is None:
        raise UserError(f"Kullanıcı #{user_id} bulunamadı.")
    user = get_user(db, row[0])
    if user is not None and user.roles == tuple(known):
        return user
    return set_roles(db, row[0], known)


def refuse(db: Database, user_id: int, reason: str) -> None:
    """The directory no longer lets this user in: deactivate them now (sessions, cookies and API
    tokens void in the same statement), marked as the directory's doing so a later successful
    sign-in may undo it. `reason` goes to the log."""
    with db.connection() as conn:
        row = conn.execute(
            f"UPDATE users SET active = false, directory_refused_at = now(), updated_at = now(), {REVOKE_SESSIONS} "
            "WHERE id = %(id)s AND active RETURNING username",
            {"id": user_id, "revoked_at": session_clock()}).fetchone()
    if row is not None:
        log.warning("Directory user %s deactivated: %s", row[0], reason)


def _existing(conn: psycopg.Connection, account: DirectoryAccount, username: str) -> tuple | None:
    """(id, auth_source, active, directory_refused_at) of the row this account signs in as."""
    row = conn.execute(
        "SELECT id, auth_source, active, directory_refused_at FROM users WHERE auth_source = %s AND external_id = %s",
        (account.source, account.external_id)).fetchone()
    return row or conn.execute(
        "SELECT id, auth_source, active, directory_refused_at FROM users WHERE username = %s", (username,)).fetchone()


def _username(account: DirectoryAccount) -> str:
    try:
        return validate_username(account.username)
    except UserError:
        raise DirectoryRefusal(
            f"Dizindeki kullanıcı adınız ({account.username[:64]!r}) Dayanak'ta kullanılamıyor: 2–64 karakter, "
            "yalnızca a–z, 0–9, nokta, tire ve alt çizgi olmalı. Yöneticinize başvurun.") from None


def _create(conn: psycopg.Connection, account: DirectoryAccount, username: str) -> int:
    """A new directory user, inactive and holding no role until `sign_in` has written their roles
    (`apply_mapped_roles`) and activates them."""
    return conn.execute(
        "INSERT INTO users (username, display_name, email, password_hash, active, auth_source, external_id) "
        "VALUES (%s, %s, %s, NULL, false, %s, %s) RETURNING id",
        (username, account.display_name.strip()[:200] or username, account.email, account.source,
         account.external_id)).fetchone()[0]


def _name_taken(username: str) -> str:
    return (f"'{username}' kullanıcı adı Dayanak'ta başka bir hesaba (yerel parola ya da başka bir dizin) ait; "
            "dizin hesabınızla giriş yapılamadı. Yöneticinize başvurun.")


def sign_in(db: Database, account: DirectoryAccount) -> User:
    """Create or refresh the user of a directory account whose password or token was just checked.

    Refuses (and deactivates an existing user) for a disabled account or no mapped role; refuses
    a name held by a local or other-source account (a directory never takes over a local
    password account) and a user an admin deactivated.
    """
    username = _username(account)
    roles = mapped_roles(db, account.source, account.groups)
    with db.connection() as conn:
        row = _existing(conn, account, username)
    if row is not None and row[1] != account.source:
        raise DirectoryRefusal(_name_taken(username))
    if account.disabled or not roles:
        if row is not None:
            refuse(db, row[0], "disabled in the directory" if account.disabled else "no group maps to a role")
        raise DirectoryRefusal(ACCOUNT_DISABLED if account.disabled else NO_MAPPED_ROLE)
    if row is not None and not row[2] and row[3] is None:
        raise DirectoryRefusal(ADMIN_DEACTIVATED)
    try:
        with db.connection() as conn:
            user_id = row[0] if row is not None else _create(conn, account, username)
            conn.execute(
                "UPDATE users SET display_name = %s, email = %s, external_id = %s, username = %s, updated_at = now() "
                "WHERE id = %s",
                (account.display_name.strip()[:200] or username, account.email, account.external_id, username, user_id))
    except psycopg.errors.UniqueViolation:  # renamed in the directory to a name another account holds
        raise DirectoryRefusal(_name_taken(username)) from None
    apply_mapped_roles(db, user_id, roles)
    with db.connection() as conn:
        conn.execute("UPDATE users SET active = true, directory_refused_at = NULL, directory_checked_at = now() "
                     "WHERE id = %s", (user_id,))
    user = get_user(db, username)
    assert user is not None
    log.info("Directory sign-in (%s): %s with roles %s", account.source, username, ", ".join(roles))
    return user


def source_of(db: Database, username: str) -> str | None:
    """'local', 'ldap' or 'oidc' (None: no such user)."""
    with db.connection() as conn:
        row = conn.execute("SELECT auth_source FROM users WHERE username = %s", (username.strip().lower(),)).fetchone()
    return row[0] if row else None


def sources(db: Database) -> dict[str, str]:
    """Every user's source by username, for the admin's list."""
    with db.connection() as conn:
        return dict(conn.execute("SELECT username, auth_source FROM users").fetchall())
