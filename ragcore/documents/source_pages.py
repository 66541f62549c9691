"""One page of a stored PDF, for the citation that points at it: its text, and the page as a PDF.

A source says "s. 9"; the reader wants to see page 9, not search a 240-page file for it. The
app shows the page's text (extracted and normalised exactly as at upload) and offers the page
itself as a one-page PDF, which any PDF viewer opens at that page. A rendered image would be
nicer, but no PDF rasteriser is installed (pypdf reads and writes PDFs, it does not draw
them), and `st.pdf` needs the optional `streamlit-pdf` component.

Every function checks the role first (`ragcore.documents.catalog.document_file`): a page is exactly as
readable as its document.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from pypdf import PdfReader, PdfWriter

from ragcore.core import Document, Settings
from ragcore.documents.catalog import DocumentNotFound, can_read, document_file
from ragcore.documents.pdf import normalize_page_text


class PageNotFound(LookupError):
    """The document has no such page (or its file is gone); the message is Turkish."""


@dataclass(frozen=True)
class SourcePage:
    document_id: int
    number: int  # 1-based, as cited
    page_count: int
    text: str  # normalised like the stored chunks (line breaks kept)


def _readable_path(settings: Settings, doc: Document, role: str) -> Path:
    if not can_read(doc, role):
        raise DocumentNotFound(doc.id)
    path = document_file(settings, doc, role)
    if path is None:
        raise PageNotFound("Belgenin dosyası sunucuda bulunamadı.")
    return path


def _reader(path: Path, number: int) -> PdfReader:
    reader = PdfReader(path, strict=False)
    if not 1 <= number <= len(reader.pages):
        raise PageNotFound(f"Belgede {number}. sayfa yok (toplam {len(reader.pages)} sayfa).")
    return reader


def read_page(settings: Settings, doc: Document, number: int, role: str) -> SourcePage:
    """The text of page `number` (1-based) as the chunker saw it."""
    reader = _reader(_readable_path(settings, doc, role), number)
    text = normalize_page_text(reader.pages[number - 1].extract_text() or "")
    return SourcePage(document_id=doc.id, number=number, page_count=len(reader.pages), text=text)


def page_pdf(settings: Settings, doc: Document, number: int, role: str) -> bytes:
    """Page `number` alone as a PDF (fonts and images kept), to open in the browser's viewer."""
    reader = _reader(_readable_path(settings, doc, role), number)
    writer = PdfWriter()
    writer.add_page(reader.pages[number - 1])
    writer.add_metadata({"/Title": f"{doc.title} · s. {number}"})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def page_filename(doc: Document, number: int) -> str:
    """"6331-is-sagligi.pdf" → "6331-is-sagligi-s9.pdf"."""
    return f"{Path(doc.filename).stem or 'belge'}-s{number}.pdf"
