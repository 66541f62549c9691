"""PDF bytes → normalised text per page, or a clear Turkish error saying why not.

pypdf reads the text layer page by page (memory stays bounded by one page's objects plus the
extracted text). A page without text — a scan — is then read by OCR (`ragcore.documents.ocr`)
when Tesseract is installed, and marked as such; a PDF can mix both kinds of page. Every
failure a user can cause — a file that is not a PDF, an encrypted, truncated one, or a scan
without OCR here — becomes a `PdfError` subclass whose message can be shown as is.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PdfStreamError

from ragcore.core import Page, Settings, normalize, sanitize
from ragcore.documents import ocr

log = logging.getLogger(__name__)
# pypdf warns about every repaired xref entry of real-world PDFs; the text is still right.
logging.getLogger("pypdf").setLevel(logging.ERROR)

PageProgress = Callable[[int, int], None]


class PdfError(ValueError):
    """A PDF that cannot be used; `str(exc)` is a Turkish message for the user."""


class EmptyFile(PdfError):
    def __init__(self) -> None:
        super().__init__("Dosya boş (0 bayt).")


class NotAPdf(PdfError):
    def __init__(self) -> None:
        super().__init__("Bu dosya bir PDF değil (uzantısı .pdf olsa bile içeriği PDF biçiminde değil).")


class EncryptedPdf(PdfError):
    def __init__(self) -> None:
        super().__init__("PDF parola ile şifrelenmiş; lütfen şifresiz bir kopyasını yükleyin.")


class CorruptPdf(PdfError):
    def __init__(self, detail: str = "") -> None:
        suffix = f" ({detail})" if detail else ""
        super().__init__(f"PDF bozuk ya da eksik (yarım kalmış indirme olabilir); okunamadı{suffix}.")


class NoTextLayer(PdfError):
    """No page has text: without OCR here the message names the packages to install; with OCR,
    Tesseract found no text either (a blank or unreadable scan), or the pages were too large to
    draw for it (`too_large`, named with the limits)."""

    def __init__(self, pages: int, *, ocr_tried: bool, too_large: Sequence[int] = ()) -> None:
        lead = f"PDF'in {pages} sayfasının hiçbirinde metin katmanı yok (taranmış belge olabilir)"
        large = (f"{_pages(too_large)} OCR ile okunamayacak kadar büyük (sınırlar: RENDER_MAX_MEGAPIXELS ve "
                 "OCR_MIN_DPI)")
        if too_large and len(too_large) == pages:
            super().__init__(f"{lead} ve {large}. Lütfen metin içeren ya da olağan sayfa boyutunda taranmış bir "
                             "PDF yükleyin.")
        elif ocr_tried:
            note = f"; {large}" if too_large else ""
            super().__init__(f"{lead} ve OCR ile de okunabilir metin bulunamadı (boş sayfalar ya da okunamayan "
                             f"bir tarama olabilir{note}). Lütfen daha net bir tarama ya da metin içeren bir PDF "
                             "yükleyin.")
        else:
            super().__init__(f"{lead}. {ocr.MISSING_MESSAGE} O zamana kadar lütfen metin içeren bir PDF yükleyin.")


def _pages(numbers: Sequence[int]) -> str:
    """[3] → "sayfa 3"; [2, 5] → "sayfa 2, 5"."""
    return "sayfa " + ", ".join(map(str, numbers))


class OcrFailed(PdfError):
    """Tesseract is installed but failed on a page."""


@dataclass(frozen=True)
class PdfText:
    """Pages with text (1-based numbers as printed in citations), the pages skipped as empty, and
    the title stored in the PDF's metadata (None when absent or unreadable). `ocr_pages` were
    read by OCR; `ocr_results` keeps Tesseract's reading of each (text and word boxes), for the
    page images of the cited-page dialog."""

    pages: list[Page]
    skipped_pages: list[int] = field(default_factory=list)
    page_count: int = 0
    title: str | None = None
    ocr_pages: list[int] = field(default_factory=list)
    ocr_results: dict[int, ocr.OcrPage] = field(default_factory=dict, compare=False, repr=False)
    too_large_for_ocr: list[int] = field(default_factory=list)  # skipped: too large to draw even at OCR_MIN_DPI


# --------------------------------------------------------------------------- normalisation

_LOWER = "a-zçğıöşüâîû"
_HYPHEN_WORD_RE = re.compile(rf"([{_LOWER}])-[ \t]*\n[ \t]*([{_LOWER}])")
_HYPHEN_NUMBER_RE = re.compile(r"(\d)-[ \t]*\n[ \t]*(\d)")
_SPACES_RE = re.compile(r"[ \t\f\v\u200b]+")
_PAGE_NUMBER_RE = re.compile(r"^\d{1,6}$")
# Some fonts emit "ğ" as a spacing breve next to g, or as a lone glyph between spaces.
_BREVE_RE = re.compile(r"g\u02d8|\u02d8g|g\u0306")
_BREVE_UPPER_RE = re.compile(r"G\u02d8|\u02d8G|G\u0306")
_LONE_G_RE = re.compile(r"(?<=\w) ğ (?=\w)")
_WORD_INITIAL_G_RE = re.compile(r"(?<=\w) ğ(?=\w)")  # no Turkish word starts with "ğ"
# "i şveren": a one-letter fragment before "ş" that is not itself a word. Only "o" is a
# one-letter Turkish word, and list markers ("a)") never match because of the space rule.
_SPLIT_S_RE = re.compile(rf"(?<![\w(])(?!o )([{_LOWER}]) (ş[{_LOWER}])")


def fix_broken_g(text: str) -> str:
    """Join "ğ" that a font split off its word ("ba ğ lı", "g˘")."""
    text = _BREVE_RE.sub("ğ", text)
    text = _BREVE_UPPER_RE.sub("Ğ", text)
    text = _LONE_G_RE.sub("ğ", text)
    return _WORD_INITIAL_G_RE.sub("ğ", text)


def fix_split_s(text: str) -> str:
    """Join "i şveren" → "işveren" but never "bu şekilde" (see docs/ingestion.md for the count)."""
    return _SPLIT_S_RE.sub(r"\1\2", text)


def normalize_page_text(raw: str) -> str:
    """pypdf output → clean lines: control characters, NFKC, hyphenation, spacing, fonts' broken
    ğ, page-number lines.

    Line breaks are kept: the chunker finds article headings and numbered paragraphs at line
    starts. A text layer may map glyphs to U+0000 or to lone surrogates; `sanitize` drops them
    here, so they never reach the database.
    """
    text = sanitize(raw).replace("\u00ad", "").replace("\r\n", "\n").replace("\r", "\n")
    text = fix_broken_g(text)  # before NFKC, which would turn a spacing breve into " ̆"
    text = normalize(text)
    text = _HYPHEN_WORD_RE.sub(r"\1\2", text)
    text = _HYPHEN_NUMBER_RE.sub(r"\1-\2", text)
    lines = [_SPACES_RE.sub(" ", line).strip() for line in text.split("\n")]
    lines = [line for line in lines if line]
    while lines and _PAGE_NUMBER_RE.match(lines[0]):
        lines.pop(0)
    while lines and _PAGE_NUMBER_RE.match(lines[-1]):
        lines.pop()
    text = "\n".join(lines)
    return fix_split_s(fix_broken_g(text))


# --------------------------------------------------------------------------- reading


def check_header(data: bytes) -> None:
    """The cheap checks (empty, not a PDF, cut off at the end) without parsing anything, for a
    front end that refuses a file before queueing it (the REST API); raises a `PdfError`."""
    _check_header(data)


def _check_header(data: bytes) -> None:
    if not data:
        raise EmptyFile()
    if b"%PDF-" not in data[:1024]:
        raise NotAPdf()
    if b"%%EOF" not in data[-2048:]:
        raise CorruptPdf("dosyanın sonu eksik")


def _open(data: bytes) -> PdfReader:
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
    except (PdfReadError, PdfStreamError, ValueError, KeyError, TypeError, OSError) as exc:
        raise CorruptPdf(type(exc).__name__) from exc
    if reader.is_encrypted:
        try:
            unlocked = reader.decrypt("")  # permission-only encryption opens with an empty password
        except (DependencyError, FileNotDecryptedError, PdfReadError, NotImplementedError) as exc:
            raise EncryptedPdf() from exc
        if not unlocked:
            raise EncryptedPdf()
    return reader


def _page_count(reader: PdfReader) -> int:
    try:
        count = len(reader.pages)
    except FileNotDecryptedError as exc:
        raise EncryptedPdf() from exc
    except Exception as exc:  # pypdf raises many types on broken page trees
        raise CorruptPdf(type(exc).__name__) from exc
    if count == 0:
        raise CorruptPdf("sayfa yok")
    return count


def metadata_title(reader: PdfReader) -> str | None:
    """The document information's /Title, if the PDF has a readable one (it is only a hint)."""
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception as exc:  # a broken info dictionary costs the hint, not the upload
        log.info("unreadable PDF metadata: %s", type(exc).__name__)
        return None
    if not title:
        return None
    return sanitize(str(title), single_line=True).strip() or None


