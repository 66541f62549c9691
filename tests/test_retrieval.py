"""Retrieval legs against a real PostgreSQL: BM25 equals rank_bm25 over the role's own chunks,
dense equals numpy cosine, fusion equals its definition, and the role predicate sits inside
every query."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ragcore import store as dbmod
from ragcore.core import Settings, lexical_tokens
from ragcore.documents import lexical_texts
from ragcore.retrieval import (
    MODES,
    RETRIEVAL_SQL,
    RRF_K,
    RetrievalError,
    lexical_query,
    query_terms,
    read_snapshot,
    resolve_mode,
    retrieve,
    search,
    statement_params,
)
from tests.conftest import LAW_6331, require_data
from tests.retrieval_support import DocSpec, clean, ingest_law, insert_document, make_test_embedder

# Small Turkish corpus: "işveren" is in more than half of the chunks (negative idf, so
# rank_bm25's epsilon floor matters — for admin and, in its four chunks, for isg), "ve" is a
# stop word (dropped from queries), "İşveren"/"IŞIK" exercise Turkish case folding.
DOCS = [
    DocSpec("isg-el-kitabi", ("isg",), (
        ("İşveren risk değerlendirmesi yapmak ve yaptırmakla yükümlüdür ve işveren kayıt tutar.", 1, "Madde 10"),
        ("İşveren acil durum planlarını hazırlar ve tatbikat yapar.", 2, "Madde 11"),
        ("Çalışanlar ciddi ve yakın tehlike karşısında çalışmaktan kaçınabilir ve işveren bilgilendirilir.", 3, None),
        ("IŞIK düzeyi ölçümleri ve gürültü ölçümleri yılda bir yapılır ve işveren saklar.", 4, None),
    )),
    DocSpec("ik-yonetmeligi", ("ik", "personel"), (
        ("Yıllık ücretli izin süresi hizmet süresine göre belirlenir ve işveren izin defteri tutar.", 1, "Madde 53"),
        ("Fazla çalışma ücreti normal ücretin yüzde elli fazlasıdır ve işveren öder.", 2, "Madde 41"),
        ("Deneme süresi en çok iki ay olabilir ve toplu sözleşmeyle dört aya uzatılabilir.", 3, None),
    )),
    DocSpec("uretim-talimati", ("uretim",), (
        ("Pres makinesinde çalışırken koruyucu eldiven ve gözlük takılır ve işveren denetler.", 1, None),
        ("Vardiya değişiminde makine temizliği yapılır ve kayıt altına alınır.", 2, None),
        ("Risk değerlendirmesi üretim hattında her yıl yenilenir ve işveren onaylar.", 3, None),
    )),
]
QUERIES = [
    "İşveren risk değerlendirmesi yapmakla yükümlü müdür?",
    "yıllık izin kaç gün",
    "IŞIK ölçümü ne zaman yapılır",
    "ve ve işveren",
    "deneme süresi",
    "makine temizliği vardiya",
]


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


@pytest.fixture(scope="module")
def corpus(session_db: dbmod.Database, embedder):
    clean(session_db)
    for spec in DOCS:
        insert_document(session_db, embedder, spec)
    with session_db.connection() as conn:
        rows = conn.execute("SELECT id, text, allowed_roles, embedding FROM chunks ORDER BY id").fetchall()
    return session_db, rows


def _permitted(role: str, roles: list[str]) -> bool:
    return role == "admin" or role in roles


def _role_bm25(rows, role: str) -> tuple[BM25Okapi, list[int]]:
    """rank_bm25 over the chunks the role may read only: its idf, avgdl and N are the role's."""
    mine = [(cid, text) for cid, text, roles, *_ in rows if _permitted(role, roles)]
    return BM25Okapi([lexical_tokens(text) for _, text in mine]), [cid for cid, _ in mine]


def _app_query(database, query: str, role: str) -> list[str]:
    """The lexical query the app searches for (ragcore.retrieval.query: stop words dropped,
    respelled, expanded; tests/test_query.py tests it): BM25 here is checked over it."""
    with read_snapshot(database) as conn:
        return lexical_query(conn, query, role).terms


