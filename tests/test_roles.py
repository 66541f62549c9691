"""Roles as data (issue 38.1): migration 021 upgrades a database holding data exactly, the roles
registry refuses bad input in Turkish, and readers (role_bits) come and go with the sets of
roles users hold, up to the cap of a bigint mask.

The permission suites (tests/test_permissions.py, test_role_statistics.py, test_role_postings.py)
hold users with several roles and roles made and deleted at run time to the side-channel-free
properties; this file holds the bookkeeping.
"""

from __future__ import annotations

from collections import Counter

import pytest

from ragcore import store as dbmod
from ragcore.access import UserError, create_user, get_user, roles, set_roles
from ragcore.core import lexical_tokens, reader_key

OLD_USERS = [("yonetici", "admin"), ("ayse", "isg"), ("mehmet", "ik"), ("zeynep", "uretim"), ("ali", "personel"),
             ("veli", "isg")]
OLD_DOCUMENTS = [["isg"], ["ik", "personel"], ["admin"], ["uretim", "isg", "ik", "personel"], ["personel"]]


@pytest.fixture()
def namespace_db(pg_url):
    """A namespace of its own, dropped after the test."""
    made = []

    def make(name: str) -> dbmod.Database:
        database = dbmod.Database(pg_url, name)
        dbmod.drop_namespace(database, name)
        database.close()
        database = dbmod.Database(pg_url, name)
        made.append((database, name))
        return database

    yield make
    for database, name in made:
        dbmod.drop_namespace(database, name)
        database.close()


def test_migration_021_keeps_every_grant_and_every_users_role(namespace_db) -> None:
    """A database at migration 020 with users of every role, documents with one role, several,
    and admin only, chunks and postings: after 021 every user holds exactly their old role, every
    document's roles are unchanged, every chunk's mask is the one 003 computed (the auditor's bit
    on none), and the statistics equal a recount."""
    database = namespace_db("test_upgrade_021")
    with database.connection() as conn:
        conn.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
                     "applied_at timestamptz NOT NULL DEFAULT now())")
        for version, name, body in dbmod.migration_files():
            if version <= 20:
                conn.execute(body)
                conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name))
        for username, role in OLD_USERS:
            conn.execute("INSERT INTO users (username, display_name, password_hash, role) VALUES (%s, %s, 'h', %s)",
                         (username, username, role))
        for n, allowed in enumerate(OLD_DOCUMENTS):
            doc = conn.execute("INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
                               "VALUES ('eski', 'eski.pdf', %s, 1, 1, %s) RETURNING id", (f"{n:064x}", allowed)).fetchone()[0]
            text = f"Belge {n} risk değerlendirmesi ve yıllık izin {'ücret ' * n}"
            tokens = lexical_tokens(text)
            chunk = conn.execute(
                "INSERT INTO chunks (document_id, ordinal, page_start, page_end, text, char_start, char_end, "
                "lex_length, allowed_roles) VALUES (%s, 0, 1, 1, %s, 0, 1, %s, %s) RETURNING id",
                (doc, text, len(tokens), allowed)).fetchone()[0]
            for term, tf in Counter(tokens).items():
                conn.execute("INSERT INTO postings (term, chunk_id, tf) VALUES (%s, %s, %s)", (term, chunk, tf))
        masks_before = dict(conn.execute("SELECT id, roles_mask FROM chunks"))
        documents_before = dict(conn.execute("SELECT id, allowed_roles FROM documents"))
        stats_before = set(conn.execute("SELECT role, chunk_count, total_length FROM lex_stats"))
        lexicon_before = set(conn.execute("SELECT role, term, df, high_df FROM lexicon"))
    assert dbmod.migrate(database)[0] == "021_roles"  # and the later ones
    with database.connection() as conn:
        held = sorted(conn.execute("SELECT u.username, ur.role FROM users u JOIN user_roles ur ON ur.user_id = u.id"))
        assert held == sorted(OLD_USERS)
        assert dict(conn.execute("SELECT id, allowed_roles FROM documents")) == documents_before
        assert dict(conn.execute("SELECT id, roles_mask FROM chunks")) == masks_before
        assert conn.execute("SELECT count(*) FROM postings p JOIN chunks c ON c.id = p.chunk_id "
                            "WHERE p.roles_mask <> c.roles_mask").fetchone()[0] == 0
        assert set(conn.execute("SELECT role, chunk_count, total_length FROM lex_stats WHERE role <> 'denetci'")) \
            == stats_before
        assert conn.execute("SELECT chunk_count FROM lex_stats WHERE role = 'denetci'").fetchone()[0] == 0
        assert set(conn.execute("SELECT role, term, df, high_df FROM lexicon")) == lexicon_before
        rebuilt = dict(conn.execute("SELECT id, reader_mask(allowed_roles) FROM chunks"))
        assert rebuilt == masks_before  # the trigger computes what 003's generated column did
        assert [r[0] for r in conn.execute("SELECT name FROM roles ORDER BY name")] == \
            ["admin", "denetci", "ik", "isg", "personel", "uretim"]
        assert conn.execute("SELECT label FROM roles WHERE name = 'denetci'").fetchone()[0] == "Denetçi"
    assert get_user(database, "veli").roles == ("isg",)
    assert get_user(database, "yonetici").is_admin


