"""PowerPoint (.pptx) bytes → one page per slide, its shapes' text in reading order and its
speaker notes, cited "slayt 7".

Training material lives in slides, and what the trainer says is often only in the notes, so a
slide's page holds the text of every shape (text boxes and placeholders, tables a row per line
with cells joined by " | " as a Word table's, the shapes inside groups) ordered top to bottom,
left to right, and then its notes under "Konuşmacı notları:". Each slide is chunked on its own
(`chunking.chunk_pages` over that one page), so a citation names exactly one slide; a chunk's
`page_start`/`page_end` is the slide's number as PowerPoint numbers it.

Hidden slides are not read (the presenter skips them; their numbers are kept for the document
card), and macro-enabled presentations (.pptm with a vbaProject.bin) are refused for the reason
`sheets` gives: the stored file is offered to every reader for download.

python-pptx parses every part of the package when it opens it, so the package first passes
`packages`' checks (unpacked size, XML nodes, depth, DOCTYPE), and the slides are counted
against PPTX_MAX_SLIDES from the package's directory and from the slide list before any is
parsed; the text read is counted against DOCX_MAX_CHARACTERS.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import pptx
from pptx.enum.shapes import MSO_SHAPE_TYPE

from ragcore.core import Chunk, Page, Settings, format_integer, normalize, sanitize
from ragcore.documents import packages
from ragcore.documents.chunking import chunk_pages, joined_text
from ragcore.documents.formats import UnusableFile

log = logging.getLogger(__name__)

NOTES_HEADING = "Konuşmacı notları:"
_SLIDE_PART_RE = re.compile(r"^ppt/slides/slide\d+\.xml$")
_SLIDE_ID_TAG = "{http://schemas.openxmlformats.org/presentationml/2006/main}sldId"
_SPACES_RE = re.compile(r"[ \t\f\v\u200b\u00a0]+")


class PowerPointError(UnusableFile):
    """A .pptx that cannot be used; `str(exc)` is a Turkish message for the user."""


class CorruptPowerPoint(PowerPointError):
    def __init__(self, detail: str = "") -> None:
        suffix = f" ({detail})" if detail else ""
        super().__init__(f"PowerPoint dosyası bozuk ya da eksik (yarım kalmış indirme olabilir); okunamadı{suffix}.")


class EmptyPowerPoint(PowerPointError):
    def __init__(self) -> None:
        super().__init__("PowerPoint sunusunun görünür slaytlarında okunacak metin yok (yalnızca resimler ya da "
                         "gizli slaytlar). Gizli slaytlar okunmaz.")


class MacroPowerPoint(PowerPointError):
    def __init__(self) -> None:
        super().__init__("Bu PowerPoint sunusu makro içeriyor (.pptm); güvenlik için makrolu dosyalar alınmıyor, "
                         "çünkü saklanan dosya belgeyi okuyan herkese indirilmek üzere sunulur. Lütfen PowerPoint'te "
                         "“Farklı Kaydet › PowerPoint Sunusu (.pptx)” ile makrosuz kaydedip yükleyin.")


class PowerPointTooLarge(PowerPointError):
    """A .pptx past one of the caps; the message names the cap and its setting."""


class PowerPointWithDoctype(PowerPointError):
    def __init__(self) -> None:
        super().__init__("Bu PowerPoint dosyasında PowerPoint'in yazmadığı bir DOCTYPE bildirimi var; güvenlik için "
                         "okunmadı. Dosyayı PowerPoint'te açıp yeniden kaydedin ya da PDF olarak yükleyin.")


@dataclass(frozen=True)
class SlideLimits:
    """The caps a .pptx is read under: the package caps, PPTX_MAX_SLIDES and DOCX_MAX_CHARACTERS."""

    package: packages.PackageLimits
    slides: int
    characters: int

    @classmethod
    def of(cls, settings: Settings) -> SlideLimits:
        return cls(package=packages.PackageLimits.of(settings), slides=settings.pptx_max_slides,
                   characters=settings.docx_max_characters)


DEFAULT_LIMITS = SlideLimits.of(Settings())


@dataclass(frozen=True)
class SlideText:
    """A .pptx read: one page per visible slide with text (numbered as PowerPoint numbers it),
    the numbers of the hidden slides (not read) and of the visible ones without text, the slide
    count and the title from the presentation's properties (None when empty)."""

    pages: list[Page]
    hidden: list[int]
    empty: list[int]
    slide_count: int
    title: str | None = None


# --------------------------------------------------------------------------- checks before python-pptx


def _too_many_slides(limit: int) -> PowerPointTooLarge:
    return PowerPointTooLarge(f"Bu PowerPoint sunusu çok büyük: en fazla {format_integer(limit)} slayt "
                              "okunabiliyor, bu sunuda daha fazlası var (PPTX_MAX_SLIDES). Sunuyu birkaç parçaya "
                              "bölerek yükleyin.")


