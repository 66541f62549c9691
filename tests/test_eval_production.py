"""The production retriever: a small corpus stored through ragcore.ingest into its own namespace of
the real embedded PostgreSQL, queried through ragcore.retrieval.hybrid, compared with the exact BM25."""

from __future__ import annotations

import numpy as np
import pytest

from eval import retrievers as rv
from eval import tquad
from eval.sweep import make_workspace
from ragcore import store as dbmod
from tests.conftest import TQUAD_DIR
from tests.lab_support import small_corpus
from tests.test_eval_retrievers import HashEmbedder

needs_tquad = pytest.mark.needs_data("tquad")


@needs_tquad
def test_production_lexical_equals_exact_bm25_of_the_app_query_and_namespace_is_dropped(settings, tmp_path, db):
    corpus = small_corpus(tquad.cached_corpus(str(TQUAD_DIR)))
    ws = make_workspace(settings, cache_db=db, embedder_factory=lambda spec: HashEmbedder(),
                        corpus=corpus)
    retriever = rv.make_retriever("production-lexical")
    retriever.namespace = lambda size: "eval_tquad_test"
    production = retriever.rank(ws, 1000, corpus.dev_questions, "dev", 10)
    exact = rv.BM25Retriever(rv.APP_LEXICAL).rank(ws, 1000, corpus.dev_questions, "dev", 10)
    # SQL BM25 is rank_bm25's formula over prefix-5 tokens, stop words dropped from the question:
    # the same top 5 unless scores tie
    agree = np.mean([list(a[:5]) == list(b[:5]) for a, b in zip(production, exact, strict=True)])
    assert agree >= 0.95
    report = retriever.report[1000]
    assert report["mode"] == "lexical" and report["identical_top5"] == agree
    assert abs(report["gap_recall@5"]) <= 0.05
    with db.connection() as conn:
        gone = conn.execute("SELECT to_regnamespace('eval_tquad_test') IS NULL").fetchone()[0]
    assert gone
    # the public namespace was never touched
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0


@needs_tquad
def test_production_dense_reuses_a_kept_namespace(settings, tmp_path, session_db):
    corpus = small_corpus(tquad.cached_corpus(str(TQUAD_DIR)), 6)
    ws = make_workspace(settings, cache_db=session_db, embedder_factory=lambda spec: HashEmbedder(),
                        corpus=corpus)
    retriever = rv.make_retriever("production-dense")
    retriever.namespace = lambda size: "eval_tquad_keep"
    retriever.keep_namespace = True
    first = retriever.rank(ws, 500, corpus.dev_questions, "dev", 5)
    stored = retriever.report[500]["store_seconds"]
    second = retriever.rank(ws, 500, corpus.dev_questions, "dev", 5)
    np.testing.assert_array_equal(first, second)
    assert retriever.report[500]["top10_overlap"] > 0.8
    database = dbmod.open_database(settings, "eval_tquad_keep")
    try:
        with database.connection() as conn:  # simulate a store interrupted after some articles
            conn.execute("DELETE FROM documents WHERE id = (SELECT max(id) FROM documents)")
        third = retriever.rank(ws, 500, corpus.dev_questions, "dev", 5)
        np.testing.assert_array_equal(first, third)  # the incomplete corpus was rebuilt, not reused
        with database.connection() as conn:
            docs = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
        assert docs == 6 and stored >= 0
    finally:
        dbmod.drop_namespace(database, "eval_tquad_keep")
        database.close()


@needs_tquad
def test_production_lexical_is_an_exact_top_k_of_the_lab_bm25(settings, db):
    """Same path, exact equality: every production lexical ranking is a top-10 of the lab's exact
    BM25 scores (ragcore.bm25 constants, ragcore.retrieval.query_terms) — the same scores in the
    same order, ties aside."""
    corpus = small_corpus(tquad.cached_corpus(str(TQUAD_DIR)))
    ws = make_workspace(settings, cache_db=db, embedder_factory=lambda spec: HashEmbedder(), corpus=corpus)
    retriever = rv.make_retriever("production-lexical")
    retriever.namespace = lambda size: "eval_tquad_exact"
    production = retriever.rank(ws, 1000, corpus.dev_questions, "dev", 10)
    exact = rv.BM25Retriever(rv.APP_LEXICAL).scores(ws, 1000, corpus.dev_questions, "dev")
    for row, scores in zip(production, exact, strict=True):
        found = row[row >= 0]
        best = np.sort(scores[scores > 0])[::-1][:10]
        assert len(found) == len(best)
        np.testing.assert_allclose(scores[found], best, rtol=1e-9, atol=0)
