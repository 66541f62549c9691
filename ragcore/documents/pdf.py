"""PDF bytes → normalised text per page, or a clear Turkish error saying why not.

pypdf reads the text layer page by page (memory stays bounded by one page's objects plus the
extracted text). Every failure a user can cause — a file that is not a PDF, an encrypted,
truncated or scanned one — becomes a `PdfError` subclass whose message can be shown as is.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PdfStreamError

from ragcore.core import Page, normalize, sanitize

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
    def __init__(self, pages: int) -> None:
        super().__init__(
            f"PDF'in {pages} sayfasının hiçbirinde metin katmanı yok (taranmış belge olabilir). "
            "OCR henüz desteklenmiyor; lütfen metin içeren bir PDF yükleyin."
        )


@dataclass(frozen=True)
class PdfText:
    """Pages with text (1-based numbers as printed in citations), the pages skipped as empty, and
    the title stored in the PDF's metadata (None when absent or unreadable)."""

    pages: list[Page]
    skipped_pages: list[int] = field(default_factory=list)
    page_count: int = 0
    title: str | None = None


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


def extract_pages(data: bytes, *, progress: PageProgress | None = None) -> PdfText:
    """Text of every page; empty pages are skipped and listed, a PDF without any text refused.

    `progress(done, total)` is called after each page (Law 5510 takes seconds to read).
    """
    _check_header(data)
    reader = _open(data)
    count = _page_count(reader)
    pages: list[Page] = []
    skipped: list[int] = []
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
        else:
            skipped.append(index + 1)
        if progress is not None:
            progress(index + 1, count)
    if not pages:
        raise NoTextLayer(count)
    if skipped:
        log.info("skipped %d page(s) without text: %s", len(skipped), skipped)
    return PdfText(pages=pages, skipped_pages=skipped, page_count=count, title=metadata_title(reader))
