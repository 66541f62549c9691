"""The production retriever: a small corpus stored through ragcore.ingest into its own namespace of
the real embedded PostgreSQL, queried through ragcore.retrieval.search, compared with the exact BM25."""

from __future__ import annotations

import numpy as np
import pytest

from eval import retrievers as rv
from eval import tquad
from eval.sweep import make_workspace
from ragcore import db as dbmod
from tests.conftest import TQUAD_DIR
from tests.test_eval_retrievers import HashEmbedder

needs_tquad = pytest.mark.needs_data("tquad")


def _small_corpus(full: tquad.Corpus, n_articles: int = 12) -> tquad.Corpus:
    """The first dev articles with their questions: enough for rankings, small enough for a test."""
    questions = [q for q in full.dev_questions if q.article < n_articles][:40]
    return tquad.Corpus(full.articles[:n_articles], questions, [], 0, 0, 0, full.file_hashes)


@needs_tquad
def test_production_lexical_equals_exact_bm25_of_the_app_query_and_namespace_is_dropped(settings, tmp_path, db):
    corpus = _small_corpus(tquad.cached_corpus(str(TQUAD_DIR)))
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
    corpus = _small_corpus(tquad.cached_corpus(str(TQUAD_DIR)), 6)
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
def test_answer_gate_evidence_matches_the_sql_evidence(settings, tmp_path, session_db):
    from eval.answers import evidence_for
    from ragcore.retrieval import retrieve

    corpus = _small_corpus(tquad.cached_corpus(str(TQUAD_DIR)), 8)
    ws = make_workspace(settings, cache_db=session_db, embedder_factory=lambda spec: HashEmbedder(),
                        corpus=corpus)
    retriever = rv.make_retriever("production-lexical")
    retriever.namespace = lambda size: "eval_tquad_evidence"
    database = retriever._open(ws, 1000)
    try:
        questions = corpus.dev_questions[:15]
        ours = evidence_for(ws, 1000, questions, [[] for _ in questions])
        for q, mine in zip(questions, ours, strict=True):
            sql = retrieve(database, ws.embedder("default"), q.question, "admin", k=5, mode="lexical").evidence
            assert mine.coverage == pytest.approx(sql.coverage, abs=1e-6)
            assert mine.best_bm25 == pytest.approx(sql.best_bm25, rel=1e-6)
            assert mine.best_cosine == pytest.approx(sql.best_cosine, abs=1e-5)
    finally:
        dbmod.drop_namespace(database, "eval_tquad_evidence")
        database.close()