def _expected_ranking(database, rows, role: str, query: str) -> list[tuple[float, int]]:
    bm25, ids = _role_bm25(rows, role)
    scores = bm25.get_scores(_app_query(database, query, role))
    return sorted(((float(s), cid) for cid, s in zip(ids, scores, strict=True) if s > 0),
                  key=lambda pair: (-pair[0], pair[1]))


@pytest.mark.parametrize("role", ["admin", "isg", "ik", "personel", "uretim"])
@pytest.mark.parametrize("query", QUERIES)
def test_lexical_leg_equals_rank_bm25_over_the_roles_chunks(corpus, embedder, query: str, role: str) -> None:
    database, rows = corpus
    want = _expected_ranking(database, rows, role, query)
    got = retrieve(database, embedder, query, role, k=len(rows), mode="lexical").hits
    got = [(h.lexical_score, h.source.chunk_id) for h in got if h.lexical_score > 0]
    assert [cid for _, cid in got] == [cid for _, cid in want]
    assert np.allclose([s for s, _ in got], [s for s, _ in want], rtol=1e-12, atol=0)


def test_role_statistics_differ_from_global_ones(corpus, embedder) -> None:
    """The same chunk scores differently for isg and admin: N, avgdl and df are the role's."""
    database, _ = corpus
    query = QUERIES[0]
    isg = {h.source.chunk_id: h.lexical_score for h in retrieve(database, embedder, query, "isg", k=5, mode="lexical").hits}
    admin = {h.source.chunk_id: h.lexical_score for h in retrieve(database, embedder, query, "admin", k=10, mode="lexical").hits}
    shared = set(isg) & set(admin)
    assert shared and all(isg[c] != admin[c] for c in shared)


@pytest.mark.parametrize("role", ["admin", "isg"])
def test_negative_idf_uses_epsilon_times_the_roles_mean_idf(corpus, embedder, role: str) -> None:
    """'işveren' is in 8 of 10 chunks and in all 4 of isg's: its idf is negative and must become
    0.25 × the mean idf of the role's vocabulary, as rank_bm25 over the role's chunks has it."""
    database, rows = corpus
    bm25, ids = _role_bm25(rows, role)
    assert bm25.idf["işver"] == pytest.approx(0.25 * bm25.average_idf)
    got = retrieve(database, embedder, "işveren", role, k=len(rows), mode="lexical").hits
    expected = dict(zip(ids, bm25.get_scores(["işver"]), strict=True))
    assert {h.source.chunk_id for h in got} == {cid for cid, s in expected.items() if s > 0}
    for hit in got:
        assert hit.lexical_score == pytest.approx(expected[hit.source.chunk_id], rel=1e-12)


def test_stop_words_are_not_query_terms(corpus, embedder) -> None:
    database, _ = corpus
    assert query_terms("ve bir bu İşveren ile") == ["işver"]
    assert retrieve(database, embedder, "ve ve bu", "admin", k=5, mode="lexical").hits == []


def test_turkish_case_folding_happens_in_python(corpus, embedder) -> None:
    database, _ = corpus
    upper = retrieve(database, embedder, "IŞIK DÜZEYİ", "isg", k=3, mode="lexical").hits
    lower = retrieve(database, embedder, "ışık düzeyi", "isg", k=3, mode="lexical").hits
    assert upper and [h.source.chunk_id for h in upper] == [h.source.chunk_id for h in lower]
    assert "IŞIK" in upper[0].source.text


@pytest.mark.parametrize("role", ["admin", "isg", "personel"])
def test_dense_leg_equals_exact_cosine(corpus, embedder, role: str) -> None:
    database, rows = corpus
    query = QUERIES[0]
    qvec = embedder.embed_queries([query])[0]
    want = sorted(
        ((float(np.asarray(vec.to_numpy() if hasattr(vec, "to_numpy") else vec) @ qvec), cid) for cid, _, roles, vec in rows if _permitted(role, roles)),
        key=lambda pair: -pair[0],
    )
    got = retrieve(database, embedder, query, role, k=len(rows), mode="dense").hits
    assert [h.source.chunk_id for h in got] == [cid for _, cid in want]
    assert np.allclose([h.dense_score for h in got], [s for s, _ in want], atol=1e-5)


