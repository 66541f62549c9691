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


def _first_dev_articles(full: tquad.Corpus, n_questions: int) -> tquad.Corpus:
    """The fewest first dev articles that hold `n_questions` questions, with those questions."""
    n_articles = next(n for n in range(1, len(full.articles) + 1)
                      if sum(q.article < n for q in full.dev_questions) >= n_questions)
    questions = [q for q in full.dev_questions if q.article < n_articles][:n_questions]
    return tquad.Corpus(full.articles[:n_articles], questions, [], 0, 0, 0, full.file_hashes)


@needs_tquad
def test_the_labs_tquad_path_and_the_app_agree_on_the_same_questions(settings, session_db):
    """The lab's production top-5 is the chat's: `retrieve` called as `AnswerService._retrieve`
    calls it (the mode `resolve_mode` picks, the settings' sentence windows), on 50 questions over
    the lab's stored TQuAD corpus; and a weight the tuning passes reaches the app's SQL."""
    from ragcore.retrieval import resolve_mode, retrieve

    corpus = _first_dev_articles(tquad.cached_corpus(str(TQUAD_DIR)), 50)
    questions = corpus.dev_questions
    assert len(questions) == 50
    ws = make_workspace(settings, cache_db=session_db, embedder_factory=lambda spec: HashEmbedder(), corpus=corpus)
    lab, lab_weighted = rv.make_retriever("production"), rv.make_retriever("production-weighted-w0.2")
    for retriever in (lab, lab_weighted):
        retriever.namespace = lambda size: "eval_tquad_agree"
        retriever.keep_namespace = True
    database = None
    try:
        top = lab.rank(ws, 1000, questions, "dev", 5).tolist()
        top_weighted = lab_weighted.rank(ws, 1000, questions, "dev", 5).tolist()
        database = dbmod.open_database(settings, "eval_tquad_agree")
        index = lab.chunk_index(database, ws, 1000)
        embedder = HashEmbedder()

        def app(question: str, **how) -> list[int]:
            found = retrieve(database, embedder, question, "admin", k=5, windows=settings.dense_windows, **how)
            return [index[s.chunk_id] for s in found.sources]

        assert settings.dense_windows and lab.report[1000]["mode"] == resolve_mode(settings, embedder)
        assert top == [app(q.question, mode=resolve_mode(settings, embedder)) for q in questions]
        assert all(len(row) == 5 for row in top)
        assert top_weighted == [app(q.question, mode="weighted", weight=0.2) for q in questions]
        # the weight matters on these questions, so the equality above checks that it was passed
        assert top_weighted != [app(q.question, mode="weighted", weight=0.8) for q in questions]
    finally:
        if database is None:
            database = dbmod.open_database(settings, "eval_tquad_agree")
        dbmod.drop_namespace(database, "eval_tquad_agree")
        database.close()
