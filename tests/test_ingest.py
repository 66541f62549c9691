"""Ingest end to end on the real embedded database: all or nothing, duplicates, bad input."""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from pathlib import Path

import pytest

from ragcore import store as dbmod
from ragcore.core import lexical_tokens
from ragcore.documents import (
    DuplicateDocument,
    IndexModelMismatch,
    IngestError,
    ingest_pdf,
    lexical_texts,
    stored_path,
)
from ragcore.embed import USEEmbedder
from tests import pdfs
from tests.conftest import LAW_5510, LAW_6331


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


def state(db: dbmod.Database, settings) -> dict:
    """Everything an ingest may write: row counts, lexicon, lex_stats, stored files."""
    with db.connection() as conn:
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                  for t in ("documents", "chunks", "postings", "chunk_windows")}
        lexicon = dict(conn.execute("SELECT term, df FROM lexicon WHERE role = 'admin'").fetchall())
        stats = conn.execute("SELECT chunk_count, total_length FROM lex_stats WHERE role = 'admin'").fetchone()
    files = sorted(p.name for p in settings.uploads_dir.glob("*")) if settings.uploads_dir.exists() else []
    return {"counts": counts, "lexicon": lexicon, "stats": stats, "files": files}


def check_lexical_index(db: dbmod.Database) -> None:
    """Postings, lexicon and lex_stats (admin's: every chunk) agree with the stored chunks' lexical
    texts (`lexical_texts`: the text, and a continuation's article heading)."""
    with db.connection() as conn:
        stored = conn.execute("SELECT id, text, lex_length, article, document_id FROM chunks "
                              "ORDER BY document_id, ordinal").fetchall()
        postings = conn.execute("SELECT term, chunk_id, tf FROM postings").fetchall()
        lexicon = dict(conn.execute("SELECT term, df FROM lexicon WHERE role = 'admin'").fetchall())
        stats = conn.execute("SELECT chunk_count, total_length FROM lex_stats WHERE role = 'admin'").fetchone()
    chunks = []
    for _, group in itertools.groupby(stored, key=lambda row: row[4]):
        rows = list(group)
        texts = lexical_texts([r[1] for r in rows], [r[3] for r in rows])
        chunks += [(r[0], text, r[2]) for r, text in zip(rows, texts, strict=True)]
    expected, df = set(), Counter()
    for chunk_id, text, lex_length in chunks:
        tokens = lexical_tokens(text)
        assert lex_length == len(tokens)
        for term, tf in Counter(tokens).items():
            expected.add((term, chunk_id, tf))
            df[term] += 1
    assert set(postings) == expected
    assert lexicon == dict(df)
    assert stats == (len(chunks), sum(row[2] for row in chunks))


@pytest.mark.needs_data("laws")
def test_law_6331_ingests_with_pages_articles_and_progress(db, settings, embedder):
    events: list[tuple[str, int, int]] = []
    result = ingest_pdf(db, settings, embedder, LAW_6331.read_bytes(), filename=LAW_6331.name,
                        roles=["isg", "personel"], uploaded_by="admin", progress=lambda *e: events.append(e))
    assert result.pages == 24 and result.chunks > 40 and result.skipped_pages == []
    assert [s for s in dict.fromkeys(e[0] for e in events)] == ["extract", "chunk", "embed", "store"]
    assert events[-1] == ("store", 3, 3)
    with db.connection() as conn:
        doc = conn.execute("SELECT page_count, allowed_roles, sha256, filename FROM documents").fetchone()
        rows = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE embedding IS NULL), "
            "count(*) FILTER (WHERE allowed_roles <> ARRAY['isg','personel']), max(page_end) FROM chunks"
        ).fetchone()
        articles = conn.execute("SELECT count(DISTINCT article) FROM chunks WHERE article IS NOT NULL").fetchone()[0]
    assert doc[:2] == (24, ["isg", "personel"]) and doc[3] == LAW_6331.name
    assert rows == (result.chunks, 0, 0, 24)
    assert articles == 49  # 39 articles + 25/A + 9 provisional articles
    assert stored_path(settings, doc[2]).read_bytes() == LAW_6331.read_bytes()
    assert dbmod.current_embedding_space(db) == dbmod.EmbeddingSpace("use-multilingual-v3", 512)
    check_lexical_index(db)


def test_duplicate_upload_is_refused_naming_the_document(db, settings, embedder):
    data = pdfs.law_pdf()
    first = ingest_pdf(db, settings, embedder, data, filename="yonetmelik.pdf", roles=["isg"], title="Örnek yönetmelik")
    before = state(db, settings)
    with pytest.raises(DuplicateDocument) as info:
        ingest_pdf(db, settings, embedder, data, filename="kopya.pdf", roles=["ik"])
    assert "Örnek yönetmelik" in str(info.value) and first.public_id in str(info.value)
    assert info.value.public_id == first.public_id and f"#{first.document_id}" not in str(info.value)
    assert state(db, settings) == before


