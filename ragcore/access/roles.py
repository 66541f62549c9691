"""Roles as data (issue 38.1): the registry (list, create, update, delete) and the readers behind it.

A role is a row of `roles` (migration 021): a name (`^[a-z][a-z0-9_]*$`, at most 40 characters),
a Turkish label and a description. A user holds several (`user_roles`); a document is readable
by a set of roles (`documents.allowed_roles`, checked against `roles` by a trigger).

What owns the side-channel-free statistics and the partial indexes is a *reader*: a row of
`role_bits`, one role or the exact set of roles some user holds (`members`; its key is the
members joined by '+', `ragcore.core.reader_key`). A user's retrieval reads through their set's
reader, so the BM25 statistics, the document frequencies and the indexes it uses are those of
the union of what their roles may read and nothing else. Every role has a reader of its own;
a set's reader is made when a user is given that set (`sync_readers`) and dropped when nobody
holds it any more. Creating a reader sets its bit on the chunks it may read in the same
transaction; migration 003's triggers then count its statistics and copy its bit onto postings
and windows, so nothing is computed twice. Its partial indexes follow (`create_role_indexes`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import psycopg

from ragcore.access.sessions import REVOKE_COOKIES
from ragcore.access.sessions import now as session_clock
from ragcore.core import ADMIN_ROLE, reader_key
from ragcore.store import Database, create_role_indexes

NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_NAME_CHARS = 40
MAX_LABEL_CHARS = 80
MAX_DESCRIPTION_CHARS = 500
# chunks.roles_mask is a bigint: bits 1 … 2**62, one per reader (admin's included).
MAX_READERS = 63


class RoleError(ValueError):
    """A role operation was refused; the message is Turkish and safe to show in the UI."""


@dataclass(frozen=True)
class Role:
    name: str
    label: str
    description: str
    builtin: bool


_COLUMNS = "name, label, description, builtin"


def list_roles(conn_or_db: Database | psycopg.Connection) -> list[Role]:
    """Every role, admin first, then the built-in ones, then by name."""
    # The installation's roles in the order people know them (admin, isg, ik, uretim, personel,
    # denetci), then the admin's own in the order they were made.
    sql = (f"SELECT {_COLUMNS} FROM roles ORDER BY name <> 'admin', "
           "array_position(ARRAY['isg', 'ik', 'uretim', 'personel', 'denetci'], name) NULLS LAST, created_at, name")
    if isinstance(conn_or_db, psycopg.Connection):
        return [Role(*row) for row in conn_or_db.execute(sql)]
    with conn_or_db.connection() as conn:
        return [Role(*row) for row in conn.execute(sql)]


def role_names(db: Database) -> tuple[str, ...]:
    """The names of every role, in `list_roles` order (argparse choices, form options)."""
    return tuple(role.name for role in list_roles(db))


def labels(db: Database) -> dict[str, str]:
    """Role name → Turkish label, for showing roles (a reader key shows as its members' labels)."""
    return {role.name: role.label for role in list_roles(db)}


def unknown_roles_message(unknown: list[str], known: tuple[str, ...]) -> str:
    """The one Turkish refusal for role names that are not roles."""
    return f"Bilinmeyen rol: {', '.join(unknown)}. Geçerli roller: {', '.join(known)}."


def check_roles(db: Database, roles: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The roles, sorted and deduplicated, when every one exists; RoleError otherwise."""
    known = role_names(db)
    unknown = sorted({role for role in roles if role not in known})
    if unknown:
        raise RoleError(unknown_roles_message(unknown, known))
    if not roles:
        raise RoleError("En az bir rol seçin.")
    return tuple(sorted(set(roles)))


def _validate_name(name: str) -> str:
    cleaned = name.strip()
    if len(cleaned) > MAX_NAME_CHARS or not NAME_RE.match(cleaned):
        raise RoleError(f"Rol adı en fazla {MAX_NAME_CHARS} karakter olmalı; küçük harfle (a–z) başlamalı ve "
                        "yalnızca a–z, 0–9 ve alt çizgi içermeli (ör. bakim, kalite_kontrol).")
    return cleaned


def _validate_text(label: str, description: str) -> tuple[str, str]:
    label, description = label.strip(), description.strip()
    if not label or len(label) > MAX_LABEL_CHARS:
        raise RoleError(f"Rolün görünen adı 1–{MAX_LABEL_CHARS} karakter olmalı (ör. Bakım).")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise RoleError(f"Rol açıklaması en fazla {MAX_DESCRIPTION_CHARS} karakter olabilir.")
    return label, description


def create_role(db: Database, name: str, label: str, description: str = "") -> Role:
    """A new role with a reader of its own (it reads nothing until a document names it)."""
    name = _validate_name(name)
    label, description = _validate_text(label, description)
    try:
        with db.connection() as conn, conn.transaction():
            conn.execute("INSERT INTO roles (name, label, description) VALUES (%s, %s, %s)", (name, label, description))
            sync_readers(conn)
    except psycopg.errors.UniqueViolation:
        raise RoleError(f"'{name}' adında bir rol zaten var.") from None
    return Role(name, label, description, False)


def update_role(db: Database, name: str, label: str, description: str = "") -> Role:
    """A new label and description; the name (what documents and users hold) never changes."""
    label, description = _validate_text(label, description)
    with db.connection() as conn:
        row = conn.execute(f"UPDATE roles SET label = %s, description = %s WHERE name = %s RETURNING {_COLUMNS}",
                           (label, description, name)).fetchone()
    if row is None:
        raise RoleError(f"'{name}' adında bir rol yok.")
    return Role(*row)


def delete_role(db: Database, name: str) -> None:
    """Delete a role: users lose it (their other roles stay), documents lose it (a document left
    with no role becomes readable by admin alone), directory groups stop mapping to it, and every
    reader it is a member of goes, all in one transaction. Refused for built-in roles and when some user holds no other role (give
    them one first: a user without a role could not use the app)."""
    with db.connection() as conn, conn.transaction():
        row = conn.execute("SELECT builtin FROM roles WHERE name = %s FOR UPDATE", (name,)).fetchone()
        if row is None:
            raise RoleError(f"'{name}' adında bir rol yok.")
        if row[0]:
            raise RoleError(f"'{name}' yerleşik bir roldür; silinemez.")
        alone = [r[0] for r in conn.execute(
            "SELECT u.username FROM users u JOIN user_roles ur ON ur.user_id = u.id AND ur.role = %s "
            "WHERE NOT EXISTS (SELECT FROM user_roles o WHERE o.user_id = u.id AND o.role <> %s) ORDER BY u.username",
            (name, name))]
        if alone:
            raise RoleError(f"'{name}' rolü silinemedi: şu kullanıcıların başka rolü yok: {', '.join(alone)}. "
                            "Önce onlara başka bir rol verin.")
        conn.execute(f"UPDATE users SET updated_at = now(), {REVOKE_COOKIES} "
                     "WHERE id IN (SELECT user_id FROM user_roles WHERE role = %(name)s)",
                     {"name": name, "revoked_at": session_clock()})
        conn.execute("DELETE FROM user_roles WHERE role = %s", (name,))
        conn.execute("DELETE FROM directory_group_roles WHERE role = %s", (name,))  # a group maps to it no more
        conn.execute(
            "UPDATE documents SET allowed_roles = CASE WHEN cardinality(array_remove(allowed_roles, %(name)s)) = 0 "
            "THEN ARRAY[%(admin)s] ELSE array_remove(allowed_roles, %(name)s) END "
            "WHERE allowed_roles @> ARRAY[%(name)s]", {"name": name, "admin": ADMIN_ROLE})
        conn.execute("DELETE FROM roles WHERE name = %s", (name,))
        sync_readers(conn)


# ----------------------------------------------------------------------------- users' roles


def user_roles_sql(user_alias: str) -> str:
    """A SQL expression: the user's roles as a sorted text[] (for SELECT lists that build a User)."""
    return f"ARRAY(SELECT ur.role FROM user_roles ur WHERE ur.user_id = {user_alias}.id ORDER BY ur.role)"


def set_user_roles(conn: psycopg.Connection, user_id: int, roles: tuple[str, ...]) -> None:
    """Inside the caller's transaction: the user holds exactly `roles` (checked names), and the
    readers follow (their set's made, sets nobody holds any more dropped)."""
    conn.execute("DELETE FROM user_roles WHERE user_id = %s AND NOT (role = ANY(%s))", (user_id, list(roles)))
    conn.execute("INSERT INTO user_roles (user_id, role) SELECT %s, r FROM unnest(%s::text[]) AS r "
                 "ON CONFLICT DO NOTHING", (user_id, list(roles)))
    sync_readers(conn)


# ----------------------------------------------------------------------------- readers


def sync_readers(conn: psycopg.Connection) -> list[str]:
    """Inside the caller's transaction: a reader for every role and for every set of roles a user
    holds, and none other; return the keys of the readers created. Sets holding admin need
    none (admin reads everything). The statistics lock first: two role changes at once then
    see each other's users, and a document stored meanwhile waits (its chunks' masks are
    computed under the same lock)."""
    conn.execute("SELECT lexical_statistics_lock()")
    wanted: set[tuple[str, ...]] = {(row[0],) for row in conn.execute("SELECT name FROM roles")}
    wanted |= {tuple(row[0]) for row in conn.execute(
        "SELECT DISTINCT ARRAY(SELECT ur.role FROM user_roles ur WHERE ur.user_id = u.id ORDER BY ur.role) "
        "FROM users u WHERE EXISTS (SELECT FROM user_roles ur WHERE ur.user_id = u.id)")
        if ADMIN_ROLE not in row[0] and len(row[0]) > 1}
    existing = {tuple(row[0]) for row in conn.execute("SELECT members FROM role_bits")}
    moved = sum(_drop_reader(conn, members) for members in sorted(existing - wanted))
    created = []
    for members in sorted(wanted - existing, key=lambda m: (len(m), m)):
        moved += _ensure_reader(conn, members)
        created.append(reader_key(members))
    if created:
        create_role_indexes(conn)
    if moved:
        _compact_postings(conn)
    return created


def _compact_postings(conn: psycopg.Connection) -> None:
    """Rebuild the postings' indexes after a reader's bits were set or cleared.

    Every posting of a chunk whose mask changed was rewritten (roles_mask is in the covering
    indexes, so no update is HOT), which leaves every posting index with a copy of those
    entries until VACUUM and half-empty pages after it. The planner prices an index by its
    pages: a bloated per-reader index next to a global one can tip a plan to the global index
    — and from then on, to a plan whose work shows other readers' postings (the property
    tests/test_role_postings.py holds). A rebuild restores the sizes a fresh store would have;
    it blocks writes to postings meanwhile, a cost paid when a role or a new set of roles is
    given, not at question time. The HNSW graphs are left as they are (a rebuild takes minutes
    at 100k chunks; the dense leg's plan does not price them by pages).
    """
    conn.execute("REINDEX TABLE postings")


def _ensure_reader(conn: psycopg.Connection, members: tuple[str, ...]) -> int:
    """Create the reader of `members` unless it exists; return the number of chunks given its bit.
    Its bit is set on every chunk whose roles meet the members (the chunks trigger of 021
    computes it; the statistics and the postings' and windows' copies follow through 003's and
    012's triggers)."""
    key = reader_key(members)
    conn.execute("SELECT lexical_statistics_lock()")
    if conn.execute("SELECT FROM role_bits WHERE role = %s", (key,)).fetchone():
        return 0
    bit = conn.execute(
        "SELECT b FROM (SELECT (1::bigint << g) AS b FROM generate_series(0, %s) AS g) free "
        "WHERE NOT EXISTS (SELECT FROM role_bits WHERE bit = free.b) ORDER BY b LIMIT 1", (MAX_READERS - 1,)).fetchone()
    if bit is None:
        raise RoleError(f"Rol birleşimi sınırına ulaşıldı: en fazla {MAX_READERS} okuyucu (tek rol ya da bir kullanıcının "
                        f"rol kümesi) olabilir. Kullanılmayan rolleri silin ya da kullanıcıların rol kümelerini "
                        f"birbirine benzetin.")
    conn.execute("INSERT INTO role_bits (role, bit, members) VALUES (%s, %s, %s)", (key, bit[0], list(members)))
    conn.execute("INSERT INTO lex_stats (role) VALUES (%s)", (key,))
    return conn.execute("UPDATE chunks SET roles_mask = reader_mask(allowed_roles) WHERE allowed_roles && %s::text[]",
                        (list(members),)).rowcount


def _drop_reader(conn: psycopg.Connection, members: tuple[str, ...]) -> int:
    """Drop a reader: its statistics, its row, and its bit from every chunk (the postings and
    windows follow; its indexes stay, empty, for the next reader given the bit). Returns the
    number of chunks that lost the bit."""
    key = reader_key(members)
    conn.execute("SELECT lexical_statistics_lock()")
    bit = conn.execute("DELETE FROM role_bits WHERE role = %s RETURNING bit", (key,)).fetchone()[0]
    conn.execute("DELETE FROM lexicon WHERE role = %s", (key,))
    conn.execute("DELETE FROM lex_df_histogram WHERE role = %s", (key,))
    return conn.execute("UPDATE chunks SET roles_mask = reader_mask(allowed_roles) "
                        "WHERE (roles_mask & %s::bigint) <> 0", (bit,)).rowcount
