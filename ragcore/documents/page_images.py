"""The cited page as it looks, with the quoted passage marked; and the cache behind it.

The page is drawn by PDFium (`ragcore.documents.rendering`) at DISPLAY_DPI and the passage's
words are found among the page's words: PDFium's character boxes on a page with a text layer,
Tesseract's word boxes on a page read by OCR. Finding them is a word alignment, not a text
search: the stored passage is pypdf's text after normalisation (hyphenation joined, fonts'
broken "ğ" repaired, line breaks re-flowed), which PDFium's raw text never equals character for
character, so `PdfTextPage.search` misses most real passages. difflib's SequenceMatcher over
the two word sequences (Turkish lower case, punctuation dropped) finds the runs they share; a
run of at least MIN_RUN words is marked, so a common word elsewhere on the page is not.

Cache, under DATA_DIR/page_images/<sha256>/ (0700; files 0600 from creation, written to a
temporary name and moved into place): `<n>.png`, the page drawn once; `<n>.ocr.json`,
Tesseract's reading of an OCR page, written at upload (the reading the stored chunks came
from) or on first view. The marked image is drawn per request from those, in memory. Nothing
here checks roles: `ragcore.documents.source_pages` does, before every call.

Memory: the page is drawn within the image pixel budget (`rendering.PixelBudget.for_images`:
RENDER_MAX_MEGAPIXELS, lowered to no less than PAGE_IMAGE_MIN_DPI), so a page too large is drawn
smaller or refused (`PageTooLarge`) before PDFium allocates anything; a refusal costs one look
at the page's box, so asking again costs nothing either. At most DRAWING_AT_ONCE page images are
made at a time in one process (measured: about 150 MB above the process's size for a page at the
default 20-megapixel budget: PDFium's RGB bitmap while Pillow copies it, then Pillow's image and
the one copy the passage is marked on), so many requests at once wait instead of adding up.
"""

from __future__ import annotations

import difflib
import io
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from ragcore.core import Settings, create_private, private_dir, words
from ragcore.documents import ocr
from ragcore.documents.rendering import (
    PageTooLarge,
    PixelBudget,
    Word,
    open_pdf,
    page_dpi,
    render_page,
    text_words,
)

log = logging.getLogger(__name__)

DISPLAY_DPI = 120  # an A4 page 992 px wide: the dialog's width, small print still legible
MIN_RUN = 3
MARK_FILL = (255, 200, 0, 96)
MARK_EDGE = (214, 120, 0, 255)
DRAWING_AT_ONCE = 2  # page images made at a time per process (2 cores; each up to ~150 MB at the budget)
_drawing = threading.BoundedSemaphore(DRAWING_AT_ONCE)


def cache_dir(settings: Settings, digest: str) -> Path:
    return settings.data_dir / "page_images" / digest


def remove_cache(settings: Settings, digest: str) -> None:
    """After the document is deleted: its pages' images and readings go too."""
    shutil.rmtree(cache_dir(settings, digest), ignore_errors=True)


def _write(path: Path, data: bytes) -> None:
    private_dir(path.parent.parent)
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        with create_private(tmp) as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _ocr_json(page: ocr.OcrPage) -> bytes:
    return json.dumps({"language": ocr.LANGUAGE, "dpi": page.dpi, "text": page.text,
                       "words": [[w.text, w.left, w.top, w.right, w.bottom] for w in page.words]},
                      ensure_ascii=False).encode()


def keep_ocr(settings: Settings, digest: str, results: Mapping[int, ocr.OcrPage]) -> None:
    """Store the upload's OCR readings, so the page dialog shows the text the chunks came from."""
    for number, page in results.items():
        _write(cache_dir(settings, digest) / f"{number}.ocr.json", _ocr_json(page))


def ocr_reading(settings: Settings, pdf_path: Path, digest: str, number: int) -> ocr.OcrPage:
    """Tesseract's reading of page `number`: the cached one, else read now and cached."""
    path = cache_dir(settings, digest) / f"{number}.ocr.json"
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
        return ocr.OcrPage(data["text"], tuple(Word(*w) for w in data["words"]), data.get("dpi", ocr.OCR_DPI))
    page = ocr.read_pages(pdf_path, [number], ocr.OcrLimits.of(settings))[number]
    _write(path, _ocr_json(page))
    return page


@dataclass(frozen=True)
class PageSizes:
    """A PDF's pages too large for their image at DISPLAY_DPI: `reduced` are drawn at a lower dpi,
    `refused` not at all (too large even at PAGE_IMAGE_MIN_DPI)."""

    reduced: list[int]
    refused: list[int]


def page_sizes(settings: Settings, source: bytes | Path) -> PageSizes:
    """Which pages' images will be drawn smaller or refused, told from the page boxes alone (an
    upload records them, so the document's card can say so before anyone opens a page)."""
    reduced, refused = [], []
    pdf = open_pdf(source)
    try:
        budget = PixelBudget.for_images(settings)
        for number in range(1, len(pdf) + 1):
            try:
                if page_dpi(pdf, number, DISPLAY_DPI, budget) < DISPLAY_DPI:
                    reduced.append(number)
            except PageTooLarge:
                refused.append(number)
    finally:
        pdf.close()
    if reduced or refused:
        log.info("page images drawn smaller: %s; too large to draw: %s", reduced, refused)
    return PageSizes(reduced, refused)


LISTED_PAGES = 10  # page numbers a note names before "…"


