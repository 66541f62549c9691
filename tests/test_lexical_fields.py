"""The article heading as a field of the lexical leg (issue 20, item 2): a chunk that continues
a long article is found by its article's heading words, its shown text does not change, SQL
BM25 stays rank_bm25 over the indexed texts, and documents stored before are re-indexed with
every role's statistics exact."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ragcore import store as dbmod
from ragcore.core import Page, lexical_tokens
from ragcore.documents import article_headings, chunk_pages, lexical_texts, reindex_stale, store_document
from ragcore.documents.ingest import LEXICAL_VERSION, insert_postings
from ragcore.retrieval import lexical_query, read_snapshot, retrieve
from tests.retrieval_support import make_test_embedder

LAW = "\n".join([
    "ÖRNEK İŞ KANUNU",
    "BİRİNCİ BÖLÜM",
    "Genel Hükümler",
    "Amaç",
    "MADDE 1 – (1) Bu Kanunun amacı işyerinde çalışanların haklarını düzenlemektir.",
    "Kıdem tazminatı",
    "MADDE 2 – (1) İşçinin hizmet akdi işveren tarafından feshedilirse işçiye her tam yıl için otuz günlük "
    "ücret tutarında ödeme yapılır.",
    "(2) Bir yıldan artan süreler için de aynı oran üzerinden hesap yapılır ve ödeme fesih tarihinde "
    "eksiksiz olarak işçiye verilir.",
    "(3) Hesaplamada son brüt ücret esas alınır; buna işçiye sağlanan para ve parayla ölçülebilen "
    "menfaatler eklenir.",
    "(4) Ödemenin geciktirilmesi halinde mevduata uygulanan en yüksek faiz oranı üzerinden gecikme "
    "karşılığı ödenir.",
    "Yıllık ücretli izin",
    "MADDE 3 – (1) İşyerinde bir yıl çalışan işçiye yıllık ücretli izin verilir.",
])
QUESTION = "Kıdem tazminatı ne kadar?"


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


@pytest.fixture(autouse=True)
def no_term_expansions(db):
    """The heading field alone: the term table adds the laws' words for everyday ones ("tazminat"
    → "bildirim süresine ait ücret" since migration 018), and a continuation holding "ücret" would
    then be found by its own text. conftest seeds the table again for the next test."""
    with db.connection() as conn:
        conn.execute("DELETE FROM public.term_expansions")


def _chunks():
    return chunk_pages([Page(1, LAW)], 260, 40)


def _store(db, embedder, roles: list[str], name: str) -> int:
    dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
    chunks = _chunks()
    meta = {"title": name, "filename": f"{name}.pdf", "sha256": f"{random.getrandbits(256):064x}",
            "size_bytes": 1, "page_count": 1, "allowed_roles": roles}
    with db.connection() as conn:
        return store_document(conn, meta, chunks, embedder.embed_passages([c.text for c in chunks]))


def test_continuations_carry_their_articles_heading_and_nothing_else_changes() -> None:
    chunks = _chunks()
    article_2 = [c for c in chunks if c.article == "Madde 2"]
    assert len(article_2) >= 3  # the article is split: its later chunks hold no heading
    assert "Kıdem tazminatı" in article_2[0].text and all("Kıdem" not in c.text for c in article_2[1:])
    headings = article_headings([c.text for c in chunks], [c.article for c in chunks])
    texts = lexical_texts([c.text for c in chunks], [c.article for c in chunks])
    for chunk, (heading, starts), text in zip(chunks, headings, texts, strict=True):
        if chunk.article == "Madde 2" and chunk is not article_2[0]:
            assert (heading, starts) == ("Kıdem tazminatı", False)
            assert text == f"{chunk.text}\nKıdem tazminatı"
        else:
            assert text == chunk.text  # the article's first chunk already holds it; other articles' alone
    assert headings[chunks.index(article_2[0])] == ("Kıdem tazminatı", True)


def _continuations() -> set[int]:
    """Ordinals of the chunks that continue Madde 2 (they do not hold its heading)."""
    chunks = [c for c in _chunks() if c.article == "Madde 2"]
    return {c.ordinal for c in chunks[1:]}


def _found(db, embedder, role: str, document_id: int) -> set[int]:
    """Ordinals of the document's chunks the lexical leg returns for QUESTION."""
    hits = retrieve(db, embedder, QUESTION, role, k=20, mode="lexical").hits
    ids = [h.source.chunk_id for h in hits if h.source.document_id == document_id]
    with db.connection() as conn:
        return {row[0] for row in conn.execute("SELECT ordinal FROM chunks WHERE id = ANY(%s)", (ids,))}


def test_a_continuation_chunk_is_found_by_its_heading_words_and_shows_its_own_text(db, embedder) -> None:
    doc = _store(db, embedder, ["ik"], "ornek-is-kanunu")
    chunks = _chunks()
    with read_snapshot(db) as conn:
        query = set(lexical_query(conn, QUESTION, "ik").terms)
    # no query term is in the continuations' own text: only the heading field can find them
    assert all(not query & set(lexical_tokens(chunks[n].text)) for n in _continuations())
    assert _continuations() <= _found(db, embedder, "ik", doc)
    hits = retrieve(db, embedder, QUESTION, "ik", k=20, mode="lexical").hits
    with db.connection() as conn:
        ordinals = dict(conn.execute("SELECT id, ordinal FROM chunks").fetchall())
        stored = conn.execute("SELECT ordinal, text, article FROM chunks ORDER BY ordinal").fetchall()
    for hit in hits:  # shown and cited as chunked: the heading is only indexed
        chunk = chunks[ordinals[hit.source.chunk_id]]
        assert (hit.source.text, hit.source.article) == (chunk.text, chunk.article)
    assert stored == [(c.ordinal, c.text, c.article) for c in chunks]


