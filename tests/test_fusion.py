"""How the legs' candidates become one ranking (`ragcore.retrieval.Fusion`): a transitional
article's fused score is weighed down, the single-leg modes are not, and the depth of the pool
is what the statement reads."""

from __future__ import annotations

import pytest

from ragcore.retrieval import FUSION, Fusion, retrieve
from tests.retrieval_support import DocSpec, insert_document, make_test_embedder

TEXT = "İşveren, iş sözleşmesini bildirim süresine uymadan feshederse ihbar tazminatı öder."
QUESTION = "işveren bildirim süresine uymadan feshederse ne öder"
# Both chunks hold the same text, so both legs score them alike; the transitional one is stored
# first, so that without the weight it wins the tie (lower lexical rank, lower id).
LAW = DocSpec("is-kanunu", ("ik",), (
    (TEXT, 50, "Geçici Madde 10"),
    (TEXT, 12, "Madde 17"),
))


UNWEIGHTED = Fusion(depth=FUSION.depth, transitional_weight=1.0)


@pytest.fixture()
def law(db):
    embedder = make_test_embedder()
    insert_document(db, embedder, LAW)
    return db, embedder


def _scores(law, mode: str, fusion: Fusion = FUSION) -> list[tuple[str, float]]:
    """(article, score) of both chunks, in rank order."""
    db, embedder = law
    result = retrieve(db, embedder, QUESTION, "ik", k=2, mode=mode, windows=True, fusion=fusion)
    return [(s.article, s.score) for s in result.sources]


@pytest.mark.parametrize("mode", ["weighted", "rrf"])
def test_a_transitional_article_is_weighed_down_in_the_fused_modes(law, mode: str) -> None:
    unweighted = _scores(law, mode, UNWEIGHTED)
    weighted = _scores(law, mode)
    # the control: without the weight the tie goes to the transitional article
    assert [article for article, _ in unweighted] == ["Geçici Madde 10", "Madde 17"]
    assert [article for article, _ in weighted] == ["Madde 17", "Geçici Madde 10"]
    before, after = dict(unweighted), dict(weighted)
    assert after["Geçici Madde 10"] == pytest.approx(FUSION.transitional_weight * before["Geçici Madde 10"], rel=1e-9)
    assert after["Madde 17"] == pytest.approx(before["Madde 17"], rel=1e-9)


@pytest.mark.parametrize("mode", ["lexical", "dense"])
def test_single_leg_modes_keep_their_own_scores(law, mode: str) -> None:
    assert _scores(law, mode) == _scores(law, mode, UNWEIGHTED)
    assert [article for article, _ in _scores(law, mode)] == ["Geçici Madde 10", "Madde 17"]


def test_the_pool_is_never_shallower_than_four_times_k(law) -> None:
    db, embedder = law
    shallow = Fusion(depth=1, transitional_weight=FUSION.transitional_weight)
    result = retrieve(db, embedder, QUESTION, "ik", k=2, mode="weighted", windows=True, fusion=shallow)
    assert [s.article for s in result.sources] == ["Madde 17", "Geçici Madde 10"]