def _leg_ranks(database, embedder, query: str, role: str, n: int) -> tuple[dict, dict]:
    dense = retrieve(database, embedder, query, role, k=n, mode="dense").hits
    lexical = retrieve(database, embedder, query, role, k=n, mode="lexical").hits
    return ({h.source.chunk_id: r for r, h in enumerate(dense, 1)},
            {h.source.chunk_id: r for r, h in enumerate(lexical, 1)})


@pytest.mark.parametrize("query", QUERIES[:3])
def test_rrf_fusion_matches_its_definition(corpus, embedder, query: str) -> None:
    database, rows = corpus
    dense, lexical = _leg_ranks(database, embedder, query, "admin", len(rows))
    expected = {cid: 1 / (RRF_K + dense[cid]) + (1 / (RRF_K + lexical[cid]) if cid in lexical else 0) for cid in dense}
    got = retrieve(database, embedder, query, "admin", k=len(rows), mode="rrf").hits
    assert {h.source.chunk_id for h in got} == set(expected)
    for hit in got:
        assert hit.source.score == pytest.approx(expected[hit.source.chunk_id], abs=1e-9)
    scores = [h.source.score for h in got]
    assert scores == sorted(scores, reverse=True)


def test_weighted_fusion_uses_min_max_normalised_scores(corpus, embedder) -> None:
    database, rows = corpus
    query = QUERIES[0]
    dense = {h.source.chunk_id: h.dense_score for h in
             retrieve(database, embedder, query, "admin", k=len(rows), mode="dense").hits}
    lexical = {h.source.chunk_id: h.lexical_score for h in
               retrieve(database, embedder, query, "admin", k=len(rows), mode="lexical").hits}

    def norm(scores: dict) -> dict:
        lo, hi = min(scores.values()), max(scores.values())
        return {k: (v - lo) / (hi - lo) for k, v in scores.items()}

    dn, ln = norm(dense), norm(lexical)
    for weight in (0.0, 0.3, 1.0):
        got = retrieve(database, embedder, query, "admin", k=len(rows), mode="weighted", weight=weight).hits
        for hit in got:
            cid = hit.source.chunk_id
            assert hit.source.score == pytest.approx(weight * dn.get(cid, 0) + (1 - weight) * ln.get(cid, 0), abs=1e-9)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("role", ["isg", "ik", "personel", "uretim", "admin"])
def test_every_mode_returns_only_permitted_chunks(corpus, embedder, mode: str, role: str) -> None:
    database, rows = corpus
    allowed = {cid for cid, _, roles, _ in rows if _permitted(role, roles)}
    for query in QUERIES:
        result = retrieve(database, embedder, query, role, k=5, mode=mode)
        assert {s.chunk_id for s in result.sources} <= allowed
        assert [s.rank for s in result.sources] == list(range(1, len(result.sources) + 1))


def test_role_without_documents_gets_nothing(session_db, embedder) -> None:
    clean(session_db)
    insert_document(session_db, embedder, DOCS[0])
    result = retrieve(session_db, embedder, QUERIES[0], "ik", k=5, mode="rrf")
    assert result.hits == [] and result.evidence.permitted_hits == 0 and result.evidence.best_cosine is None


@pytest.mark.parametrize(("role", "index"), [("isg", "chunks_embedding_hnsw_b1"), ("uretim", "chunks_embedding_hnsw_b3"),
                                           ("admin", "chunks_embedding_hnsw")])
def test_dense_query_uses_the_roles_hnsw_index(corpus, embedder, role: str, index: str) -> None:
    """With the parameterised statement (a custom plan for the role's bit), the dense leg scans
    the role's partial HNSW index — admin the global one."""
    database, _ = corpus
    with read_snapshot(database) as conn:
        params = statement_params(conn, QUERIES[0], embedder.embed_queries([QUERIES[0]])[0], role, k=5, mode="rrf",
                                  weight=0.5)
        conn.execute("SET LOCAL enable_seqscan = off")
        for _ in range(7):  # past psycopg's prepare threshold: the prepared statement too
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + RETRIEVAL_SQL, params))
            assert f"Index Scan using {index} on chunks" in plan