class _SlideIds:
    """Counts the slide list's entries for the streaming counter (one slide part may be listed many times)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def __call__(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == _SLIDE_ID_TAG:
            self.count += 1
            if self.count > self.limit:
                raise _too_many_slides(self.limit)


def check_presentation(data: bytes, limits: SlideLimits = DEFAULT_LIMITS) -> None:
    """The checks before python-pptx opens the package: a ZIP with ppt/presentation.xml, no
    macros, at most `limits.slides` slide parts, within the unpacked size, and (streamed) within
    the node, depth and slide-list caps. Raises a `PowerPointError`."""
    entries = packages.members(data, CorruptPowerPoint)
    names = {entry.filename for entry in entries}
    if "ppt/presentation.xml" not in names:
        raise CorruptPowerPoint("ppt/presentation.xml yok")
    if any(name.lower().endswith("vbaproject.bin") for name in names):
        raise MacroPowerPoint()
    if sum(1 for name in names if _SLIDE_PART_RE.match(name)) > limits.slides:
        raise _too_many_slides(limits.slides)
    packages.check_unpacked(entries, limits.package, packages.POWERPOINT, PowerPointTooLarge)
    counter = packages.Counter(limits.package, packages.POWERPOINT, PowerPointTooLarge, PowerPointWithDoctype,
                               watch=_SlideIds(limits.slides))
    packages.count_parts(data, counter, CorruptPowerPoint)


# --------------------------------------------------------------------------- reading


def _clean(text: str) -> list[str]:
    """A text frame's or cell's text → its lines: control characters and NFKC, spaces collapsed,
    empty lines dropped (like the Word reader's)."""
    if not text:
        return []
    text = normalize(sanitize(text.replace("\r\n", "\n").replace("\r", "\n").replace("\v", "\n")
                              .replace("\u00ad", "")))
    lines = (_SPACES_RE.sub(" ", line).strip() for line in text.split("\n"))
    return [line for line in lines if line]


def _reading_order(shapes: Sequence) -> list:
    """Top to bottom, then left to right; a shape without a position keeps its place after them."""
    placed = [s for s in shapes if s.top is not None and s.left is not None]
    unplaced = [s for s in shapes if s.top is None or s.left is None]
    return sorted(placed, key=lambda s: (s.top, s.left)) + unplaced


def _table_lines(table) -> Iterator[str]:
    for row in table.rows:
        cells = [" ".join(_clean(cell.text)) for cell in row.cells if not cell.is_spanned]
        text = " | ".join(cell for cell in cells if cell)
        if text:
            yield text


def _shape_lines(shape) -> Iterator[str]:
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        for inner in _reading_order(list(shape.shapes)):
            yield from _shape_lines(inner)
    elif getattr(shape, "has_table", False) and shape.has_table:
        yield from _table_lines(shape.table)
    elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        yield from _clean(shape.text_frame.text)


def _notes_lines(slide) -> list[str]:
    if not slide.has_notes_slide:  # asking for `notes_slide` would create one
        return []
    frame = slide.notes_slide.notes_text_frame
    return _clean(frame.text) if frame is not None else []


def slide_lines(slide) -> list[str]:
    """A slide's text: its shapes in reading order, then its notes under NOTES_HEADING."""
    lines = [line for shape in _reading_order(list(slide.shapes)) for line in _shape_lines(shape)]
    notes = _notes_lines(slide)
    return lines + ([NOTES_HEADING, *notes] if notes else [])


def _title(presentation) -> str | None:
    try:
        title = presentation.core_properties.title
    except Exception as exc:  # a broken docProps/core.xml costs the hint, not the upload
        log.info("unreadable .pptx core properties: %s", type(exc).__name__)
        return None
    return sanitize(title or "", single_line=True).strip() or None


def _read(presentation, limits: SlideLimits) -> SlideText:
    pages, hidden, empty = [], [], []
    characters = 0
    slides = list(presentation.slides)
    if len(slides) > limits.slides:
        raise _too_many_slides(limits.slides)
    for number, slide in enumerate(slides, start=1):
        if slide._element.get("show") in ("0", "false"):  # python-pptx has no name for a hidden slide
            hidden.append(number)
            continue
        lines = slide_lines(slide)
        characters += sum(len(line) + 1 for line in lines)
        if characters > limits.characters:
            raise PowerPointTooLarge(f"Bu PowerPoint sunusu çok büyük: en fazla "
                                     f"{format_integer(limits.characters)} karakter metin okunabiliyor, bu sunuda "
                                     "daha fazlası var (DOCX_MAX_CHARACTERS). Sunuyu birkaç parçaya bölerek yükleyin.")
        if lines:
            pages.append(Page(number=number, text="\n".join(lines)))
        else:
            empty.append(number)
    return SlideText(pages=pages, hidden=hidden, empty=empty, slide_count=len(slides), title=_title(presentation))


def extract_slides(data: bytes, limits: SlideLimits = DEFAULT_LIMITS) -> SlideText:
    """The presentation's visible slides as pages; refuses a .pptx that is not a usable package,
    holds macros, is past one of `limits`, or has no text on a visible slide."""
    check_presentation(data, limits)
    try:
        presentation = pptx.Presentation(io.BytesIO(data))
        text = _read(presentation, limits)
    except PowerPointError:
        raise
    except Exception as exc:  # python-pptx and lxml raise many types on broken packages and XML
        raise CorruptPowerPoint(type(exc).__name__) from exc
    if not text.pages:
        raise EmptyPowerPoint()
    return text


# --------------------------------------------------------------------------- chunks and citations


def slide_label(number: int) -> str:
    """"slayt 7": a .pptx chunk's citation."""
    return f"slayt {number}"


def chunk_slides(text: SlideText, size: int, overlap: int) -> list[Chunk]:
    """Each slide's page chunked on its own (a chunk never spans two slides), cited by its slide;
    `char_start`/`char_end` index `joined_text(text.pages)[0]`, as `chunk_pages`' do."""
    _, starts = joined_text(text.pages)
    chunks: list[Chunk] = []
    for page, start in zip(text.pages, starts, strict=True):
        for chunk in chunk_pages([page], size, overlap):
            chunks.append(replace(chunk, ordinal=len(chunks), char_start=start + chunk.char_start,
                                  char_end=start + chunk.char_end, locator=slide_label(page.number)))
    return chunks
