"""Per-reader partial indexes and the one role predicate they share with retrieval.

A reader (migration 021: one role, or the set of roles a user holds) reads only through indexes
that hold its own rows: besides the global indexes (admin reads every chunk), each other reader
has a partial HNSW graph on chunks.embedding, one on
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

# One HNSW graph for admin (every chunk) and one partial graph per other reader, holding only
# the chunks that reader may read: a reader's approximate neighbours then cannot depend on chunks
# it cannot read (a shared graph's shape, and so its recall, would). Same build parameters.
HNSW_WITH = "WITH (m = 16, ef_construction = 64)"
ADMIN_BIT = 1


def reader_bits(conn: psycopg.Connection) -> list[int]:
    """Every reader's bit (role_bits, migration 021) but admin's, which is on every chunk: admin
    reads the global indexes."""
    return [row[0] for row in conn.execute("SELECT bit FROM role_bits WHERE bit <> %(admin)s ORDER BY bit",
                                           {"admin": ADMIN_BIT})]


def reader_bit(conn: psycopg.Connection, reader: str) -> int | None:
    """The reader's bit in chunks.roles_mask, or None when no such reader exists."""
    row = conn.execute("SELECT bit FROM role_bits WHERE role = %(reader)s", {"reader": reader}).fetchone()
    return None if row is None else int(row[0])


def role_predicate(bit_sql: str) -> str:
    """The role filter on a relation with role bits (chunks, postings, windows), `bit_sql` being
    the reader's bit as SQL: a parameter placeholder in retrieval (`%(role_bit)s`), a literal in
    an index.

    The one spelling of the predicate: PostgreSQL uses a partial index only for a query whose
    WHERE clause implies the index's, so the retrieval SQL and the per-reader indexes must carry
    the same text (with the bit's value in place of the placeholder).
    """
    return f"(roles_mask & {bit_sql}::bigint) <> 0"


def _suffix(bit: int) -> str:
    """An index's name part for a bit: its position (`b5` for 32). Named by bit, not by reader,
    because the predicate is the bit's: a bit freed by a dropped reader and given to a new one
    keeps a valid index (the chunks' masks are what change), and a role's name (40 characters)
    would not fit PostgreSQL's 63-character identifiers."""
    return f"b{bit.bit_length() - 1}"


def _hnsw_indexes(table: str, bits: list[int]) -> dict[str, str]:
    """Index name → CREATE INDEX statement: the global HNSW graph on `table`.embedding and one
    partial graph per reader bit."""
    statements = {
        f"{table}_embedding_hnsw": f"CREATE INDEX {table}_embedding_hnsw ON {table} USING hnsw "
                                   f"(embedding vector_cosine_ops) {HNSW_WITH}",
    }
    for bit in bits:
        statements[f"{table}_embedding_hnsw_{_suffix(bit)}"] = (
            f"CREATE INDEX {table}_embedding_hnsw_{_suffix(bit)} ON {table} USING hnsw (embedding vector_cosine_ops) "
            f"{HNSW_WITH} WHERE {role_predicate(str(bit))}"
        )
    return statements


def embedding_indexes(bits: list[int]) -> dict[str, str]:
    """Index name → CREATE INDEX statement for every HNSW index on chunks.embedding (`bits`: the
    readers', `reader_bits`)."""
    return _hnsw_indexes("chunks", bits)


def window_embedding_indexes(bits: list[int]) -> dict[str, str]:
    """Index name → CREATE INDEX statement for every HNSW index on chunk_windows.embedding: the
    same graphs as the chunks', on the windows (migration 012), with the same predicate."""
    return _hnsw_indexes("chunk_windows", bits)


def posting_indexes(bits: list[int]) -> dict[str, str]:
    """Index name → CREATE INDEX statement for every per-role index on postings.

    The twins of migration 003's global pair, restricted to the role's postings: the primary
    key's (term, chunk_id) with tf and doc_len (a term's whole list, and the probe of one
    chunk's posting), and the high-impact index (term, impact DESC, chunk_id) of the pruned
    leg. roles_mask and high_impact are not stored: a query whose WHERE implies the index's
    predicate needs neither to read it, so index-only scans still serve it.
    """
    statements = {}
    for bit in bits:
        predicate = role_predicate(str(bit))
        statements[f"postings_{_suffix(bit)}"] = (
            f"CREATE INDEX postings_{_suffix(bit)} ON postings (term, chunk_id) INCLUDE (tf, doc_len) WHERE {predicate}")
        statements[f"postings_high_impact_{_suffix(bit)}"] = (
            f"CREATE INDEX postings_high_impact_{_suffix(bit)} ON postings (term, impact DESC, chunk_id) "
            f"INCLUDE (tf, doc_len) WHERE high_impact AND {predicate}")
    return statements


def create_role_indexes(conn: psycopg.Connection) -> list[str]:
    """Create the per-reader indexes that do not exist yet in this namespace; return their names.

    A reader's indexes are made when it is created (ragcore.access.roles) and stay when it is
    dropped: its bit is cleared from every chunk, so they hold nothing until a new reader gets
    the bit, and then they are that reader's, the predicate being the bit's.

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
    bits = reader_bits(conn)
    wanted = {**posting_indexes(bits),
              **(embedding_indexes(bits) if "chunks" in with_embedding else {}),
              **(window_embedding_indexes(bits) if "chunk_windows" in with_embedding else {})}
    created = []
    for name, statement in wanted.items():
        if name not in existing:
            conn.execute(statement)
            created.append(name)
    return created
