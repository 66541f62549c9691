"""Collections (issue 39.2): the admin's groups of documents, and questions restricted to one
collection or one document — the restriction inside the retrieval SQL of every leg, beside the
role predicate, so that it narrows and never widens what a role reads.

The corpus: a forklift instruction (collection "Talimatlar", isg and uretim) that answers the
question weakly, a forklift training document (isg only, in no collection) that answers it much
better, and an ik-only document in "Talimatlar" that matches as well, which isg must never see.
"""

from __future__ import annotations

import re
import uuid

import numpy as np
import psycopg
import pytest

from ragcore import store as dbmod
from ragcore.access import create_user, set_roles
from ragcore.documents import (
    CollectionError,
    CollectionNotFound,
    Scope,
    checked_scope,
    collection_document_ids,
    create_collection,
    delete_collection,
    document_collection_ids,
    find_collection,
    list_collections,
    set_collection_members,
    set_document_collections,
    update_collection,
)
from ragcore.retrieval import (
    MODES,
    RETRIEVAL_WINDOWS_SQL,
    THRESHOLD_SQL,
    bm25,
    read_snapshot,
    retrieval_sql,
    retrieve,
    statement_params,
)
from ragcore.retrieval.hybrid import scope_chunks
from tests.retrieval_support import DocSpec, bit_of, clean, hnsw_index, insert_document, make_test_embedder

QUESTION = "Forklift operatörü hangi eğitimi almalıdır?"
INSTRUCTION = DocSpec("forklift-talimati", ("isg", "uretim"), (
    ("Forklift haftalık bakımı vardiya sonunda yapılır ve kayıt tutulur.", 1, "Madde 1"),
    ("Yük taşırken çatal yerden yirmi santim yukarıda tutulur.", 2, "Madde 2"),
))
TRAINING = DocSpec("forklift-egitimi", ("isg",), (
    ("Forklift operatörü forklift operatörlüğü eğitimi almalıdır. Forklift operatörü eğitimi her yıl yenilenir. "
     "Eğitim kayıtları saklanır.", 1, "Madde 1"),
    ("Forklift operatörü eğitimi almadan forklift kullanamaz. Operatör eğitimi sertifikayla belgelenir.",
     2, "Madde 2"),
))
IK_ONLY = DocSpec("ik-forklift-ucretleri", ("ik",), (
    ("Forklift operatörü eğitimi alan işçiye ek ücret ödenir; forklift operatörü primi aylıktır.", 1, None),
))


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


@pytest.fixture(scope="module")
def world(session_db: dbmod.Database, embedder):
    clean(session_db)
    ids = {spec.title: insert_document(session_db, embedder, spec) for spec in (INSTRUCTION, TRAINING, IK_ONLY)}
    talimatlar = create_collection(session_db, "Talimatlar", "İş talimatları", created_by="admin")
    set_collection_members(session_db, talimatlar.public_id, [ids["forklift-talimati"], ids["ik-forklift-ucretleri"]])
    ik_only = create_collection(session_db, "İK belgeleri")
    set_collection_members(session_db, ik_only.public_id, [ids["ik-forklift-ucretleri"]])
    with session_db.connection() as conn:
        chunk_doc = dict(conn.execute("SELECT id, document_id FROM chunks").fetchall())
        public = dict(conn.execute("SELECT id, public_id::text FROM documents").fetchall())
        windowed = conn.execute("SELECT count(DISTINCT w.chunk_id) FROM chunk_windows w JOIN chunks c "
                                "ON c.id = w.chunk_id WHERE c.document_id = %s", (ids["forklift-egitimi"],)).fetchone()[0]
    assert windowed == 2  # the out-of-scope document's windows are there for the window leg to find
    return session_db, ids, chunk_doc, public, talimatlar, ik_only


def _documents(result, chunk_doc) -> set[int]:
    return {chunk_doc[s.chunk_id] for s in result.sources}


@pytest.mark.parametrize("windows", [False, True])
@pytest.mark.parametrize("mode", MODES)
def test_a_question_restricted_to_a_collection_never_gets_another_documents_chunks(world, embedder, mode: str,
                                                                                   windows: bool) -> None:
    database, ids, chunk_doc, _, talimatlar, _ = world
    everything = retrieve(database, embedder, QUESTION, "isg", k=10, mode=mode, windows=windows)
    # The precondition that lets the check fail: unrestricted, the training document ranks first.
    assert chunk_doc[everything.sources[0].chunk_id] == ids["forklift-egitimi"]
    restricted = retrieve(database, embedder, QUESTION, "isg", k=10, mode=mode, windows=windows,
                          scope=Scope(collection=talimatlar.public_id))
    assert restricted.sources and _documents(restricted, chunk_doc) == {ids["forklift-talimati"]}
    assert restricted.evidence.permitted_hits <= 2 and restricted.extra["scope"]["chunks"] == 2


