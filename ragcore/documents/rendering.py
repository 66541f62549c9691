"""PDF pages drawn as images, and where each word of a page's text layer sits (pypdfium2).

pypdf reads and writes PDFs but does not draw them; pypdfium2 (a wheel that bundles Google's
PDFium, the renderer of Chrome) does both the drawing and the geometry: a page becomes a Pillow
image for OCR (`ragcore.documents.ocr`) and for the cited-page dialog, and its text page gives
every character's box, from which the dialog marks the quoted passage. The two readers stay
side by side on purpose: the stored text (chunks, citations) is pypdf's, as it always was, and
PDFium's text is used only to find where on the page that text is.

Positions are fractions of the page (0–1, origin top left), so boxes from the text layer and
from Tesseract's word boxes fit an image of any resolution.

Every drawing has a pixel budget (`PixelBudget`: RENDER_MAX_MEGAPIXELS, and the lowest dpi its
use accepts). A page box may be 5 metres wide (MediaBox 14400 pt: 24000 × 24000 px at 120 dpi,
1.7 GB as RGB), so the size is checked by arithmetic on the page's box (`PdfPage.get_size`)
before PDFium allocates anything: a page over the budget is drawn at the highest dpi that fits,
and one that would not fit even at the lowest dpi is refused (`PageTooLarge`, a Turkish message).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from ragcore.core import Settings, format_integer, format_number

log = logging.getLogger(__name__)

POINTS_PER_INCH = 72
POINTS_PER_CM = POINTS_PER_INCH / 2.54
MEGAPIXEL = 1_000_000


class RenderError(ValueError):
    """PDFium could not open or draw the page; the message is Turkish."""


@dataclass(frozen=True)
class PixelBudget:
    """How large one drawing may be: at most `max_pixels`, at no less than `min_dpi` (the setting
    `floor_setting`, named in the log); `use` says in Turkish what a refused page loses."""

    max_pixels: int
    min_dpi: int
    floor_setting: str
    use: str

    @classmethod
    def for_images(cls, settings: Settings) -> PixelBudget:
        """The page image of the cited-page dialog and of the API."""
        return cls(settings.render_max_megapixels * MEGAPIXEL, settings.page_image_min_dpi, "PAGE_IMAGE_MIN_DPI",
                   "Sayfa görüntü olarak gösterilemez; sayfanın metnini ya da tek sayfalık PDF'ini açın.")

    @classmethod
    def for_ocr(cls, settings: Settings) -> PixelBudget:
        """A scanned page drawn for Tesseract."""
        return cls(settings.render_max_megapixels * MEGAPIXEL, settings.ocr_min_dpi, "OCR_MIN_DPI",
                   "Sayfa OCR ile okunamaz.")


class PageTooLarge(RenderError):
    """The page would exceed its pixel budget even at the lowest dpi allowed: refused by arithmetic,
    before anything is drawn. The message, for any reader, says how large the page is, the limit
    and what to open instead; the settings that set the limit go to the log."""

    def __init__(self, number: int, width: float, height: float, budget: PixelBudget) -> None:
        needed = pixels(width, height, budget.min_dpi)
        super().__init__(
            f"Sayfa {number} çok büyük ({format_integer(width / POINTS_PER_CM)} × "
            f"{format_integer(height / POINTS_PER_CM)} cm): en düşük çözünürlükte ({budget.min_dpi} dpi) bile "
            f"çizimi {_megapixels(needed)} megapiksel tutar; bu sunucu bir sayfayı en fazla "
            f"{_megapixels(budget.max_pixels)} megapiksel çizer. {budget.use}")
        self.number = number


def _megapixels(count: int) -> str:
    """20_000_000 → "20"; 1_170_000 → "1,2" (a tenth where it shows the difference)."""
    value = count / MEGAPIXEL
    return format_integer(value) if value >= 10 or value == int(value) else format_number(value, 1)


def pixels(width: float, height: float, dpi: int) -> int:
    """Pixels of a `width` × `height` pt page drawn at `dpi`, rounded up as PDFium's bitmap is."""
    return math.ceil(width * dpi / POINTS_PER_INCH) * math.ceil(height * dpi / POINTS_PER_INCH)


def fitting_dpi(width: float, height: float, dpi: int, max_pixels: int) -> int:
    """The highest dpi up to `dpi` at which the page fits in `max_pixels` (0: not even at 1 dpi).

    Pixels grow with the square of the dpi, so the square root gives the answer up to the
    rounding of the bitmap's sides, which the two short walks settle."""
    if pixels(width, height, dpi) <= max_pixels:
        return dpi
    guess = min(dpi, max(0, int(dpi * math.sqrt(max_pixels / pixels(width, height, dpi)))))
    while guess > 0 and pixels(width, height, guess) > max_pixels:
        guess -= 1
    while guess + 1 < dpi and pixels(width, height, guess + 1) <= max_pixels:
        guess += 1
    return guess


def drawing_dpi(number: int, width: float, height: float, dpi: int, budget: PixelBudget) -> int:
    """The dpi page `number` is drawn at: `dpi`, or lower to stay within the budget; `PageTooLarge`
    when that would be below the budget's floor."""
    if not (math.isfinite(width) and math.isfinite(height)) or width <= 0 or height <= 0:
        raise RenderError(f"Sayfa {number} çizilemedi: sayfanın boyutu geçersiz.")
    fits = fitting_dpi(width, height, dpi, budget.max_pixels)
    if fits < min(dpi, budget.min_dpi) or fits < 1:
        log.info("page %d (%.0f x %.0f pt) not drawn: over RENDER_MAX_MEGAPIXELS (%d px) even at %s=%d", number,
                 width, height, budget.max_pixels, budget.floor_setting, budget.min_dpi)
        raise PageTooLarge(number, width, height, budget)
    if fits < dpi:
        log.info("page %d (%.0f x %.0f pt) drawn at %d dpi instead of %d: %d px over the budget of %d", number,
                 width, height, fits, dpi, pixels(width, height, dpi), budget.max_pixels)
    return fits


def page_dpi(pdf: pdfium.PdfDocument, number: int, dpi: int, budget: PixelBudget) -> int:
    """`drawing_dpi` of page `number` (1-based), from its box alone (the page is not loaded)."""
    width, height = pdf.get_page_size(number - 1)
    return drawing_dpi(number, width, height, dpi, budget)


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


def render_page(pdf: pdfium.PdfDocument, number: int, dpi: int, budget: PixelBudget, *,
                grayscale: bool = False) -> Image.Image:
    """Page `number` (1-based) as a Pillow image (grayscale for OCR), at `dpi` or as much lower as
    the budget needs; `image.info["dpi"]` says which. `PageTooLarge` before drawing anything.

    RGB comes straight from PDFium (`rev_byteorder`), so Pillow's one copy of the bitmap is the
    image, with no second conversion from BGR; PDFium's bitmap is freed when this returns."""
    page = pdf[number - 1]
    try:
        used = drawing_dpi(number, *page.get_size(), dpi, budget)
        image = page.render(scale=used / POINTS_PER_INCH, grayscale=grayscale, rev_byteorder=True).to_pil()
    finally:
        page.close()
    image.info["dpi"] = (used, used)
    return image


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
