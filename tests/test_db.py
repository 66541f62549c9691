import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import psycopg
import pytest

from ragcore import store as dbmod
from ragcore.core import ROLES, Settings
from ragcore.retrieval import hybrid
from ragcore.store import server as store_server

REPO = Path(__file__).resolve().parent.parent


def test_server_is_postgres_18_with_pgvector_08(session_db):
    assert session_db.info.postgres_version.startswith("18")
    assert session_db.info.pgvector_version >= (0, 8)
    assert session_db.info.iterative_scan


def test_migrations_are_recorded_and_idempotent(db):
    applied, pending = dbmod.migration_status(db)
    assert pending == [] and applied[0] == 1
    assert dbmod.migrate(db) == []
    with db.connection() as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY version")]
    assert names[0] == "initial"


def test_retrieval_settings_use_iterative_scan_on_pgvector_08(db):
    with db.connection() as conn:
        db.apply_retrieval_settings(conn)
        assert conn.execute("SHOW hnsw.iterative_scan").fetchone()[0] == "relaxed_order"
    with db.connection() as conn:  # SET LOCAL ends with the transaction
        assert conn.execute("SHOW hnsw.iterative_scan").fetchone()[0] != "relaxed_order"


def test_retrieval_settings_fall_back_to_ef_search_on_old_pgvector(pg_url):
    old = dbmod.Database(pg_url, max_size=1)
    old.info = dbmod.ServerInfo("16.0", (0, 6, 0))
    try:
        with old.connection() as conn:
            old.apply_retrieval_settings(conn)
            assert conn.execute("SHOW hnsw.ef_search").fetchone()[0] == "200"
    finally:
        old.close()


def test_namespaces_are_isolated(pg_url, db):
    other = dbmod.Database(pg_url, "test_isolated", max_size=1)
    try:
        dbmod.migrate(other)
        with other.connection() as conn:
            conn.execute(
                "INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
                "VALUES ('x', 'x.pdf', repeat('b', 64), 1, 1, '{isg}')"
            )
        with db.connection() as conn:
            assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
    finally:
        dbmod.drop_namespace(other, "test_isolated")
        other.close()


def test_invalid_namespace_and_dropping_public_are_refused(pg_url, db):
    with pytest.raises(dbmod.DatabaseError, match="Invalid namespace"):
        dbmod.Database(pg_url, "Robert'); DROP TABLE users;--")
    with pytest.raises(dbmod.DatabaseError, match="Refusing"):
        dbmod.drop_namespace(db, "public")


def test_embedding_space_is_created_once_and_a_different_model_is_refused(pg_url):
    space_db = dbmod.Database(pg_url, "test_space", max_size=1)
    try:
        dbmod.migrate(space_db)
        assert dbmod.current_embedding_space(space_db) is None
        assert dbmod.ensure_embedding_space(space_db, "use-multilingual-v3", 512) == dbmod.EmbeddingSpace(
            "use-multilingual-v3", 512
        )
        assert dbmod.ensure_embedding_space(space_db, "use-multilingual-v3", 512).dim == 512
        with pytest.raises(dbmod.EmbeddingModelMismatch) as err:
            dbmod.ensure_embedding_space(space_db, "ollama:bge-m3", 1024)
        message = str(err.value)
        assert "use-multilingual-v3" in message and "ollama:bge-m3" in message
        assert "python -m ragcore reembed" in message
        with space_db.connection() as conn:
            typ = conn.execute(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
            ).fetchone()[0]
            index = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'chunks_embedding_hnsw' "
                "AND schemaname = 'test_space'"
            ).fetchone()[0]
        assert typ == "vector(512)"
        assert "hnsw" in index and "vector_cosine_ops" in index and "m='16'" in index
    finally:
        dbmod.drop_namespace(space_db, "test_space")
        space_db.close()



def test_the_retrieval_filter_and_the_partial_indexes_share_one_predicate():
    """ROLE_PREDICATE and every partial HNSW index's WHERE come from `role_predicate`: the query's
    text with the role's bit in place of the placeholder is the index's, character for character."""
    assert hybrid.ROLE_PREDICATE == dbmod.role_predicate("%(role_bit)s")
    for bit in (2, 4, 1 << 40, 1 << 62):  # a seeded role's, and a reader's far up the bigint
        for statements in (dbmod.embedding_indexes([bit]), dbmod.window_embedding_indexes([bit])):
            partial = [s for s in statements.values() if " WHERE " in s]
            predicate = hybrid.ROLE_PREDICATE.replace("%(role_bit)s", str(bit))
            assert len(partial) == 1 and partial[0].endswith(f" WHERE {predicate}")


