"""The lexical leg's work is the role's alone (issue 21, finding 2): per-role posting indexes.

Scores were already role-scoped; the amount of work was not: the leg read a term's postings
across all roles and filtered them, so a large forbidden document made a role's searches for
its words slower (3.3 → 10.2 ms in the probe). Here a role's retrieval statements are run
under EXPLAIN (ANALYZE, BUFFERS) before and after an ik-only document with thousands of
postings of the probe words is stored: every posting scan of an isg search reads the same rows
and the same index blocks, through isg's own partial indexes, and removes nothing by filter.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from ragcore import store as dbmod
from ragcore.access import create_user
from ragcore.core import ROLES, lexical_tokens
from ragcore.retrieval import RETRIEVAL_SQL, bm25, read_snapshot, statement_params
from ragcore.retrieval.hybrid import ROLE_PREDICATE

NAMESPACE = "test_role_postings"
DIM = 3
PROBES = ["Denetim raporu hangi sürede yazılır?", "İşçi sağlığı denetimi", "rapor"]
PROBE_WORDS = ("denetim", "raporu", "yazılır", "işçi", "sağlığı")


def _vocabulary(rng: random.Random, n: int = 1500) -> list[str]:
    """Made-up words, distinct in their first five letters (the lexical token), in Zipf order."""
    words: dict[str, str] = {}
    while len(words) < n:
        word = "".join(rng.choice("abcdefghijklmnoprstuvyz") for _ in range(7))
        words.setdefault(word[:5], word)
    return list(words.values())


VOCABULARY = _vocabulary(random.Random(2100))
ZIPF = [1 / (rank + 1) for rank in range(len(VOCABULARY))]


def _texts(rng: random.Random, n: int, probe_share: float) -> list[str]:
    """Chunks of Zipf-distributed words; `probe_share` of the words are probe words."""
    out = []
    for _ in range(n):
        length = rng.randint(8, 160)
        common = rng.choices(VOCABULARY, ZIPF, k=length)
        out.append(" ".join(rng.choice(PROBE_WORDS) if rng.random() < probe_share else word for word in common))
    return out


def _store(conn: psycopg.Connection, title: str, roles: list[str], texts: list[str]) -> int:
    doc = conn.execute(
        "INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
        "VALUES (%s, %s, md5(%s) || md5(%s), 1, 1, %s) RETURNING id", (title, f"{title}.pdf", title, title, roles)
    ).fetchone()[0]
    with conn.cursor().copy("COPY chunks (document_id, ordinal, page_start, page_end, text, char_start, char_end, "
                            "lex_length, allowed_roles) FROM STDIN") as copy:
        for ordinal, text in enumerate(texts):
            copy.write_row((doc, ordinal, 1, 1, text, 0, len(text), len(lexical_tokens(text)), roles))
    rows = conn.execute("SELECT id, text FROM chunks WHERE document_id = %s ORDER BY id", (doc,)).fetchall()
    with conn.cursor().copy("COPY postings (term, chunk_id, tf) FROM STDIN") as copy:
        for chunk_id, text in rows:
            for term, tf in Counter(lexical_tokens(text)).items():
                copy.write_row((term, chunk_id, tf))
    return doc


def _vacuum(database: dbmod.Database) -> None:
    """Every page all-visible, statistics fresh: index-only scans then fetch no heap page in
    either state, so the blocks read are the index's alone."""
    with database.pool.connection() as conn:
        conn.autocommit = True
        conn.execute("VACUUM (ANALYZE) chunks")
        conn.execute("VACUUM (ANALYZE) postings")
        conn.autocommit = False


@pytest.fixture(scope="module")
def world(pg_url) -> Iterator[dbmod.Database]:
    """isg's and uretim's documents (isg reads 300 chunks), in a namespace of its own."""
    database = dbmod.Database(pg_url, NAMESPACE)
    dbmod.drop_namespace(database, NAMESPACE)
    database.close()
    database = dbmod.Database(pg_url, NAMESPACE)
    dbmod.migrate(database)
    dbmod.ensure_embedding_space(database, "test-3d", DIM)
    rng = random.Random(21)
    with database.connection() as conn:
        _store(conn, "isg-a", ["isg"], _texts(rng, 200, 0.005))
        _store(conn, "isg-uretim", ["isg", "uretim"], _texts(rng, 100, 0.002))
        _store(conn, "uretim", ["uretim"], _texts(rng, 200, 0.005))
    # A user holding isg and uretim: their set's reader, with indexes of its own (issue 38).
    create_user(database, "isg-uretim", ["isg", "uretim"], "parola-123")
    _vacuum(database)
    yield database
    dbmod.drop_namespace(database, NAMESPACE)
    database.close()