def extract_pages(data: bytes, *, progress: PageProgress | None = None, ocr_progress: PageProgress | None = None,
                  use_ocr: bool = True, ocr_limits: ocr.OcrLimits | None = None,
                  page_sink: Callable[[Page], None] | None = None) -> PdfText:
    """Text of every page: the text layer's, or OCR's where a page has none; pages still empty
    are skipped and listed, a PDF without any text refused.

    `progress(done, total)` is called after each page of the text layer (Law 5510 takes
    seconds to read), `ocr_progress(done, total)` after each page read by OCR. Without
    Tesseract (`ocr.ocr_status()`) or with `use_ocr=False`, pages without a text layer are
    skipped as before. `ocr_limits` bound the OCR (an upload passes the settings'; the
    default settings' otherwise). `page_sink` gets each page of the text layer as soon as it is
    read (`ragcore.documents.pipeline` embeds the pages read so far meanwhile); pages read by OCR
    come only in the result.
    """
    _check_header(data)
    reader = _open(data)
    count = _page_count(reader)
    pages: list[Page] = []
    blank: list[int] = []
    if progress is not None:
        progress(0, count)  # the page count is known before the first (slow) page is read
    for index in range(count):
        try:
            raw = reader.pages[index].extract_text() or ""
        except FileNotDecryptedError as exc:
            raise EncryptedPdf() from exc
        except Exception as exc:  # a broken content stream is a corrupt PDF
            raise CorruptPdf(f"sayfa {index + 1}: {type(exc).__name__}") from exc
        text = normalize_page_text(raw)
        if text:
            pages.append(Page(number=index + 1, text=text))
            if page_sink is not None:
                page_sink(pages[-1])
        else:
            blank.append(index + 1)
        if progress is not None:
            progress(index + 1, count)
    limits = ocr_limits or ocr.OcrLimits.of(Settings())
    scan = _read_scanned(data, blank, ocr_progress, limits) if blank and use_ocr else None
    results = scan.pages if scan else None
    too_large = scan.too_large if scan else []
    recognised = {number: normalize_page_text(page.text) for number, page in (results or {}).items()}
    ocr_pages = [number for number in blank if recognised.get(number)]
    pages = sorted(pages + [Page(number, recognised[number], ocr=True) for number in ocr_pages],
                   key=lambda page: page.number)
    skipped = [number for number in blank if number not in ocr_pages]
    if not pages:
        raise NoTextLayer(count, ocr_tried=scan is not None, too_large=too_large)
    if ocr_pages:
        log.info("read %d page(s) by OCR: %s", len(ocr_pages), ocr_pages)
    if skipped:
        log.info("skipped %d page(s) without text: %s", len(skipped), skipped)
    return PdfText(pages=pages, skipped_pages=skipped, page_count=count, title=metadata_title(reader),
                   ocr_pages=ocr_pages, ocr_results={n: results[n] for n in ocr_pages} if results else {},
                   too_large_for_ocr=too_large)


def _read_scanned(data: bytes, numbers: list[int], progress: PageProgress | None,
                  limits: ocr.OcrLimits) -> ocr.ScanReading | None:
    """OCR of the pages without a text layer, or None when Tesseract is not installed here."""
    status = ocr.ocr_status()
    if not status.available:
        log.warning("%d page(s) without a text layer not read: %s", len(numbers), status.problem)
        return None
    try:
        return ocr.read_scanned(data, numbers, limits, progress=progress)
    except ocr.OcrError as exc:
        raise OcrFailed(str(exc)) from exc