@pytest.mark.parametrize("mode", MODES)
def test_a_question_restricted_to_one_document(world, embedder, mode: str) -> None:
    database, ids, chunk_doc, public, _, _ = world
    result = retrieve(database, embedder, QUESTION, "uretim", k=10, mode=mode,
                      scope=Scope(document=public[ids["forklift-talimati"]]))
    assert result.sources and _documents(result, chunk_doc) == {ids["forklift-talimati"]}


def test_the_restriction_is_in_the_statement_itself(world, embedder) -> None:
    """RETRIEVAL_SQL run directly with the scope's chunk ids (no Python filtering after it):
    every row is a scope chunk, though the training document's chunks rank higher."""
    database, ids, chunk_doc, public, _, _ = world
    qvec = embedder.embed_queries([QUESTION])[0]
    with read_snapshot(database) as conn:
        scope = scope_chunks(conn, Scope(document=public[ids["forklift-talimati"]]), "isg")
        assert sorted(chunk_doc[c] for c in scope) == [ids["forklift-talimati"]] * 2
        params = statement_params(conn, QUESTION, qvec, "isg", k=10, mode="rrf", weight=0.5, scope_chunks=scope)
        rows = conn.execute(RETRIEVAL_WINDOWS_SQL, params).fetchall()
    assert {chunk_doc[r[0]] for r in rows} == {ids["forklift-talimati"]}


def test_a_restriction_keeps_the_roles_bm25_statistics(world, embedder) -> None:
    """A filter, not a new corpus: a chunk's BM25 score is the same float in and out of the scope."""
    database, ids, chunk_doc, _, talimatlar, _ = world
    everything = retrieve(database, embedder, QUESTION, "isg", k=10, mode="lexical")
    restricted = retrieve(database, embedder, QUESTION, "isg", k=10, mode="lexical",
                          scope=Scope(collection=talimatlar.public_id))
    scores = {h.source.chunk_id: h.lexical_score for h in everything.hits}
    assert restricted.hits and all(h.lexical_score == scores[h.source.chunk_id] for h in restricted.hits)


