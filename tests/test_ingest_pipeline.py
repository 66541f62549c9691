"""Reading and embedding at once (`ragcore.documents.pipeline`): the chunks of the pages read so far
are embedded while the next pages are read, and the upload stores exactly what reading first and
embedding after would."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ragcore.documents import IngestError, chunk_pages, document_windows, extract_pages, ingest_pdf
from ragcore.embed import EmbeddingError, USEEmbedder
from tests import pdfs


@pytest.fixture(scope="module")
def model() -> USEEmbedder:
    return USEEmbedder()


def regulation(pages: int = 20) -> bytes:
    """A regulation of `pages` pages, two articles on each (ASCII: the test font has no Turkish letters)."""
    texts, number = [], 0
    for page in range(1, pages + 1):
        parts = []
        for _ in range(2):
            number += 1
            parts.append(f"Madde basligi {number}\nMADDE {number} - (1) Isveren sayfa {page} uzerindeki "
                         f"{number} numarali kurali uygular. (2) Calisan bu kurala uyar ve {number} gun icinde "
                         "bildirir. (3) Kurul bu kuralin uygulanmasini yilda bir kez denetler.")
        texts.append("\n".join(parts))
    return pdfs.text_pdf(texts)


class Recording:
    """The real embedder, with the order of its calls among the upload's progress reports."""

    def __init__(self, model: USEEmbedder, events: list, fail: bool = False) -> None:
        self.model, self.events, self.fail = model, events, fail
        self.name, self.dim = model.name, model.dim

    def embed_queries(self, texts):
        return self.model.embed_queries(texts)

    def embed_passages(self, texts):
        self.events.append(("embedded", len(texts)))
        if self.fail:
            raise EmbeddingError("Gömme sunucusu yanıt vermedi.")
        return self.model.embed_passages(texts)


def test_chunks_are_embedded_while_the_pages_are_read_and_stored_as_a_whole_cut(db, settings, model):
    data = regulation()
    events: list = []
    result = ingest_pdf(db, settings, Recording(model, events), data, filename="yonetmelik.pdf", roles=["isg"],
                        progress=lambda *e: events.append(e))
    last_page = events.index(("extract", 20, 20))
    assert any(e[0] == "embedded" for e in events[:last_page]), "nothing was embedded before the last page was read"
    assert sum(e[1] for e in events if e[0] == "embedded") == len(
        {t for t in [c.text for c in chunks_of(data)] + [w.text for w in document_windows(chunks_of(data))]}
    ), "a text was embedded twice, or a guessed chunk was not kept"

    expected = chunks_of(data)
    windows = document_windows(expected)
    with db.connection() as conn:
        stored = conn.execute("SELECT text, page_start, page_end, article, embedding::real[] FROM chunks "
                              "ORDER BY ordinal").fetchall()
        stored_windows = conn.execute("SELECT c.ordinal, w.position, w.char_start, w.char_end, w.embedding::real[] "
                                      "FROM chunk_windows w JOIN chunks c ON c.id = w.chunk_id "
                                      "ORDER BY c.ordinal, w.position").fetchall()
    assert result.chunks == len(expected) and result.windows == len(windows)
    assert [row[:4] for row in stored] == [(c.text, c.page_start, c.page_end, c.article) for c in expected]
    assert np.allclose(np.array([row[4] for row in stored]), model.embed_passages([c.text for c in expected]),
                       atol=1e-5)
    assert [row[:4] for row in stored_windows] == [(w.chunk, w.position, w.char_start, w.char_end) for w in windows]
    assert np.allclose(np.array([row[4] for row in stored_windows]),
                       model.embed_passages([w.text for w in windows]), atol=1e-5)


def chunks_of(data: bytes):
    return chunk_pages(extract_pages(data).pages, 1000, 150)


def test_an_embedder_failing_while_pages_are_read_stops_the_reading_and_stores_nothing(db, settings, model):
    events: list = []
    with pytest.raises(IngestError, match="Gömme sunucusu yanıt vermedi"):
        ingest_pdf(db, settings, Recording(model, events, fail=True), regulation(), filename="yonetmelik.pdf",
                   roles=["isg"], progress=lambda *e: events.append(e))
    assert ("extract", 20, 20) not in events  # the reading stopped when the embedding failed
    assert [t.name for t in threading.enumerate() if t.name == "dayanak-read-ahead"] == []
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