class RecordingConnection:
    """The retrieval's connection, recording every statement it runs (to EXPLAIN them after)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.statements: list[tuple[str, dict]] = []

    def execute(self, query: str, params: dict | None = None) -> psycopg.Cursor:
        self.statements.append((query, dict(params or {})))
        return self.conn.execute(query, params)


def _posting_scans(plan: dict) -> Iterator[dict]:
    if plan.get("Relation Name") == "postings":
        yield plan
    for child in plan.get("Plans", []):
        yield from _posting_scans(child)


def posting_work(database: dbmod.Database, role: str, question: str) -> list[tuple]:
    """Per posting scan of every statement of one retrieval: (node, index, rows read, rows
    removed by filter, heap fetches, index blocks touched), in statement and plan order."""
    with read_snapshot(database) as conn:
        recorder = RecordingConnection(conn)
        params = statement_params(recorder, question, np.array([1.0, 0.0, 0.0], dtype=np.float32), role,
                                  k=5, mode="rrf", weight=0.5)
        recorder.execute(RETRIEVAL_SQL, params)
        work = []
        for query, values in recorder.statements:
            if "postings" not in query:
                continue
            plan = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query, values).fetchone()[0][0]["Plan"]
            for node in _posting_scans(plan):
                loops = node["Actual Loops"]
                work.append((node["Node Type"], node.get("Index Name"), round(node["Actual Rows"] * loops),
                             round(node.get("Rows Removed by Filter", 0) * loops), node.get("Heap Fetches", 0),
                             node["Shared Hit Blocks"] + node["Shared Read Blocks"]))
    return work


@pytest.fixture(params=["exhaustive", "pruned"])
def plan_kind(request, monkeypatch: pytest.MonkeyPatch) -> str:
    """Exhaustive plans for these few postings, or pruning forced: a threshold from one seed term
    and the others' champions (high-impact index), reads in part, probes of single postings."""
    if request.param == "pruned":
        monkeypatch.setattr(bm25, "EXHAUSTIVE_POSTINGS", 0)
        monkeypatch.setattr(bm25, "SEED_POSTINGS", 1)
        monkeypatch.setattr(bm25, "ROUNDS", ((1.0, 1), (0.9, 3)))
    return request.param


def test_a_roles_lexical_work_does_not_change_with_a_forbidden_document(world, plan_kind: str) -> None:
    """3,000 ik-only chunks dense with the probe words (tens of thousands of postings) change
    nothing an isg or uretim search reads: same scans, same rows, same index blocks; every scan
    on the role's own partial index, nothing read and filtered out."""
    database = world
    roles = ("isg", "uretim", "isg+uretim")
    before = {(role, q): posting_work(database, role, q) for role in roles for q in PROBES}
    with database.connection() as conn:
        forbidden = _store(conn, "ik-large", ["ik"], _texts(random.Random(2121), 3000, 0.15))
        added = conn.execute("SELECT count(*) FROM postings p JOIN chunks c ON c.id = p.chunk_id "
                             "WHERE c.document_id = %s AND p.term = 'denet'", (forbidden,)).fetchone()[0]
    assert added > 2000  # the forbidden document really holds thousands of postings of a probe term
    _vacuum(database)
    try:
        after = {(role, q): posting_work(database, role, q) for role in roles for q in PROBES}
    finally:
        with database.connection() as conn:
            conn.execute("DELETE FROM documents WHERE id = %s", (forbidden,))
        _vacuum(database)
    for (role, question), work in before.items():
        assert work, (role, question)  # the probes do read postings
        assert after[(role, question)] == work, (role, question, plan_kind)
        assert all(index in _own_indexes(database, role) for _, index, *_ in work), work
        assert all(removed == 0 and fetches == 0 for *_, removed, fetches, _ in work), work


def _own_indexes(database: dbmod.Database, reader: str) -> set[str]:
    """The names of the reader's two partial posting indexes."""
    with database.connection() as conn:
        return set(dbmod.posting_indexes([dbmod.reader_bit(conn, reader)]))


def test_admin_reads_the_global_postings(world) -> None:
    """Admin reads every posting anyway: no per-reader index serves it (migration 003's do)."""
    work = posting_work(world, "admin", PROBES[0])
    with world.connection() as conn:
        per_reader = dbmod.posting_indexes(dbmod.reader_bits(conn))
    assert work and not any(index in per_reader for _, index, *_ in work), work


def test_the_posting_indexes_carry_the_retrieval_predicate(world) -> None:
    """Every per-reader posting index's WHERE ends with the retrieval's ROLE_PREDICATE, the
    reader's bit in place of the placeholder, character for character (one function builds both)."""
    with world.connection() as conn:
        bits = dbmod.reader_bits(conn)
    assert 1 not in bits and len(bits) == len(ROLES) + 1  # the other roles, denetci, and isg+uretim
    for bit in bits:
        statements = dbmod.posting_indexes([bit])
        predicate = ROLE_PREDICATE.replace("%(role_bit)s", str(bit))
        plain, high = sorted(statements.values(), key=len)
        assert plain.endswith(f" WHERE {predicate}")
        assert high.endswith(f" WHERE high_impact AND {predicate}")


def test_migrate_creates_the_posting_indexes_in_every_namespace(world) -> None:
    with world.connection() as conn:
        names = {r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'postings'")}
        assert set(dbmod.posting_indexes(dbmod.reader_bits(conn))) <= names