BAD_INPUTS = {
    "not a pdf named .pdf": (pdfs.not_a_pdf, "bu biçimlerden biri değil"),
    "zero bytes": (lambda: b"", "boş"),
    "encrypted": (pdfs.encrypted_pdf, "şifrelenmiş"),
    "truncated": (pdfs.truncated_pdf, "bozuk ya da eksik"),
    "corrupt": (pdfs.corrupt_pdf, "bozuk ya da eksik"),
    "scanned, no text layer": (pdfs.image_only_pdf, "OCR ile de okunabilir metin bulunamadı"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_pdf_is_refused_and_nothing_written(db, settings, embedder, case):
    ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="ok.pdf", roles=["isg"])  # a non-empty baseline
    before = state(db, settings)
    make, message = BAD_INPUTS[case]
    with pytest.raises(IngestError, match=message):
        ingest_pdf(db, settings, embedder, make(), filename="belge.pdf", roles=["isg"])
    assert state(db, settings) == before


@pytest.mark.parametrize(
    ("roles", "message"),
    [([], "En az bir rol"), (["  "], "En az bir rol"), (["isg", "muhasebe"], "Bilinmeyen rol: muhasebe")],
)
def test_bad_roles_are_refused_and_nothing_written(db, settings, embedder, roles, message):
    before = state(db, settings)
    with pytest.raises(IngestError, match=message):
        ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="x.pdf", roles=roles)
    assert state(db, settings) == before


def test_file_over_the_size_limit_is_refused(db, settings, embedder):
    small = settings.replace(max_upload_mb=1)
    before = state(db, small)
    with pytest.raises(IngestError, match="çok büyük"):
        ingest_pdf(db, small, embedder, pdfs.law_pdf() + b"\0" * (1024 * 1024), filename="x.pdf", roles=["isg"])
    assert state(db, small) == before


def test_pages_without_text_are_skipped_and_reported(db, settings, embedder):
    data = pdfs.text_pdf(["Birinci sayfa. Metin var.", "", "Ucuncu sayfa. Metin var."])
    result = ingest_pdf(db, settings, embedder, data, filename="bos-sayfa.pdf", roles=["personel"])
    assert result.pages == 3 and result.skipped_pages == [2]
    with db.connection() as conn:
        assert conn.execute("SELECT skipped_pages FROM documents").fetchone()[0] == [2]
        pages = conn.execute("SELECT DISTINCT page_start FROM chunks ORDER BY 1").fetchall()
    assert pages == [(1,), (3,)]


def test_failure_inside_the_transaction_rolls_everything_back(db, settings, embedder):
    ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="ok.pdf", roles=["isg"])
    before = state(db, settings)

    def explode(stage: str, done: int, total: int) -> None:
        if stage == "store" and done == 2:  # document, chunks and windows inserted, postings not yet
            raise RuntimeError("disk dolu")

    data = pdfs.text_pdf(["Baska bir belge. Icerik farkli. Ucuncu cumle burada."])
    with pytest.raises(RuntimeError, match="disk dolu"):
        ingest_pdf(db, settings, embedder, data, filename="y.pdf", roles=["isg"], progress=explode)
    assert state(db, settings) == before
    assert not list(settings.uploads_dir.glob(".*.tmp"))
    check_lexical_index(db)


def test_other_embedding_model_is_refused_before_writing(db, settings, embedder):
    previous = dbmod.current_embedding_space(db)
    with db.connection() as conn:
        dbmod.replace_embedding_space(conn, "ollama:bge-m3", 1024)
    try:
        with pytest.raises(IndexModelMismatch, match="yeniden gömmeli") as refused:
            ingest_pdf(db, settings, embedder, pdfs.law_pdf(), filename="x.pdf", roles=["isg"])
        # The admin reads what to do in words (the app has no re-embed action); the command is
        # for the CLI and the log, not the message the app shows.
        message = str(refused.value)
        assert "ollama:bge-m3" in message and embedder.name in message and "python -m" not in message
        assert isinstance(refused.value, IngestError) and refused.value.command == "python -m ragcore reembed"
        assert state(db, settings)["counts"] == {"documents": 0, "chunks": 0, "postings": 0, "chunk_windows": 0}
    finally:
        with db.connection() as conn:
            if previous is None:
                conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
                conn.execute("ALTER TABLE chunks DROP COLUMN IF EXISTS embedding")
                conn.execute("DELETE FROM embedding_index")
            else:
                dbmod.replace_embedding_space(conn, previous.model, previous.dim)


def _rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        import os

        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024 / 1024


@pytest.mark.slow
@pytest.mark.needs_data("laws")
def test_law_5510_ingests_with_bounded_memory_and_progress(db, settings, embedder):
    """The one ingest of the 240-page law in the whole suite."""
    embedder.embed_passages(["ısınma"])  # load the model first so its weights do not count as growth
    base = _rss_mb()
    peak = [base]
    extract_done: list[int] = []

    def progress(stage: str, done: int, total: int) -> None:
        peak[0] = max(peak[0], _rss_mb())
        if stage == "extract":
            extract_done.append(done)

    data = LAW_5510.read_bytes()
    result = ingest_pdf(db, settings, embedder, data, filename=LAW_5510.name, roles=["ik"], progress=progress)
    assert result.pages == 240 and result.chunks > 500
    assert extract_done == list(range(0, 241))  # 0 first: the page count before page 1
    assert peak[0] - base < 300, f"RSS grew by {peak[0] - base:.0f} MB"
    assert Path(stored_path(settings, hashlib.sha256(data).hexdigest())).is_file()
    check_lexical_index(db)
