"""The pgvector < 0.8 path, exercised by a real retrieval.

pgserver bundles pgvector 0.8, so the older server is forced on a `Database` (its recorded
version); `apply_retrieval_settings` then takes the branch an old server needs: no
`hnsw.iterative_scan` (an unknown setting there), `hnsw.ef_search = 200` instead. Without
iterative scan the HNSW index hands over ef_search candidates and the role filter runs on
those, so the test puts the role's only chunks among the farthest from the question: with 200
candidates they are found, with pgvector's default 40 (the control) they are not. The index is
forced (`enable_seqscan = off`) as a corpus too large for a sequential scan would.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np
import pytest

from ragcore import store as dbmod
from ragcore.retrieval import search
from tests.retrieval_support import DocSpec, insert_document

NAMESPACE = "pgvector_old"
QUESTION = "soru"
DIM = 32


class FixedEmbedder:
    """Vectors chosen by the test: one for the question, one per chunk text."""

    kind = "fixed"
    name = model = "fixed-32"
    dim = DIM

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)

    embed_queries = embed_passages = embed


@pytest.fixture()
def corpus(pg_url: str) -> Iterator[tuple[FixedEmbedder, list[str]]]:
    """150 chunks: 145 for ik, and isg's only 5, which are the farthest from the question."""
    rng = np.random.default_rng(7)
    raw = rng.standard_normal((151, DIM))
    unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    query, chunks = unit[0], unit[1:]
    order = np.argsort(chunks @ query)  # least similar first
    isg = {int(i) for i in order[:5]}
    texts = [f"bolum {i}" for i in range(len(chunks))]
    embedder = FixedEmbedder({QUESTION: query} | {t: v for t, v in zip(texts, chunks, strict=True)})

    database = dbmod.Database(pg_url, NAMESPACE, max_size=2)
    dbmod.drop_namespace(database, NAMESPACE)
    database.close()
    database = dbmod.Database(pg_url, NAMESPACE, max_size=2)
    dbmod.migrate(database)
    for role, members in (("ik", [i for i in range(len(texts)) if i not in isg]), ("isg", sorted(isg))):
        insert_document(database, embedder, DocSpec(f"{role}-belgesi", (role,),
                                                     tuple((texts[i], 1, None) for i in members)))
    yield embedder, [texts[i] for i in sorted(isg)]
    dbmod.drop_namespace(database, NAMESPACE)
    database.close()


def _old_pgvector(pg_url: str, seen: list[tuple], *, ef_search: int | None = None) -> dbmod.Database:
    """A database that believes its server has pgvector 0.7.4, with the HNSW index forced.

    `seen` records what the retrieval transaction ran with. `ef_search` replaces the widened
    candidate list (the control: what pgvector < 0.8 does with its default).
    """
    old = dbmod.Database(pg_url, NAMESPACE, max_size=1)
    old.info = dataclasses.replace(old.info, pgvector_version=(0, 7, 4))
    apply = old.apply_retrieval_settings

    def apply_and_record(conn) -> None:
        if ef_search is None:
            apply(conn)
        else:
            conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
        conn.execute("SET LOCAL enable_seqscan = off")
        # iterative_scan is NULL until the vector library is loaded in this backend, "off" after.
        seen.append(conn.execute("SELECT current_setting('hnsw.ef_search', true), "
                                 "coalesce(current_setting('hnsw.iterative_scan', true), 'off')").fetchone())

    old.apply_retrieval_settings = apply_and_record  # type: ignore[method-assign]
    return old


def test_old_pgvector_finds_a_roles_far_chunks_through_the_widened_candidate_list(pg_url, corpus) -> None:
    embedder, isg_texts = corpus
    seen: list[tuple] = []
    old = _old_pgvector(pg_url, seen)
    try:
        assert not old.info.iterative_scan
        hits = search(old, embedder, QUESTION, "isg", k=5, mode="dense")
    finally:
        old.close()
    assert seen == [("200", "off")]  # the < 0.8 branch: no iterative scan, 200 candidates
    assert sorted(h.text for h in hits) == sorted(isg_texts)


def test_the_roles_own_partial_index_finds_them_even_at_the_default_list(pg_url, corpus) -> None:
    """isg's partial HNSW graph holds only isg's chunks: 40 candidates are all isg's."""
    embedder, isg_texts = corpus
    seen: list[tuple] = []
    control = _old_pgvector(pg_url, seen, ef_search=40)
    try:
        hits = search(control, embedder, QUESTION, "isg", k=5, mode="dense")
    finally:
        control.close()
    assert seen == [("40", "off")]
    assert sorted(h.text for h in hits) == sorted(isg_texts)


def test_control_a_shared_graph_without_the_widened_list_hides_them(pg_url, corpus) -> None:
    """What the widened list guards against: with only the shared (admin) graph, HNSW without
    iterative scan at ef_search 40 returns the 40 nearest chunks, all ik, and the role filter
    leaves isg (almost) nothing."""
    embedder, isg_texts = corpus
    with dbmod.Database(pg_url, NAMESPACE, max_size=1) as database, database.connection() as conn:
        conn.execute("DROP INDEX chunks_embedding_hnsw_b1")
    seen: list[tuple] = []
    control = _old_pgvector(pg_url, seen, ef_search=40)
    try:
        hits = search(control, embedder, QUESTION, "isg", k=5, mode="dense")
    finally:
        control.close()
    assert seen == [("40", "off")]
    assert len(hits) < len(isg_texts)
