"""PDF pages drawn as images, and where each word of a page's text layer sits (pypdfium2).

pypdf reads and writes PDFs but does not draw them; pypdfium2 (a wheel that bundles Google's
PDFium, the renderer of Chrome) does both the drawing and the geometry: a page becomes a Pillow
image for OCR (`ragcore.documents.ocr`) and for the cited-page dialog, and its text page gives
every character's box, from which the dialog marks the quoted passage. The two readers stay
side by side on purpose: the stored text (chunks, citations) is pypdf's, as it always was, and
PDFium's text is used only to find where on the page that text is.

Positions are fractions of the page (0–1, origin top left), so boxes from the text layer and
from Tesseract's word boxes fit an image of any resolution.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

log = logging.getLogger(__name__)

POINTS_PER_INCH = 72


class RenderError(ValueError):
    """PDFium could not open or draw the page; the message is Turkish."""


@dataclass(frozen=True)
class Word:
    """A word and its box, as fractions of the page's width and height (origin top left)."""

    text: str
    left: float
    top: float
    right: float
    bottom: float


def open_pdf(source: bytes | Path) -> pdfium.PdfDocument:
    """The PDF for drawing; an unreadable one is a `RenderError` (uploads were checked by pypdf first)."""
    try:
        return pdfium.PdfDocument(source if isinstance(source, bytes) else str(source))
    except pdfium.PdfiumError as exc:
        raise RenderError(f"PDF sayfası çizilemedi ({exc}).") from exc


def render_page(pdf: pdfium.PdfDocument, number: int, dpi: int, *, grayscale: bool = False) -> Image.Image:
    """Page `number` (1-based) at `dpi` as a Pillow image (grayscale for OCR)."""
    page = pdf[number - 1]
    try:
        return page.render(scale=dpi / POINTS_PER_INCH, grayscale=grayscale).to_pil()
    finally:
        page.close()


def text_words(pdf: pdfium.PdfDocument, number: int) -> list[Word]:
    """The words of page `number`'s text layer with their boxes, in reading order.

    PDFium's character boxes, joined into words at whitespace. A rotated page gives no words
    (its boxes would need turning with it): the dialog then shows the page without a mark.
    """
    page = pdf[number - 1]
    try:
        if page.get_rotation() % 360:
            return []
        left, bottom, right, top = page.get_cropbox()
        width, height = (right - left) or 1.0, (top - bottom) or 1.0
        textpage = page.get_textpage()
        try:
            words: list[Word] = []
            letters: list[str] = []
            box: list[float] = []

            def flush() -> None:
                if letters:
                    words.append(Word("".join(letters), (box[0] - left) / width, (top - box[3]) / height,
                                      (box[2] - left) / width, (top - box[1]) / height))
                letters.clear()
                box.clear()

            for index in range(textpage.count_chars()):
                char = chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, index) or 32)
                if char.isspace() or char in "\ufffe\uffff":
                    flush()
                    continue
                x0, y0, x1, y1 = textpage.get_charbox(index)
                if not letters:
                    box[:] = [x0, y0, x1, y1]
                else:
                    box[:] = [min(box[0], x0), min(box[1], y0), max(box[2], x1), max(box[3], y1)]
                letters.append(char)
            flush()
            return words
        finally:
            textpage.close()
    finally:
        page.close()