def test_the_dense_leg_of_a_role_is_planned_on_that_roles_partial_hnsw_index(pg_url):
    """The planner uses a partial index only when the query's WHERE implies the index's: the dense
    leg's SQL (hybrid.DENSE_CTE) for each role's bit, on a real table of that role's chunks and
    others', is planned on the role's own partial index (admin: the global one). The table is
    small, so sequential scans are switched off to make an index the planner's choice; which
    index it may choose is what the predicate decides."""
    namespace = "test_role_index"
    space_db = dbmod.Database(pg_url, namespace, max_size=1)
    try:
        dbmod.migrate(space_db)
        dbmod.ensure_embedding_space(space_db, "test-3d", 3)
        with space_db.connection() as conn:
            for n, role in enumerate(r for r in ROLES if r != "admin"):
                doc = conn.execute(
                    "INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
                    "VALUES (%s, %s, %s, 1, 1, %s) RETURNING id", (role, f"{role}.pdf", f"{n:064x}", [role])
                ).fetchone()[0]
                conn.execute(
                    "INSERT INTO chunks (document_id, ordinal, page_start, page_end, text, char_start, char_end, "
                    "lex_length, allowed_roles, embedding) "
                    "SELECT %s, g, 1, 1, 'metin ' || g, 0, 1, 1, %s, ARRAY[random(), random(), random()]::vector "
                    "FROM generate_series(0, 199) AS g", (doc, [role]))
            conn.execute("ANALYZE chunks")
        for role in ROLES:
            with space_db.connection() as conn:
                bit = dbmod.reader_bit(conn, role)
                index = "chunks_embedding_hnsw" if role == "admin" else next(
                    name for name in dbmod.embedding_indexes([bit]) if name != "chunks_embedding_hnsw")
                space_db.apply_retrieval_settings(conn)
                conn.execute("SET LOCAL enable_seqscan = off")
                plan = "\n".join(r[0] for r in conn.execute(
                    f"EXPLAIN WITH {hybrid.DENSE_CTE} SELECT id FROM dense",
                    {"qvec": np.array([1.0, 0.0, 0.0], dtype=np.float32), "role_bit": bit,
                     "candidates": 50}))
            assert f"Index Scan using {index} on chunks c" in plan, plan
    finally:
        dbmod.drop_namespace(space_db, namespace)
        space_db.close()

def test_lexical_statistics_follow_inserts_and_cascading_deletes(db):
    with db.connection() as conn:
        doc = conn.execute(
            "INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
            "VALUES ('t', 't.pdf', repeat('c', 64), 1, 1, '{isg}') RETURNING id"
        ).fetchone()[0]
        ids = [
            conn.execute(
                "INSERT INTO chunks (document_id, ordinal, page_start, page_end, text, char_start, char_end, "
                "lex_length, allowed_roles) VALUES (%s, %s, 1, 1, 'x', 0, 1, %s, '{isg}') RETURNING id",
                (doc, ordinal, length),
            ).fetchone()[0]
            for ordinal, length in ((0, 3), (1, 5))
        ]
        conn.execute("INSERT INTO postings (term, chunk_id, tf) VALUES ('işve', %s, 2), ('işve', %s, 1), ('risk', %s, 1)",
                     (*ids, ids[0]))

        def stats(role: str) -> tuple:
            return conn.execute("SELECT chunk_count, total_length FROM lex_stats WHERE role = %s", (role,)).fetchone()

        def lexicon(role: str) -> dict:
            return dict(conn.execute("SELECT term, df FROM lexicon WHERE role = %s", (role,)).fetchall())

        assert stats("admin") == stats("isg") == (2, 8) and stats("ik") == (0, 0)
        assert lexicon("admin") == lexicon("isg") == {"işve": 2, "risk": 1} and lexicon("ik") == {}
        conn.execute("UPDATE documents SET allowed_roles = '{ik}' WHERE id = %s", (doc,))
        assert {r[0] for r in conn.execute("SELECT allowed_roles[1] FROM chunks")} == {"ik"}
        assert stats("admin") == stats("ik") == (2, 8) and stats("isg") == (0, 0)  # moved with the roles
        assert lexicon("ik") == {"işve": 2, "risk": 1} and lexicon("isg") == {}
        conn.execute("DELETE FROM documents WHERE id = %s", (doc,))
        assert conn.execute("SELECT sum(chunk_count), sum(total_length) FROM lex_stats").fetchone() == (0, 0)
        assert conn.execute("SELECT count(*) FROM lexicon").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM lex_df_histogram").fetchone()[0] == 0