@pytest.mark.parametrize("role", ["admin", "ik", "isg"])
def test_sql_bm25_is_rank_bm25_over_the_lexical_texts_of_the_roles_chunks(db, embedder, role: str) -> None:
    _store(db, embedder, ["ik"], "ornek-is-kanunu")
    _store(db, embedder, ["isg", "ik"], "ornek-is-kanunu-2")
    with db.connection() as conn:
        docs = conn.execute("SELECT id, allowed_roles FROM documents ORDER BY id").fetchall()
        rows = []
        for doc_id, roles in docs:
            if role != "admin" and role not in roles:
                continue
            mine = conn.execute("SELECT id, text, article FROM chunks WHERE document_id = %s ORDER BY ordinal",
                                (doc_id,)).fetchall()
            rows += zip([r[0] for r in mine], lexical_texts([r[1] for r in mine], [r[2] for r in mine]), strict=True)
    with read_snapshot(db) as conn:
        query = lexical_query(conn, QUESTION, role).terms
    scores = BM25Okapi([lexical_tokens(text) for _, text in rows]).get_scores(query)
    want = sorted(((float(s), cid) for (cid, _), s in zip(rows, scores, strict=True) if s > 0),
                  key=lambda p: (-p[0], p[1]))[:20]
    got = retrieve(db, embedder, QUESTION, role, k=20, mode="lexical").hits
    assert [h.source.chunk_id for h in got] == [cid for _, cid in want]
    assert np.allclose([h.lexical_score for h in got], [s for s, _ in want], rtol=1e-12, atol=0)


# ----------------------------------------------------------------------------- re-index


def _index(db) -> dict:
    """Postings, lengths and every per-role statistic, as stored."""
    with db.connection() as conn:
        return {
            "postings": sorted(conn.execute(
                "SELECT c.ordinal, d.filename, p.term, p.tf, p.doc_len, p.roles_mask FROM postings p "
                "JOIN chunks c ON c.id = p.chunk_id JOIN documents d ON d.id = c.document_id").fetchall()),
            "lengths": sorted(conn.execute(
                "SELECT d.filename, c.ordinal, c.lex_length FROM chunks c JOIN documents d ON d.id = c.document_id"
            ).fetchall()),
            "lex_stats": sorted(conn.execute("SELECT role, chunk_count, total_length FROM lex_stats").fetchall()),
            "lexicon": sorted(conn.execute("SELECT role, term, df, high_df FROM lexicon WHERE df > 0").fetchall()),
            "histogram": sorted(conn.execute("SELECT role, df, terms FROM lex_df_histogram WHERE terms > 0").fetchall()),
        }


def _as_before_migration_016(db, document_id: int) -> None:
    """Rewrite a document's postings and lengths the way uploads did before: from the chunks' text."""
    with db.connection() as conn:
        rows = conn.execute("SELECT id, text FROM chunks WHERE document_id = %s ORDER BY ordinal",
                            (document_id,)).fetchall()
        conn.execute("DELETE FROM postings WHERE chunk_id = ANY(%s)", ([r[0] for r in rows],))
        for chunk_id, text in rows:
            conn.execute("UPDATE chunks SET lex_length = %s WHERE id = %s", (len(lexical_tokens(text)), chunk_id))
        insert_postings(conn, [r[0] for r in rows], [r[1] for r in rows])
        conn.execute("UPDATE documents SET lexical_version = 1 WHERE id = %s", (document_id,))


def _recount(db) -> dict:
    """Each reader's statistics (a role, or a user's set of roles) recounted in Python from the
    chunks' lexical texts."""
    with db.connection() as conn:
        docs = conn.execute("SELECT id, allowed_roles FROM documents").fetchall()
        readers = [r for (r,) in conn.execute("SELECT role FROM lex_stats")]
        stats = {role: [0, 0] for role in readers}
        df = {role: Counter() for role in readers}
        for doc_id, roles in docs:
            rows = conn.execute("SELECT text, article FROM chunks WHERE document_id = %s ORDER BY ordinal",
                                (doc_id,)).fetchall()
            for text in lexical_texts([r[0] for r in rows], [r[1] for r in rows]):
                tokens = lexical_tokens(text)
                for role in readers:
                    if role == "admin" or set(role.split("+")) & set(roles):
                        stats[role][0] += 1
                        stats[role][1] += len(tokens)
                        df[role].update(set(tokens))
    return {"lex_stats": sorted((r, n, t) for r, (n, t) in stats.items()),
            "df": sorted((r, term, n) for r in readers for term, n in df[r].items())}


def test_documents_stored_before_are_reindexed_exactly(db, embedder) -> None:
    old = _store(db, embedder, ["ik", "personel"], "eski")
    _store(db, embedder, ["isg"], "yeni")
    fresh = _index(db)
    _as_before_migration_016(db, old)
    before = _index(db)
    assert before != fresh  # the old document's continuations lacked the heading
    assert not _continuations() & _found(db, embedder, "personel", old)

    assert reindex_stale(db) == 1
    assert _index(db) == fresh  # as if uploaded today: postings, lengths, statistics of every role
    stored = _index(db)
    assert sorted((r, n, t) for r, n, t in stored["lex_stats"]) == _recount(db)["lex_stats"]
    assert sorted((r, t, d) for r, t, d, _ in stored["lexicon"]) == _recount(db)["df"]
    with db.connection() as conn:
        versions = {v for (v,) in conn.execute("SELECT lexical_version FROM documents")}
    assert versions == {LEXICAL_VERSION}
    assert reindex_stale(db) == 0  # current documents are left alone
    assert _continuations() <= _found(db, embedder, "personel", old)