def test_the_pruned_lexical_leg_is_restricted_too(world, embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pruning forced (threshold, high-impact reads, single-posting probes): the same answer."""
    monkeypatch.setattr(bm25, "EXHAUSTIVE_POSTINGS", 0)
    monkeypatch.setattr(bm25, "SEED_POSTINGS", 1)
    monkeypatch.setattr(bm25, "ROUNDS", ((1.0, 1), (0.9, 3)))
    database, ids, chunk_doc, _, talimatlar, _ = world
    result = retrieve(database, embedder, QUESTION, "admin", k=1, mode="lexical",
                      scope=Scope(collection=talimatlar.public_id))
    assert _documents(result, chunk_doc) <= {ids["forklift-talimati"], ids["ik-forklift-ucretleri"]}
    assert result.sources


@pytest.mark.parametrize("mode", MODES)
def test_a_restriction_never_widens_what_a_role_reads(world, embedder, mode: str) -> None:
    """isg restricted to the ik-only document, or to a collection holding only it, finds exactly
    what a made-up id finds: nothing; "Talimatlar" gives isg its own document, never ik's."""
    database, ids, chunk_doc, public, talimatlar, ik_only = world
    for scope in (Scope(document=public[ids["ik-forklift-ucretleri"]]), Scope(collection=ik_only.public_id),
                  Scope(document=str(uuid.uuid4())), Scope(collection=str(uuid.uuid4())), Scope(document="17")):
        result = retrieve(database, embedder, QUESTION, "isg", k=10, mode=mode, windows=True, scope=scope)
        assert result.hits == [] and result.evidence.permitted_hits == 0, scope
        assert result.evidence.best_cosine is None and result.evidence.best_bm25 is None
    ik = retrieve(database, embedder, QUESTION, "ik", k=10, mode=mode, scope=Scope(collection=talimatlar.public_id))
    assert _documents(ik, chunk_doc) == {ids["ik-forklift-ucretleri"]}
    isg = retrieve(database, embedder, QUESTION, "isg", k=10, mode=mode, scope=Scope(collection=talimatlar.public_id))
    assert ids["ik-forklift-ucretleri"] not in _documents(isg, chunk_doc)


def _plan_nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _plan_nodes(child)


class RecordingConnection:
    """The retrieval's connection, recording every statement it runs (to EXPLAIN them after)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.statements: list[tuple[str, dict]] = []

    def execute(self, query: str, params: dict | None = None) -> psycopg.Cursor:
        self.statements.append((query, dict(params or {})))
        return self.conn.execute(query, params)


@pytest.mark.parametrize("role", ["isg", "uretim"])
def test_a_restricted_question_reads_the_roles_own_indexes(world, embedder, role: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Under EXPLAIN, every posting scan of a restricted retrieval (pruned plan forced, so every
    lexical statement runs) is on the role's own partial index, with the restriction applied in
    the scan (a single-posting probe checks its scoped chunk instead); no scan of chunks, windows
    or postings is sequential. For a scope this small the
    dense leg reads the scope's chunks by key and ranks them exactly (no graph needed); it never
    touches the global graph, which holds chunks the role cannot read."""
    monkeypatch.setattr(bm25, "EXHAUSTIVE_POSTINGS", 0)
    monkeypatch.setattr(bm25, "SEED_POSTINGS", 1)
    database, _, _, _, talimatlar, _ = world
    qvec = np.asarray(embedder.embed_queries([QUESTION])[0], dtype=np.float32)
    with read_snapshot(database) as conn:
        conn.execute("SET LOCAL enable_seqscan = off")
        scope = scope_chunks(conn, Scope(collection=talimatlar.public_id), role)
        recorder = RecordingConnection(conn)
        params = statement_params(recorder, QUESTION, qvec, role, k=1, mode="rrf", weight=0.5, scope_chunks=scope)
        recorder.execute(retrieval_sql(True), params)
        posting_scans, indexes = [], set()
        for query, values in recorder.statements:
            plan = conn.execute("EXPLAIN (FORMAT JSON) " + query, values).fetchone()[0][0]["Plan"]
            for node in _plan_nodes(plan):
                relation = node.get("Relation Name")
                indexes.add(node.get("Index Name"))
                if relation in ("postings", "chunks", "chunk_windows"):
                    assert node["Node Type"] != "Seq Scan", (relation, query[:80])
                if relation == "postings":  # a list read with the scope in it, or a probe of one scoped chunk
                    cond = str(node.get("Index Cond", "")) + str(node.get("Filter", ""))
                    posting_scans.append((node.get("Index Name"),
                                          "chunk_id = ANY" in cond or re.search(r"chunk_id = \w+\.\w+", cond)))
    own_postings = set(dbmod.posting_indexes([bit_of(database, role)]))  # named by the reader's bit (021)
    assert len(posting_scans) >= 4
    assert {name for name, _ in posting_scans} <= own_postings, posting_scans
    assert all(restricted for _, restricted in posting_scans), posting_scans
    allowed = {None, "chunks_pkey", "chunk_windows_chunk_id_position_key", "documents_pkey", *own_postings,
               hnsw_index(database, role), hnsw_index(database, role, "chunk_windows")}
    read = {name for name in indexes if name and name.startswith(("chunk", "postings"))}
    assert read <= allowed, read - allowed


def test_a_user_with_several_roles_asks_within_what_any_of_them_reads(world, embedder) -> None:
    """Roles as data (021): the scope is checked with every role the user holds and resolved on
    their reader's bit (isg+ik), so the ik-only collection is theirs to ask within — and still
    never more than the collection holds; isg alone is told the same collection does not exist."""
    database, ids, chunk_doc, _, talimatlar, ik_only = world
    user = create_user(database, "iki-rollu", ["isg", "ik"], "Parola-12345-uzun")
    try:
        assert set(user.roles) == {"isg", "ik"}
        scope = checked_scope(database, user.roles, collection=ik_only.public_id)
        both = retrieve(database, embedder, QUESTION, user.reader, k=10, mode="rrf", scope=scope)
        assert _documents(both, chunk_doc) == {ids["ik-forklift-ucretleri"]}
        wide = retrieve(database, embedder, QUESTION, user.reader, k=10, mode="rrf",
                        scope=Scope(collection=talimatlar.public_id))
        assert _documents(wide, chunk_doc) == {ids["forklift-talimati"], ids["ik-forklift-ucretleri"]}
        with pytest.raises(CollectionNotFound):
            checked_scope(database, ("isg",), collection=ik_only.public_id)
    finally:
        set_roles(database, "iki-rollu", ["isg"])  # the set's reader is dropped with its last holder


# ----------------------------------------------------------------------------- the collections


def test_listing_shows_only_readable_documents_and_counts(world) -> None:
    database, ids, _, _, talimatlar, ik_only = world
    assert [(c.name, c.documents) for c in list_collections(database, ("admin",))] == [
        ("İK belgeleri", 1), ("Talimatlar", 2)]
    assert [(c.name, c.documents) for c in list_collections(database, ("isg",))] == [("Talimatlar", 1)]
    assert [(c.name, c.documents) for c in list_collections(database, ("ik",))] == [
        ("İK belgeleri", 1), ("Talimatlar", 1)]
    assert list_collections(database, ("personel",)) == []
    assert find_collection(database, ik_only.public_id, ("isg",)) is None  # the same as a missing one
    assert find_collection(database, ik_only.public_id, ("admin",)) is not None
    assert collection_document_ids(database, talimatlar.public_id, ("isg",)) == [ids["forklift-talimati"]]
    assert sorted(collection_document_ids(database, talimatlar.public_id, ("admin",))) == sorted(
        [ids["forklift-talimati"], ids["ik-forklift-ucretleri"]])


def test_names_are_checked_with_turkish_messages(db) -> None:
    with pytest.raises(CollectionError, match="en fazla 60 karakter"):
        create_collection(db, "T" * 61)
    with pytest.raises(CollectionError, match="boş olamaz"):
        create_collection(db, "   ")
    with pytest.raises(CollectionError, match="Açıklama en fazla 300"):
        create_collection(db, "Kanunlar", "a" * 301)
    made = create_collection(db, "  Kanunlar   ve  Yönetmelikler ", "")
    assert made.name == "Kanunlar ve Yönetmelikler" and len(create_collection(db, "K" * 60).name) == 60
    with pytest.raises(CollectionError, match="zaten var"):
        create_collection(db, "kanunlar VE yönetmelikler")
    with pytest.raises(CollectionError, match="zaten var"):
        update_collection(db, made.public_id, "K" * 60)
    renamed = update_collection(db, made.public_id, "Mevzuat", "Kanunlar")
    assert (renamed.name, renamed.description) == ("Mevzuat", "Kanunlar")
    with pytest.raises(CollectionNotFound):
        update_collection(db, str(uuid.uuid4()), "Yeni")
    with pytest.raises(CollectionError, match="ikisiyle birden"):
        Scope(collection=made.public_id, document=made.public_id)


def test_deleting_a_document_or_a_collection_cascades_cleanly(db, embedder) -> None:
    first = insert_document(db, embedder, INSTRUCTION)
    second = insert_document(db, embedder, TRAINING)
    a, b = create_collection(db, "A"), create_collection(db, "B")
    set_collection_members(db, a.public_id, [first, second])
    set_document_collections(db, first, [a.public_id, b.public_id])
    assert document_collection_ids(db, first) == [a.public_id, b.public_id]
    with db.connection() as conn:
        conn.execute("DELETE FROM documents WHERE id = %s", (first,))
    assert collection_document_ids(db, a.public_id, ("admin",)) == [second]
    assert find_collection(db, b.public_id, ("admin",)).documents == 0  # the collection stays, empty
    delete_collection(db, a.public_id)
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM collection_documents").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM documents WHERE id = %s", (second,)).fetchone()[0] == 1
    with pytest.raises(CollectionNotFound):
        delete_collection(db, a.public_id)