def test_schema_rejects_unknown_roles_and_empty_role_lists(db):
    """An empty list by a CHECK; a name that is not a role (the roles table, migration 021) by a trigger."""
    for roles, error in (("{}", psycopg.errors.CheckViolation), ("{muhasebe}", psycopg.errors.ForeignKeyViolation)):
        with pytest.raises(error), db.connection() as conn:
            conn.execute(
                "INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
                "VALUES ('t', 't.pdf', repeat('d', 64), 1, 1, %s)",
                (roles,),
            )


def test_database_url_pointing_at_another_server(server_root):
    """A second embedded server on its own socket, reached only through DATABASE_URL."""
    other_url = dbmod.embedded_url(server_root / "other")
    try:
        settings = Settings(database_url=other_url, data_dir=server_root / "unused")
        with dbmod.open_database(settings) as other:
            with other.connection() as conn:
                conn.execute(
                    "INSERT INTO users (username, display_name, password_hash) VALUES ('xx', 'x', 'h')"
                )
                socket_dir = conn.execute("SHOW unix_socket_directories").fetchone()[0]
            assert str((server_root / "other").resolve()) in socket_dir
        assert not (server_root / "unused" / "pg").exists()
    finally:
        dbmod.stop_embedded(server_root / "other")


def test_unreachable_database_is_a_clear_error(tmp_path):
    with pytest.raises(dbmod.DatabaseError, match="Database unreachable"):
        dbmod.Database(f"postgresql://postgres@/postgres?host={tmp_path}&connect_timeout=2")


def test_pool_reconnects_after_a_server_restart(server_root):
    url = dbmod.embedded_url(server_root / "restart")
    server = next(s for p, s in store_server._embedded_servers.items() if p == (server_root / "restart" / "pg" / "data").resolve())
    database = dbmod.Database(url, max_size=2)
    try:
        dbmod.migrate(database)
        server.stop()
        server.start()
        with database.connection() as conn:
            assert conn.execute("SELECT 1").fetchone()[0] == 1
    finally:
        database.close()
        dbmod.stop_embedded(server_root / "restart")


_PROBE = textwrap.dedent(
    """
    import json, sys, time
    from ragcore.core import Settings
    from ragcore.store import open_database
    db = open_database(Settings.from_env(dotenv=None))
    with db.connection() as conn:
        started = conn.execute("SELECT pg_postmaster_start_time()::text").fetchone()[0]
        if sys.argv[1] == "write":
            conn.execute("INSERT INTO users (username, display_name, password_hash) VALUES ('kalici', 'k', 'h')")
        count = conn.execute("SELECT count(*) FROM users WHERE username = 'kalici'").fetchone()[0]
    print(json.dumps({"started": started, "count": count}), flush=True)
    if sys.argv[1] == "hold":
        sys.stdin.readline()
    db.close()
    """
)


def _probe(data_dir: Path, mode: str, **kwargs) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "XDG_RUNTIME_DIR")}
    env["DATA_DIR"] = str(data_dir)
    return subprocess.Popen(
        [sys.executable, "-c", _PROBE, mode], cwd=REPO, env=env, text=True, stdout=subprocess.PIPE, **kwargs
    )


def test_two_processes_share_one_embedded_server_and_data_survives_restart(server_root):
    data_dir = server_root / "data"
    holder = _probe(data_dir, "hold", stdin=subprocess.PIPE)
    try:
        first = json.loads(holder.stdout.readline())
        writer = _probe(data_dir, "write")
        second = json.loads(writer.communicate(timeout=60)[0])
        assert second["started"] == first["started"], "the second process must attach to the same server"
    finally:
        holder.communicate("\n", timeout=60)
    assert holder.returncode == 0
    # Both processes are gone, so the server stopped; a new process starts it again on the same data.
    again = json.loads(_probe(data_dir, "read").communicate(timeout=60)[0])
    assert again["count"] == 1
    assert again["started"] != first["started"]
