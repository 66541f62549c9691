"""Retrieval legs against a real PostgreSQL: BM25 equals rank_bm25, dense equals numpy cosine,
fusion equals its definition, and the role predicate sits inside every query."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ragcore import db as dbmod
from ragcore.config import Settings
from ragcore.retrieval import (
    MODES,
    RRF_K,
    RetrievalError,
    resolve_mode,
    retrieve,
    search,
)
from ragcore.text import lexical_tokens
from tests.conftest import LAW_6331, require_data
from tests.retrieval_support import DocSpec, clean, ingest_law, insert_document, make_test_embedder

# Small Turkish corpus: "ve" and "işveren" are in more than half of the chunks (negative idf,
# so rank_bm25's epsilon floor matters), "İşveren"/"IŞIK" exercise Turkish case folding.
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


def _bm25(rows) -> BM25Okapi:
    return BM25Okapi([lexical_tokens(text) for _, text, _, _ in rows])


def _permitted(role: str, roles: list[str]) -> bool:
    return role == "admin" or role in roles


@pytest.mark.parametrize("role", ["admin", "isg", "ik", "personel", "uretim"])
@pytest.mark.parametrize("query", QUERIES)
def test_lexical_leg_equals_rank_bm25(corpus, embedder, query: str, role: str) -> None:
    database, rows = corpus
    expected = _bm25(rows).get_scores(lexical_tokens(query))
    want = sorted(
        ((float(s), cid) for (cid, _, roles, _), s in zip(rows, expected, strict=True)
         if s > 0 and _permitted(role, roles)),
        key=lambda pair: (-pair[0], pair[1]),
    )
    got = retrieve(database, embedder, query, role, k=len(rows), mode="lexical").hits
    got = [(h.lexical_score, h.source.chunk_id) for h in got if h.lexical_score > 0]
    assert [cid for _, cid in got] == [cid for _, cid in want]
    assert np.allclose([s for s, _ in got], [s for s, _ in want], atol=1e-6)


def test_negative_idf_uses_epsilon_times_mean_idf(corpus, embedder) -> None:
    """'ve' is in every chunk: its idf is negative and must become 0.25 × mean idf, as in rank_bm25."""
    database, rows = corpus
    bm25 = _bm25(rows)
    assert bm25.idf["ve"] == pytest.approx(0.25 * bm25.average_idf)
    got = retrieve(database, embedder, "ve", "admin", k=len(rows), mode="lexical").hits
    assert len(got) == len(rows)
    expected = dict(zip([r[0] for r in rows], bm25.get_scores(["ve"]), strict=True))
    for hit in got:
        assert hit.lexical_score == pytest.approx(expected[hit.source.chunk_id], abs=1e-6)


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


def test_dense_query_uses_the_hnsw_index(corpus, embedder) -> None:
    from ragcore.retrieval import RETRIEVAL_SQL, _params

    database, _ = corpus
    params = _params(QUERIES[0], embedder.embed_queries([QUERIES[0]])[0], "isg", 5, "rrf", 0.3)
    with database.connection() as conn:
        database.apply_retrieval_settings(conn)
        conn.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + RETRIEVAL_SQL, params))
    assert "chunks_embedding_hnsw" in plan


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


def test_law_6331_bm25_equals_rank_bm25(law, embedder) -> None:
    with law.connection() as conn:
        rows = conn.execute("SELECT id, text FROM chunks ORDER BY id").fetchall()
    bm25 = BM25Okapi([lexical_tokens(text) for _, text in rows])
    for query in ("İşveren risk değerlendirmesi yapmakla yükümlü müdür?", "iş kazası bildirimi kaç gün",
                  "çalışanların eğitimi ve bilgilendirilmesi"):
        scores = bm25.get_scores(lexical_tokens(query))
        want = sorted(((float(s), cid) for (cid, _), s in zip(rows, scores, strict=True) if s > 0),
                      key=lambda p: (-p[0], p[1]))[:20]
        got = retrieve(law, embedder, query, "admin", k=20, mode="lexical").hits
        assert [h.source.chunk_id for h in got] == [cid for _, cid in want]
        assert np.allclose([h.lexical_score for h in got], [s for s, _ in want], atol=1e-6)


def test_law_6331_is_invisible_to_other_roles(law, embedder) -> None:
    for role in ("ik", "uretim"):
        assert search(law, embedder, "risk değerlendirmesi", role, k=5, mode="rrf") == []