def test_bad_role_and_mode_are_refused(corpus, embedder) -> None:
    database, _ = corpus
    with pytest.raises(RetrievalError, match="rol"):
        retrieve(database, embedder, "soru", "patron", k=5, mode="rrf")
    with pytest.raises(RetrievalError, match="mod"):
        retrieve(database, embedder, "soru", "isg", k=5, mode="magic")
    with pytest.raises(RetrievalError):
        resolve_mode(Settings(), embedder, "magic")


def test_resolve_mode_defaults_per_backend(embedder) -> None:
    class Ollama:
        kind = "ollama"

    assert resolve_mode(Settings(retrieval_mode="auto"), Ollama()) == "rrf"
    assert resolve_mode(Settings(retrieval_mode="auto"), embedder) != "rrf"  # measured: plain RRF loses with USE
    assert resolve_mode(Settings(retrieval_mode="dense"), embedder) == "dense"
    assert resolve_mode(Settings(retrieval_mode="dense"), embedder, "lexical") == "lexical"


def test_empty_question_tokens_still_searches_dense(corpus, embedder) -> None:
    database, _ = corpus
    assert retrieve(database, embedder, "?!", "admin", k=3, mode="lexical").hits == []
    assert len(retrieve(database, embedder, "?!", "admin", k=3, mode="dense").hits) == 3


# ----------------------------------------------------------------------------- the real law


@pytest.fixture(scope="module")
def law(session_db, embedder, tmp_path_factory, pg_url):
    require_data("laws")
    clean(session_db)
    settings = Settings(database_url=pg_url, data_dir=tmp_path_factory.mktemp("law") / "data", embed_backend="use")
    ingest_law(session_db, settings, embedder, Path(LAW_6331), ["isg", "personel"])
    return session_db


@pytest.mark.parametrize("mode", MODES)
def test_law_6331_risk_question_finds_article_10_page_7(law, embedder, mode: str) -> None:
    """Dense alone (USE) ranks the definitions article (Madde 3) first; every mode has Article 10
    in the top 5, and every mode that uses BM25 puts it first."""
    sources = search(law, embedder, "İşveren risk değerlendirmesi yapmakla yükümlü müdür?", "isg", k=5, mode=mode)
    found = [s for s in sources if s.article == "Madde 10"]
    assert found and found[0].page_start == 7 and found[0].page_label == "s. 7"
    if mode != "dense":
        assert sources[0] is found[0]


@pytest.mark.parametrize("role", ["admin", "isg"])
def test_law_6331_bm25_equals_rank_bm25(law, embedder, role: str) -> None:
    """Over what the postings hold: the chunks' lexical texts (continuations of a long article
    with its heading, `ragcore.documents.lexical_texts`), not their shown text."""
    with law.connection() as conn:
        stored = conn.execute("SELECT id, text, article FROM chunks ORDER BY ordinal").fetchall()
    rows = list(zip([r[0] for r in stored], lexical_texts([r[1] for r in stored], [r[2] for r in stored]),
                    strict=True))
    assert any(text != r[1] for (_, text), r in zip(rows, stored, strict=True))  # 6331 has such continuations
    bm25 = BM25Okapi([lexical_tokens(text) for _, text in rows])
    for query in ("İşveren risk değerlendirmesi yapmakla yükümlü müdür?", "iş kazası bildirimi kaç gün",
                  "çalışanların eğitimi ve bilgilendirilmesi"):
        scores = bm25.get_scores(_app_query(law, query, role))
        want = sorted(((float(s), cid) for (cid, _), s in zip(rows, scores, strict=True) if s > 0),
                      key=lambda p: (-p[0], p[1]))[:20]
        got = retrieve(law, embedder, query, role, k=20, mode="lexical").hits
        assert [h.source.chunk_id for h in got] == [cid for _, cid in want]
        assert np.allclose([h.lexical_score for h in got], [s for s, _ in want], rtol=1e-12, atol=0)


def test_law_6331_is_invisible_to_other_roles(law, embedder) -> None:
    for role in ("ik", "uretim"):
        assert search(law, embedder, "risk değerlendirmesi", role, k=5, mode="rrf") == []