def test_the_registry_refuses_bad_roles_in_turkish(db) -> None:
    with pytest.raises(roles.RoleError, match="Rol adı en fazla 40 karakter"):
        roles.create_role(db, "Bakım", "Bakım")
    with pytest.raises(roles.RoleError, match="Rol adı"):
        roles.create_role(db, "b" * 41, "Bakım")
    with pytest.raises(roles.RoleError, match="görünen adı 1–80"):
        roles.create_role(db, "bakim", "  ")
    with pytest.raises(roles.RoleError, match="görünen adı 1–80"):
        roles.create_role(db, "bakim", "B" * 81)
    with pytest.raises(roles.RoleError, match="en fazla 500"):
        roles.create_role(db, "bakim", "Bakım", "x" * 501)
    with pytest.raises(roles.RoleError, match="zaten var"):
        roles.create_role(db, "isg", "İSG")
    with pytest.raises(roles.RoleError, match="yerleşik"):
        roles.delete_role(db, "denetci")
    with pytest.raises(roles.RoleError, match="yok"):
        roles.delete_role(db, "olmayan")
    with pytest.raises(UserError, match="Bilinmeyen rol: olmayan"):
        create_user(db, "kisi", ["isg", "olmayan"], "parola-123")
    with pytest.raises(UserError, match="En az bir rol"):
        create_user(db, "kisi", [], "parola-123")
    assert get_user(db, "kisi") is None  # nothing half-made
    with pytest.raises(Exception, match="unknown roles: olmayan"), db.connection() as conn:
        conn.execute("INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
                     "VALUES ('x', 'x.pdf', %s, 1, 1, ARRAY['olmayan'])", ("0" * 64,))


def test_a_role_is_created_labelled_and_deleted(db) -> None:
    made = roles.create_role(db, "kalite", "Kalite", "Kalite kontrol birimi")
    assert made.name == "kalite" and not made.builtin
    assert roles.update_role(db, "kalite", "Kalite güvence").label == "Kalite güvence"
    assert roles.labels(db)["kalite"] == "Kalite güvence"
    with db.connection() as conn:
        assert conn.execute("SELECT members FROM role_bits WHERE role = 'kalite'").fetchone()[0] == ["kalite"]
    roles.delete_role(db, "kalite")
    assert "kalite" not in roles.role_names(db)
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM role_bits WHERE 'kalite' = ANY(members)").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM lex_stats WHERE role = 'kalite'").fetchone()[0] == 0


def test_a_set_of_roles_has_a_reader_while_somebody_holds_it(db) -> None:
    first = create_user(db, "iki-rol", ["uretim", "isg"], "parola-123")
    assert first.roles == ("isg", "uretim") and first.reader == "isg+uretim" == reader_key(["uretim", "isg"])
    create_user(db, "iki-rol-2", ["isg", "uretim"], "parola-123")
    with db.connection() as conn:
        assert conn.execute("SELECT members FROM role_bits WHERE role = 'isg+uretim'").fetchone()[0] == ["isg", "uretim"]
    set_roles(db, "iki-rol", ["isg"])
    with db.connection() as conn:  # the other user still holds the set
        assert conn.execute("SELECT count(*) FROM role_bits WHERE role = 'isg+uretim'").fetchone()[0] == 1
    set_roles(db, "iki-rol-2", ["admin", "isg"])  # admin reads everything: no reader of its own
    with db.connection() as conn:
        readers = {row[0] for row in conn.execute("SELECT role FROM role_bits")}
    assert readers == {"admin", "isg", "ik", "uretim", "personel", "denetci"}
    assert get_user(db, "iki-rol-2").reader == "admin"


def test_readers_stop_at_the_cap_with_a_turkish_message(namespace_db) -> None:
    """63 bits: the six roles' readers, then 57 more; the 64th is refused and nothing half-made
    (in a namespace of its own: the per-bit indexes it makes stay)."""
    db = namespace_db("test_reader_cap")
    dbmod.migrate(db)
    for n in range(roles.MAX_READERS - 6):
        roles.create_role(db, f"rol_{n}", f"Rol {n}")
    with pytest.raises(roles.RoleError, match="Rol birleşimi sınırına ulaşıldı: en fazla 63 okuyucu"):
        roles.create_role(db, "bir_fazla", "Bir fazla")
    assert "bir_fazla" not in roles.role_names(db)
    with pytest.raises(UserError, match="Rol birleşimi sınırına"):
        create_user(db, "kume", ["isg", "ik"], "parola-123")
    assert get_user(db, "kume") is None
