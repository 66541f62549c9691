"""Per-role partial indexes and the one role predicate they share with retrieval.

A role reads only through indexes that hold its own rows: besides the global indexes (admin
reads every chunk), each other role has a partial HNSW graph on chunks.embedding, one on
chunk_windows.embedding (the sentence windows, migration 012) and two partial covering btrees on
postings, all `WHERE role_predicate(<its bit>)`. So neither what a role is
shown nor how much work its retrieval does can depend on chunks it cannot read: the shape of a
shared graph would shape its neighbours, and a shared posting list would make a forbidden
document's term frequencies show in the rows (and the time) a scan spends filtering them out.

PostgreSQL uses a partial index only for a query whose WHERE clause implies the index's, so
`role_predicate` builds both: the retrieval SQL with the role bit as a parameter, each index
with its role's literal bit. `create_role_indexes` is the one path that creates them: at every
migration (postings) and whenever the embedding column is (re)created (HNSW).
"""

from __future__ import annotations

import psycopg

from ragcore.core import ROLES

# One HNSW graph for admin (every chunk) and one partial graph per other role, holding only
# the chunks that role may read: a role's approximate neighbours then cannot depend on chunks
# it cannot read (a shared graph's shape, and so its recall, would). Same build parameters.
HNSW_WITH = "WITH (m = 16, ef_construction = 64)"


def role_bit(role: str) -> int:
    """The role's bit in chunks.roles_mask (CONTRACTS, Round 2): 1 << ROLES.index(role)."""
    return 1 << ROLES.index(role)


def role_predicate(bit_sql: str) -> str:
    """The role filter on a relation with role bits (chunks, postings), `bit_sql` being the role's
    bit as SQL: a parameter placeholder in retrieval (`%(role_bit)s`), a literal in an index.

    The one spelling of the predicate: PostgreSQL uses a partial index only for a query whose
    WHERE clause implies the index's, so the retrieval SQL and the per-role indexes must carry
    the same text (with the bit's value in place of the placeholder).
    """
    return f"(roles_mask & {bit_sql}::smallint) <> 0"


def _reader_roles() -> list[str]:
    """Every role but admin, whose bit is on every chunk: admin reads the global indexes."""
    return [role for role in ROLES if role != "admin"]


def _hnsw_indexes(table: str) -> dict[str, str]:
    """Index name → CREATE INDEX statement: the global HNSW graph on `table`.embedding and one
    partial graph per reader role."""
    statements = {
        f"{table}_embedding_hnsw": f"CREATE INDEX {table}_embedding_hnsw ON {table} USING hnsw "
                                   f"(embedding vector_cosine_ops) {HNSW_WITH}",
    }
    for role in _reader_roles():
        statements[f"{table}_embedding_hnsw_{role}"] = (
            f"CREATE INDEX {table}_embedding_hnsw_{role} ON {table} USING hnsw (embedding vector_cosine_ops) "
            f"{HNSW_WITH} WHERE {role_predicate(str(role_bit(role)))}"
        )
    return statements


def embedding_indexes() -> dict[str, str]:
    """Index name → CREATE INDEX statement for every HNSW index on chunks.embedding."""
    return _hnsw_indexes("chunks")


def window_embedding_indexes() -> dict[str, str]:
    """Index name → CREATE INDEX statement for every HNSW index on chunk_windows.embedding: the
    same graphs as the chunks', on the windows (migration 012), with the same predicate."""
    return _hnsw_indexes("chunk_windows")


def posting_indexes() -> dict[str, str]:
    """Index name → CREATE INDEX statement for every per-role index on postings.

    The twins of migration 003's global pair, restricted to the role's postings: the primary
    key's (term, chunk_id) with tf and doc_len (a term's whole list, and the probe of one
    chunk's posting), and the high-impact index (term, impact DESC, chunk_id) of the pruned
    leg. roles_mask and high_impact are not stored: a query whose WHERE implies the index's
    predicate needs neither to read it, so index-only scans still serve it.
    """
    statements = {}
    for role in _reader_roles():
        predicate = role_predicate(str(role_bit(role)))
        statements[f"postings_{role}"] = (
            f"CREATE INDEX postings_{role} ON postings (term, chunk_id) INCLUDE (tf, doc_len) WHERE {predicate}")
        statements[f"postings_high_impact_{role}"] = (
            f"CREATE INDEX postings_high_impact_{role} ON postings (term, impact DESC, chunk_id) "
            f"INCLUDE (tf, doc_len) WHERE high_impact AND {predicate}")
    return statements


def create_role_indexes(conn: psycopg.Connection) -> list[str]:
    """Create the per-role indexes that do not exist yet in this namespace; return their names.

    Postings' always; a table's HNSW graphs (and the global one) only once its embedding column
    exists (chunks, chunk_windows), since its dimension is the embedding model's. On a large
    corpus the first call takes a while.
    """
    existing = {row[0] for row in conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
        "AND tablename IN ('chunks', 'postings', 'chunk_windows')")}
    with_embedding = {row[0] for row in conn.execute(
        "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name IN ('chunks', 'chunk_windows') AND column_name = 'embedding'")}
    wanted = {**posting_indexes(),
              **(embedding_indexes() if "chunks" in with_embedding else {}),
              **(window_embedding_indexes() if "chunk_windows" in with_embedding else {})}
    created = []
    for name, statement in wanted.items():
        if name not in existing:
            conn.execute(statement)
            created.append(name)
    return created
