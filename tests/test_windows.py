"""Sentence windows (issue 20): what a chunk's windows are, that they are stored, re-embedded,
role-filtered and deleted with their chunk, and that the dense leg scores a chunk with its best
window (the mean of its own cosine and the window's) when DENSE_WINDOWS is on.

The permission suites (tests/permission_world.py: every chunk of its world has windows) and the
statistics property (tests/test_role_statistics.py: retrieval with windows, a forbidden
document with windows) cover the new table too.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from ragcore import store as dbmod
from ragcore.core import Chunk
from ragcore.documents import (
    MAX_WINDOWS,
    chunk_windows,
    delete_document,
    document_windows,
    ingest_pdf,
    reembed_all,
    set_document_roles,
    store_document,
)
from ragcore.retrieval import RETRIEVAL_WINDOWS_SQL, read_snapshot, retrieve, statement_params
from tests import pdfs
from tests.conftest import reset_tables
from tests.retrieval_support import clean, make_test_embedder

HEADED = ("İş kazası ve meslek hastalığının bildirimi\n"
          "MADDE 14 – (1) İşveren iş kazalarının kayıtlarını tutar. Gerekli incelemeleri yaparak raporlar "
          "düzenler. İş kazasını kazadan sonraki üç iş günü içinde Kuruma bildirir.")


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


# ----------------------------------------------------------------------------- what a window is


def test_windows_are_sliding_sentence_pairs_and_the_heading() -> None:
    windows = chunk_windows(HEADED, "Madde 14")
    texts = [w.text for w in windows]
    assert texts[0] == "İş kazası ve meslek hastalığının bildirimi"
    assert texts[1:] == [
        "MADDE 14 – (1) İşveren iş kazalarının kayıtlarını tutar. Gerekli incelemeleri yaparak raporlar düzenler.",
        "Gerekli incelemeleri yaparak raporlar düzenler. İş kazasını kazadan sonraki üç iş günü içinde Kuruma bildirir.",
    ]
    assert [w.position for w in windows] == [0, 1, 2]
    assert all(HEADED[w.char_start:w.char_end] == w.text for w in windows)


def test_no_heading_window_outside_an_article_and_no_window_equal_to_the_chunk() -> None:
    assert [w.text for w in chunk_windows("Amaç\nMADDE 1 – Bu Kanunun amacı budur.", None)] == []
    assert chunk_windows("Tek bir cümle.", None) == []
    two = chunk_windows("Birinci cümle burada. İkinci cümle burada.", None)
    assert [w.text for w in two] == ["Birinci cümle burada.", "İkinci cümle burada."]


def test_windows_per_chunk_are_capped_and_spread_over_the_chunk() -> None:
    text = " ".join(f"Cümle numarası {n} burada yazılıdır." for n in range(30))
    windows = chunk_windows(text, None)
    assert len(windows) == MAX_WINDOWS
    assert windows[0].char_start == 0 and windows[-1].char_end == len(text)


def test_document_windows_name_their_chunk() -> None:
    chunks = [Chunk(ordinal=i, text=t, page_start=1, page_end=1, article=None, char_start=0, char_end=len(t))
              for i, t in enumerate(["Bir. İki. Üç.", "Tek cümle.", "Dört. Beş."])]
    assert [(w.chunk, w.text) for w in document_windows(chunks)] == [(0, "Bir. İki."), (0, "İki. Üç."),
                                                                     (2, "Dört."), (2, "Beş.")]


# ----------------------------------------------------------------------------- stored with their chunk


def _windows(db) -> list[tuple]:
    with db.connection() as conn:
        return conn.execute(
            "SELECT w.chunk_id, w.position, substr(c.text, w.char_start + 1, w.char_end - w.char_start), "
            "w.roles_mask, c.roles_mask, w.embedding IS NULL FROM chunk_windows w JOIN chunks c ON c.id = w.chunk_id "
            "ORDER BY w.chunk_id, w.position").fetchall()


def _expected(db) -> list[tuple]:
    with db.connection() as conn:
        rows = conn.execute("SELECT id, text, article FROM chunks ORDER BY id").fetchall()
    return [(cid, w.position, w.text) for cid, text, article in rows for w in chunk_windows(text, article)]


def test_ingest_stores_every_chunks_windows_with_its_roles(db, settings, embedder) -> None:
    ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg", "ik"])
    stored = _windows(db)
    assert stored and [row[:3] for row in stored] == _expected(db)
    assert all(w_mask == c_mask == 0b111 and not missing for *_, w_mask, c_mask, missing in stored)
    assert dbmod.current_embedding_space(db).windows


def test_windows_follow_their_documents_roles_and_go_with_it(db, settings, embedder) -> None:
    doc = ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"]).document_id
    set_document_roles(db, doc, ["uretim", "personel"])
    stored = _windows(db)
    assert stored and all(w_mask == c_mask == 0b11001 for *_, w_mask, c_mask, _ in stored)
    delete_document(db, settings, doc)
    assert _windows(db) == []


def test_a_writer_cannot_give_a_window_other_roles_than_its_chunk(db, settings, embedder) -> None:
    ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    with db.connection() as conn:
        chunk = conn.execute("SELECT id FROM chunks ORDER BY id LIMIT 1").fetchone()[0]
        conn.execute("INSERT INTO chunk_windows (chunk_id, position, char_start, char_end, roles_mask) "
                     "VALUES (%s, 99, 0, 4, 31)", (chunk,))
        assert conn.execute("SELECT roles_mask FROM chunk_windows WHERE position = 99").fetchone()[0] == 0b11


def test_reembed_embeds_windows_again(db, settings, embedder) -> None:
    ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    with db.connection() as conn:
        conn.execute("DELETE FROM chunk_windows")
        conn.execute("UPDATE embedding_index SET windows = false")  # an index built before windows existed
    reembed_all(db, embedder)
    stored = _windows(db)
    assert [row[:3] for row in stored] == _expected(db) and dbmod.current_embedding_space(db).windows
    with db.connection() as conn:
        rows = conn.execute("SELECT substr(c.text, w.char_start + 1, w.char_end - w.char_start), w.embedding "
                            "FROM chunk_windows w JOIN chunks c ON c.id = w.chunk_id ORDER BY w.id").fetchall()
    want = embedder.embed_passages([text for text, _ in rows])
    assert np.allclose(np.vstack([np.asarray(vec.to_numpy()) for _, vec in rows]), want, atol=1e-6)


def test_an_index_without_windows_stores_none_and_searches_as_before(db, settings, embedder) -> None:
    dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
    with db.connection() as conn:
        conn.execute("UPDATE embedding_index SET windows = false")
    try:
        ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
        assert _windows(db) == []
        question = "Risk değerlendirmesi ne zaman yenilenir?"
        for mode in ("dense", "weighted"):
            on = retrieve(db, embedder, question, "isg", k=5, mode=mode, windows=True)
            off = retrieve(db, embedder, question, "isg", k=5, mode=mode, windows=False)
            assert on.hits == off.hits and on.evidence == off.evidence
    finally:
        with db.connection() as conn:
            conn.execute("UPDATE embedding_index SET windows = true")


# ----------------------------------------------------------------------------- which setting governs


@pytest.fixture()
def new_index(pg_url, session_db):
    """A namespace of its own with no embedding index yet: what the first start of a server sees."""
    dbmod.drop_namespace(session_db, "test_new_index")  # a crashed run's leftovers
    database = dbmod.Database(pg_url, "test_new_index", max_size=2)
    dbmod.migrate(database)
    assert dbmod.current_embedding_space(database) is None
    yield database
    dbmod.drop_namespace(database, "test_new_index")
    database.close()


def _window_count(db) -> int:
    with db.connection() as conn:
        return conn.execute("SELECT count(*) FROM chunk_windows").fetchone()[0]


def _law(n: int) -> bytes:
    return pdfs.text_pdf([f"{page}\nBelge {n}." for page in pdfs.LAW_PAGES])


def test_an_upload_to_a_new_index_with_windows_off_stores_none(new_index, settings, embedder) -> None:
    """DENSE_WINDOWS=false builds the index without windows: no upload pays for them."""
    off = settings.replace(dense_windows=False)
    result = ingest_pdf(new_index, off, embedder, _law(1), filename="a.pdf", roles=["isg"])
    assert result.chunks > 0 and result.windows == 0 and _window_count(new_index) == 0
    assert dbmod.current_embedding_space(new_index).windows is False


def test_an_upload_to_a_new_index_with_windows_on_stores_them(new_index, settings, embedder) -> None:
    on = settings.replace(dense_windows=True)
    result = ingest_pdf(new_index, on, embedder, _law(1), filename="a.pdf", roles=["isg"])
    assert result.windows > 0 and [row[:3] for row in _windows(new_index)] == _expected(new_index)
    assert result.windows == _window_count(new_index) and dbmod.current_embedding_space(new_index).windows is True


def test_uploads_follow_the_index_record_until_reembed_follows_the_setting(new_index, settings, embedder,
                                                                           caplog) -> None:
    """Turning the setting over later changes no upload on its own (every document of an index
    has windows, or none has); `reembed` rebuilds the index the setting's way, and the uploads
    after it follow the new record."""
    off = settings.replace(dense_windows=False)
    on = settings.replace(dense_windows=True)
    ingest_pdf(new_index, off, embedder, _law(1), filename="a.pdf", roles=["isg"])
    with caplog.at_level("WARNING", logger="ragcore.store.embedding_space"):
        assert ingest_pdf(new_index, on, embedder, _law(2), filename="b.pdf", roles=["isg"]).windows == 0
    assert _window_count(new_index) == 0 and "reembed" in caplog.text and "DENSE_WINDOWS is on" in caplog.text

    reembed_all(new_index, embedder, windows=True)
    assert dbmod.current_embedding_space(new_index).windows is True
    assert [row[:3] for row in _windows(new_index)] == _expected(new_index)  # both documents now
    third = ingest_pdf(new_index, off, embedder, _law(3), filename="c.pdf", roles=["isg"])
    assert third.windows > 0 and [row[:3] for row in _windows(new_index)] == _expected(new_index)

    reembed_all(new_index, embedder, windows=False)
    assert dbmod.current_embedding_space(new_index).windows is False and _window_count(new_index) == 0


def test_every_test_and_module_corpus_starts_with_an_index_recording_windows(db, embedder) -> None:
    """The per-test clean state (`db`) and the module corpora's (`clean`) reset the windows record
    an earlier test may have left off."""
    dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
    for reset in (reset_tables, clean):
        with db.connection() as conn:
            conn.execute("UPDATE embedding_index SET windows = false")  # what a test may leave behind
        reset(db)
        assert dbmod.current_embedding_space(db).windows is True, reset.__name__


# ----------------------------------------------------------------------------- retrieval

# The asked fact is one sentence of a long chunk about other duties; the other chunks share the
# question's topic words. Its own vector averages the sentence away; its window does not.
LONG = ("Çalışanlara yılda bir eğitim verilir ve eğitim kayıtları beş yıl saklanır. Kişisel koruyucu donanımlar "
        "ücretsiz verilir. Makinelerin bakımı yetkili kişilerce yapılır. Acil çıkış yolları açık tutulur ve yangın "
        "söndürücüler her ay kontrol edilir. İşyerinde bir iş kazası olursa işveren bunu kazadan sonraki üç iş günü "
        "içinde Sosyal Güvenlik Kurumuna bildirir. Yemekhane saat on ikide açılır. Servis araçları vardiya başında "
        "kalkar. Çalışma ortamı düzenli olarak gözetilir.")
OTHERS = (
    "İş kazası sonrası işveren olay yerini inceler ve kaza raporu hazırlar.",  # above LONG's vector, below its window
    "İşveren iş kazası ve meslek hastalığı kayıtlarını tutar.",
    "Kaza yerinde güvenlik şeridi çekilir ve olay tutanağı yazılır.",
    "İş kazalarının nedenleri risk değerlendirmesinde incelenir.",
)
QUESTION = "İş kazasını işveren kaç gün içinde SGK'ya bildirmek zorunda?"


def _store(db, embedder, texts, roles) -> int:
    dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
    chunks = [Chunk(ordinal=i, text=t, page_start=1, page_end=1, article=None, char_start=0, char_end=len(t))
              for i, t in enumerate(texts)]
    windows = document_windows(chunks)
    meta = {"title": "talimat", "filename": "talimat.pdf", "sha256": f"{random.getrandbits(256):064x}",
            "size_bytes": 1, "page_count": 1, "allowed_roles": roles}
    with db.connection() as conn:
        return store_document(conn, meta, chunks, embedder.embed_passages(list(texts)), windows=windows,
                              window_vectors=embedder.embed_passages([w.text for w in windows]))


def _rank_of_long(result) -> int:
    return next(h.source.rank for h in result.hits if h.source.text == LONG)


def test_a_question_worded_like_one_sentence_ranks_its_long_chunk_higher(db, embedder) -> None:
    _store(db, embedder, (LONG, *OTHERS), ["isg"])
    off = retrieve(db, embedder, QUESTION, "isg", k=10, mode="dense", windows=False)
    on = retrieve(db, embedder, QUESTION, "isg", k=10, mode="dense", windows=True)
    assert _rank_of_long(on) < _rank_of_long(off)
    assert _rank_of_long(on) == 1
    # a chunk's dense score is the mean of its own cosine and its best window's (its own without windows)
    before = {h.source.chunk_id: h.dense_score for h in off.hits}
    with db.connection() as conn:
        best = dict(conn.execute("SELECT chunk_id, max(1 - (embedding <=> %s)) FROM chunk_windows GROUP BY chunk_id",
                                 (embedder.embed_queries([QUESTION])[0],)).fetchall())
    for hit in on.hits:
        cid = hit.source.chunk_id
        want = (before[cid] + best[cid]) / 2 if cid in best else before[cid]
        assert hit.dense_score == pytest.approx(want, abs=1e-6)
    # the refusal evidence keeps the chunk vectors' best cosine; the best window's is beside it
    assert on.evidence.best_cosine == off.evidence.best_cosine
    assert on.evidence.best_window_cosine is not None and off.evidence.best_window_cosine is None


def test_a_forbidden_documents_windows_are_never_read(db, embedder) -> None:
    """A role's window candidates come from its own chunks only: another role's document whose
    window matches the question best neither appears nor moves a score."""
    _store(db, embedder, OTHERS, ["isg"])
    before = retrieve(db, embedder, QUESTION, "isg", k=10, mode="dense", windows=True)
    _store(db, embedder, (LONG,), ["ik"])
    after = retrieve(db, embedder, QUESTION, "isg", k=10, mode="dense", windows=True)
    assert after.hits == before.hits and after.evidence == before.evidence
    assert _rank_of_long(retrieve(db, embedder, QUESTION, "ik", k=10, mode="dense", windows=True)) == 1


@pytest.mark.parametrize(("role", "index"), [("isg", "chunk_windows_embedding_hnsw_b1"),
                                           ("personel", "chunk_windows_embedding_hnsw_b4"),
                                           ("admin", "chunk_windows_embedding_hnsw")])
def test_window_leg_uses_the_roles_hnsw_index(db, embedder, role: str, index: str) -> None:
    """With the parameterised statement (a custom plan for the role's bit), the window leg scans
    the role's partial HNSW index on chunk_windows — admin the global one — and the chunk leg
    the role's on chunks."""
    _store(db, embedder, (LONG, *OTHERS), ["isg", "personel"])
    chunk_index = index.replace("chunk_windows_", "chunks_")
    with read_snapshot(db) as conn:
        params = statement_params(conn, QUESTION, embedder.embed_queries([QUESTION])[0], role, k=5, mode="rrf",
                                  weight=0.5)
        conn.execute("SET LOCAL enable_seqscan = off")
        for _ in range(7):  # past psycopg's prepare threshold: the prepared statement too
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + RETRIEVAL_WINDOWS_SQL, params))
            assert f"Index Scan using {index} on chunk_windows" in plan
            assert f"Index Scan using {chunk_index} on chunks" in plan
