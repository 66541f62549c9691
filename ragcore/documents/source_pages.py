"""One page of a stored PDF, for the citation that points at it: the page as an image with the
quoted passage marked, its text, and the page as a one-page PDF.

A source says "s. 9"; the reader wants to see page 9, not search a 240-page file for it. The
app shows the page drawn by PDFium with the passage marked (`ragcore.documents.page_images`),
its text (extracted and normalised exactly as at upload — for a page read by OCR, Tesseract's
reading — which also serves screen readers), and offers the page itself as a one-page PDF,
which any PDF viewer opens at that page.

A Word file has no pages: its citation names a section ("§ BİRİNCİ BÖLÜM · paragraf 2"; the
chunk's page_start/page_end number sections), and `read_page` gives that section's text, read
from the stored .docx exactly as at upload, with its heading. There is no one-page file to offer.
An Excel file's citation names a sheet and rows, a PowerPoint file's a slide: `read_page` gives
the sheet's (header and rows) or the slide's text (with its notes), read again from the stored
file under the same caps as at upload.

Every function checks the role first (`ragcore.documents.catalog.document_file`), on every call,
cache or no cache: a page is exactly as readable as its document.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from pypdf import PdfReader, PdfWriter

from ragcore.core import Document, Settings
from ragcore.documents import page_images
from ragcore.documents.catalog import DocumentNotFound, can_read, document_file
from ragcore.documents.formats import DOCX, PDF, PPTX, XLSX, UnusableFile
from ragcore.documents.ocr import OcrError
from ragcore.documents.pdf import normalize_page_text
from ragcore.documents.rendering import PageTooLarge, RenderError
from ragcore.documents.sheets import SheetLimits, extract_sheets
from ragcore.documents.slides import SlideLimits, extract_slides
from ragcore.documents.word import BEFORE_FIRST_HEADING, WordLimits, extract_sections


class PageNotFound(LookupError):
    """The document has no such page (or its file is gone); the message is Turkish."""


# The one refusal of a page image or a one-page PDF of a Word file: what is missing, and what to
# open instead (the source's "Kısmı aç" shows the section's text; the whole .docx downloads).
WORD_HAS_NO_PAGES = ("Word belgelerinin sayfası yok; bu yüzden sayfa görüntüsü ya da tek sayfalık PDF verilemez. "
                     "Kısmın metnini açın (“Kısmı aç”) ya da belgenin tamamını indirin.")
EXCEL_HAS_NO_PAGES = ("Excel dosyalarının sayfa görüntüsü yok; alıntılanan satırlar kaynağın içinde, dosyanın "
                      "tamamı indirilebilir.")
POWERPOINT_HAS_NO_PAGES = ("PowerPoint sunularının sayfa görüntüsü verilemiyor; slaytın metnini açın (“Slaytı aç”) "
                           "ya da sununun tamamını indirin.")
_NO_PAGES = {DOCX: WORD_HAS_NO_PAGES, XLSX: EXCEL_HAS_NO_PAGES, PPTX: POWERPOINT_HAS_NO_PAGES}


@dataclass(frozen=True)
class SourcePage:
    document_id: int
    number: int  # 1-based, as cited (a Word file's section number)
    page_count: int  # a Word file's section count
    text: str  # normalised like the stored chunks (line breaks kept)
    heading: str | None = None  # a Word section's heading, an Excel sheet's name
    ocr: bool = False  # the text was read by OCR from the page's image


@dataclass(frozen=True)
class PageImage:
    """A page drawn as PNG with the passage marked; `marked` words were found (0: none)."""

    document_id: int
    number: int
    png: bytes
    marked: int
    ocr: bool


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
    """The text of page `number` (1-based) as the chunker saw it; for a Word file, of section `number`."""
    path = _readable_path(settings, doc, role)
    if doc.file_format == DOCX:
        return _read_section(settings, doc, path, number)
    if doc.file_format in (XLSX, PPTX):
        return _read_office_part(settings, doc, path, number)
    reader = _reader(path, number)
    if number in doc.ocr_pages:
        try:
            reading = page_images.ocr_reading(settings, path, doc.sha256, number)
        except OcrError as exc:
            raise PageNotFound(str(exc)) from exc
        return SourcePage(document_id=doc.id, number=number, page_count=len(reader.pages),
                          text=normalize_page_text(reading.text), ocr=True)
    text = normalize_page_text(reader.pages[number - 1].extract_text() or "")
    return SourcePage(document_id=doc.id, number=number, page_count=len(reader.pages), text=text)


def _read_section(settings: Settings, doc: Document, path: Path, number: int) -> SourcePage:
    try:
        word = extract_sections(path.read_bytes(), WordLimits.of(settings))
    except UnusableFile as exc:  # it was read at upload; a changed file on the server
        raise PageNotFound(f"Belgenin dosyası okunamadı: {exc}") from exc
    if not 1 <= number <= word.section_count:
        raise PageNotFound(f"Belgede {number}. kısım yok (toplam {word.section_count} kısım).")
    return SourcePage(document_id=doc.id, number=number, page_count=word.section_count,
                      text=word.pages[number - 1].text,
                      heading=word.headings[number - 1] or BEFORE_FIRST_HEADING)


def _read_office_part(settings: Settings, doc: Document, path: Path, number: int) -> SourcePage:
    """Sheet `number` (header and rows) of a .xlsx, or slide `number` (with its notes) of a .pptx."""
    try:
        if doc.file_format == XLSX:
            sheets = extract_sheets(path.read_bytes(), SheetLimits.of(settings))
            parts = {sheet.number: (page, sheet.name) for sheet, page in zip(sheets.sheets, sheets.pages, strict=True)}
            count, noun = sheets.sheet_count, "çalışma sayfası"
        else:
            slides = extract_slides(path.read_bytes(), SlideLimits.of(settings))
            parts = {page.number: (page, None) for page in slides.pages}
            count, noun = slides.slide_count, "slayt"
    except UnusableFile as exc:  # it was read at upload; a changed file on the server
        raise PageNotFound(f"Belgenin dosyası okunamadı: {exc}") from exc
    if number not in parts:
        raise PageNotFound(f"Belgede metni okunan {number}. {noun} yok (toplam {count} {noun}).")
    page, name = parts[number]
    return SourcePage(document_id=doc.id, number=number, page_count=count, text=page.text, heading=name)


def page_image(settings: Settings, doc: Document, number: int, role: str, passage: str = "") -> PageImage:
    """Page `number` drawn as PNG with `passage` (the cited chunk's text) marked on it; `PageTooLarge`
    (a Turkish message saying to open the page's text or its one-page PDF) when the page is too
    large to draw even at PAGE_IMAGE_MIN_DPI."""
    path = _readable_path(settings, doc, role)
    if doc.file_format != PDF:
        raise PageNotFound(_NO_PAGES[doc.file_format])
    _reader(path, number)
    ocr_page = number in doc.ocr_pages
    try:
        png, marked = page_images.marked_png(settings, path, doc.sha256, number, passage, ocr_page=ocr_page)
    except PageTooLarge:  # the page exists; its image is what cannot be made (the API answers 422)
        raise
    except (RenderError, OcrError) as exc:
        raise PageNotFound(str(exc)) from exc
    return PageImage(document_id=doc.id, number=number, png=png, marked=marked, ocr=ocr_page)


def page_pdf(settings: Settings, doc: Document, number: int, role: str) -> bytes:
    """Page `number` alone as a PDF (fonts and images kept), to open in the browser's viewer."""
    path = _readable_path(settings, doc, role)
    if doc.file_format != PDF:
        raise PageNotFound(_NO_PAGES[doc.file_format])
    reader = _reader(path, number)
    writer = PdfWriter()
    writer.add_page(reader.pages[number - 1])
    writer.add_metadata({"/Title": f"{doc.title} · s. {number}"})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def page_filename(doc: Document, number: int) -> str:
    """"6331-is-sagligi.pdf" → "6331-is-sagligi-s9.pdf"."""
    return f"{Path(doc.filename).stem or 'belge'}-s{number}.pdf"