def _listed(numbers: Sequence[int]) -> str:
    shown = ", ".join(map(str, numbers[:LISTED_PAGES]))
    return f"s. {shown}, …" if len(numbers) > LISTED_PAGES else f"s. {shown}"


def _those(numbers: Sequence[int]) -> str:
    return "o sayfanın" if len(numbers) == 1 else "o sayfaların"


def size_notes(oversized: Sequence[int], undrawable: Sequence[int], too_large_for_ocr: Sequence[int] = ()) -> list[str]:
    """What the document's card (and the upload's summary) says about pages too large to draw:
    one Turkish sentence per kind, none when every page fits."""
    notes = []
    if oversized:
        notes.append(f"{len(oversized)} sayfa çok büyük ({_listed(oversized)}): sayfa görüntüsü küçültülerek gösterilir.")
    if undrawable:
        notes.append(f"{len(undrawable)} sayfa görüntü olarak gösterilemeyecek kadar büyük ({_listed(undrawable)}): "
                     f"{_those(undrawable)} metnini ya da tek sayfalık PDF'ini açın.")
    if too_large_for_ocr:
        notes.append(f"{len(too_large_for_ocr)} taranmış sayfa OCR ile okunamayacak kadar büyük "
                     f"({_listed(too_large_for_ocr)}); {_those(too_large_for_ocr)} metni aranamaz.")
    return notes


def page_render(settings: Settings, pdf_path: Path, digest: str, number: int) -> Image.Image:
    """Page `number` drawn at DISPLAY_DPI, or lower within the image pixel budget (cached as PNG)."""
    path = cache_dir(settings, digest) / f"{number}.png"
    if not path.is_file():
        pdf = open_pdf(pdf_path)
        try:
            image = render_page(pdf, number, DISPLAY_DPI, PixelBudget.for_images(settings))
        finally:
            pdf.close()
        if image.mode != "RGB":
            image = image.convert("RGB")
        out = io.BytesIO()
        image.save(out, "PNG", optimize=True)
        _write(path, out.getvalue())
        return image
    with Image.open(path) as cached:
        return cached.convert("RGB")


def passage_words(page_words: Sequence[Word], passage: str, min_run: int = MIN_RUN) -> list[Word]:
    """The page's words that belong to the passage: those in runs of at least `min_run` words
    shared with it, in page order (fewer for a passage shorter than that)."""
    tokens: list[str] = []
    owner: list[int] = []
    for index, word in enumerate(page_words):
        for token in words(word.text):
            tokens.append(token)
            owner.append(index)
    wanted = words(passage)
    if not tokens or not wanted:
        return []
    shortest = min(min_run, len(wanted))
    marked: set[int] = set()
    matcher = difflib.SequenceMatcher(None, tokens, wanted, autojunk=False)
    for block in matcher.get_matching_blocks():
        if block.size >= shortest:
            marked.update(owner[block.a: block.a + block.size])
    return [page_words[i] for i in sorted(marked)]


def _line_boxes(marked: Sequence[Word]) -> list[list[float]]:
    """Marked words joined into one box per stretch of a line (words side by side, overlapping heights)."""
    boxes: list[list[float]] = []
    for word in marked:
        last = boxes[-1] if boxes else None
        if last and word.left >= last[0] and min(word.bottom, last[3]) - max(word.top, last[1]) > 0.5 * (
                word.bottom - word.top):
            last[2], last[1], last[3] = max(last[2], word.right), min(last[1], word.top), max(last[3], word.bottom)
        else:
            boxes.append([word.left, word.top, word.right, word.bottom])
    return boxes


def mark(image: Image.Image, marked: Sequence[Word]) -> Image.Image:
    """A copy of `image` with a translucent highlight over each marked stretch of a line.

    Drawn in Pillow's blending mode (`ImageDraw.Draw(copy, "RGBA")` on an RGB image) rather than
    on a transparent overlay composited over an RGBA copy: one copy of the page in memory
    instead of four."""
    marked_image = image.copy() if image.mode == "RGB" else image.convert("RGB")
    width, height = marked_image.size
    draw = ImageDraw.Draw(marked_image, "RGBA")
    pad = max(1, round(width * 0.002))
    for left, top, right, bottom in _line_boxes(marked):
        draw.rectangle((left * width - pad, top * height - pad, right * width + pad, bottom * height + pad),
                       fill=MARK_FILL, outline=MARK_EDGE, width=1)
    return marked_image


def marked_png(settings: Settings, pdf_path: Path, digest: str, number: int, passage: str, *,
               ocr_page: bool) -> tuple[bytes, int]:
    """(PNG of page `number` with `passage` marked, how many of its words were marked).
    `PageTooLarge` when the page is too large to draw even at PAGE_IMAGE_MIN_DPI."""
    with _drawing:
        return _marked_png(settings, pdf_path, digest, number, passage, ocr_page=ocr_page)


def _marked_png(settings: Settings, pdf_path: Path, digest: str, number: int, passage: str, *,
                ocr_page: bool) -> tuple[bytes, int]:
    image = page_render(settings, pdf_path, digest, number)
    if ocr_page:
        page_words: Sequence[Word] = ocr_reading(settings, pdf_path, digest, number).words
    else:
        pdf = open_pdf(pdf_path)
        try:
            page_words = text_words(pdf, number)
        finally:
            pdf.close()
    marked = passage_words(page_words, passage) if passage else []
    out = io.BytesIO()
    mark(image, marked).save(out, "PNG")
    return out.getvalue(), len(marked)