def test_the_pruned_lexical_leg_plans_within_the_scope(db, embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pruning's threshold comes from the scope's own chunks (a threshold from the better-matching
    chunks outside would only be undone by the exhaustive fallback): the threshold statement
    scores the scope's six chunks, not the ten outside, and the answer is the exhaustive one."""
    scope_doc = insert_document(db, embedder, DocSpec("talimat", ("isg",), tuple(
        (f"Forklift bakımı {n}. gün yapılır ve kayıt tutulur.", n, None) for n in range(1, 7))))
    insert_document(db, embedder, DocSpec("egitim", ("isg",), tuple(
        (f"Forklift bakımı ve forklift bakım eğitimi: forklift bakımı {n}.", n, None) for n in range(1, 11))))
    question = "forklift bakımı"
    qvec = np.asarray(embedder.embed_queries([question])[0], dtype=np.float32)
    with read_snapshot(db) as conn:
        public = conn.execute("SELECT public_id::text FROM documents WHERE id = %s", (scope_doc,)).fetchone()[0]
        scope = scope_chunks(conn, Scope(document=public), "isg")
        exhaustive = statement_params(conn, question, qvec, "isg", k=1, mode="lexical", weight=0.5,
                                      scope_chunks=scope)["lexical"]
        monkeypatch.setattr(bm25, "EXHAUSTIVE_POSTINGS", 0)
        monkeypatch.setattr(bm25, "SEED_POSTINGS", 1)
        recorder = RecordingConnection(conn)
        pruned = statement_params(recorder, question, qvec, "isg", k=1, mode="lexical", weight=0.5,
                                  scope_chunks=scope)["lexical"]
        thresholds = [conn.execute(q, v).fetchall() for q, v in recorder.statements if q == THRESHOLD_SQL]
    assert exhaustive.plan.exhaustive and len(thresholds) == 1
    assert len(thresholds[0]) == 6
    assert (pruned.ids, pruned.scores) == (exhaustive.ids, exhaustive.scores)

