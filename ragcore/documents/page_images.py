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
"""

from __future__ import annotations

import difflib
import io
import json
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from PIL import Image, ImageDraw

from ragcore.core import Settings, create_private, private_dir, words
from ragcore.documents import ocr
from ragcore.documents.rendering import Word, open_pdf, render_page, text_words

DISPLAY_DPI = 120  # an A4 page 992 px wide: the dialog's width, small print still legible
MIN_RUN = 3
MARK_FILL = (255, 200, 0, 96)
MARK_EDGE = (214, 120, 0, 255)


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
    return json.dumps({"language": ocr.LANGUAGE, "dpi": ocr.OCR_DPI, "text": page.text,
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
        return ocr.OcrPage(data["text"], tuple(Word(*w) for w in data["words"]))
    page = ocr.read_pages(pdf_path, [number])[number]
    _write(path, _ocr_json(page))
    return page


def page_render(settings: Settings, pdf_path: Path, digest: str, number: int) -> Image.Image:
    """Page `number` drawn at DISPLAY_DPI (cached as PNG)."""
    path = cache_dir(settings, digest) / f"{number}.png"
    if not path.is_file():
        pdf = open_pdf(pdf_path)
        try:
            image = render_page(pdf, number, DISPLAY_DPI).convert("RGB")
        finally:
            pdf.close()
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
    """`image` with a translucent highlight over each marked stretch of a line."""
    width, height = image.size
    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    pad = max(1, round(width * 0.002))
    for left, top, right, bottom in _line_boxes(marked):
        draw.rectangle((left * width - pad, top * height - pad, right * width + pad, bottom * height + pad),
                       fill=MARK_FILL, outline=MARK_EDGE, width=1)
    return Image.alpha_composite(image.convert("RGBA"), overlay).convert("RGB")


def marked_png(settings: Settings, pdf_path: Path, digest: str, number: int, passage: str, *,
               ocr_page: bool) -> tuple[bytes, int]:
    """(PNG of page `number` with `passage` marked, how many of its words were marked)."""
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
