"""Word (.docx) bytes → the chunker's pages, one per section, and where each paragraph sits.

A .docx has no pages, so its citations name a section and a paragraph instead. A section is a
heading paragraph (style "Title" or "Heading n", or an outline level) and the paragraphs after
it up to the next heading; the paragraphs before the first heading form a section of their own.
Each section becomes one `Page` whose `number` is the section's (1-based) and whose text is its
paragraphs, one per line, so the article-aware chunker (`chunking.chunk_pages`) sees "MADDE 3 –"
and the headings above it at line starts exactly as in a PDF's text, and text outside articles
never crosses a section. `locate` then gives every chunk its label ("§ BİRİNCİ BÖLÜM · paragraf
2–3"), stored on the chunk and shown instead of "s. n".

python-docx reads the package (it is kept, and it parses with lxml, whose default parser does
not resolve external entities). What python-docx does not give is the text of automatic
numbering: a paragraph numbered by Word ("(1)", "a)") holds no such characters, yet the chunker
splits long articles at "(1)". `_Numbering` renders the common formats from numbering.xml;
anything rarer falls back to decimal digits.
"""

from __future__ import annotations

import bisect
import io
import logging
import re
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import docx
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph as DocxParagraph

from ragcore.core import Chunk, Page, normalize, sanitize
from ragcore.documents.chunking import joined_text
from ragcore.documents.formats import UnusableFile

log = logging.getLogger(__name__)

ParagraphProgress = Callable[[int, int], None]
# The XML parts of one .docx may unpack to at most this much: a ZIP bomb is refused before parsing.
MAX_UNPACKED_BYTES = 512 * 1024 * 1024
MAX_HEADING_CHARS = 60
BEFORE_FIRST_HEADING = "Belgenin başı"

_SPACES_RE = re.compile(r"[ \t\f\v\u200b\u00a0]+")
_HEADING_STYLE_RE = re.compile(r"^(?:Title|Heading \d)$")


class WordError(UnusableFile):
    """A .docx that cannot be used; `str(exc)` is a Turkish message for the user."""


class CorruptWord(WordError):
    def __init__(self, detail: str = "") -> None:
        suffix = f" ({detail})" if detail else ""
        super().__init__(f"Word dosyası bozuk ya da eksik (yarım kalmış indirme olabilir); okunamadı{suffix}.")


class NotAWordDocument(WordError):
    def __init__(self) -> None:
        super().__init__("Bu dosya bir ZIP paketi ama Word belgesi değil (içinde word/document.xml yok; Excel ya da "
                         "PowerPoint dosyası olabilir). Lütfen PDF ya da .docx yükleyin.")


class EmptyWord(WordError):
    def __init__(self) -> None:
        super().__init__("Word belgesinde okunacak metin yok (boş belge ya da yalnızca resimler).")


@dataclass(frozen=True)
class Paragraph:
    """Where one paragraph of the document sits: its section (= its page's number), its number
    inside the section (1-based, the heading not counted: 0 for the heading itself), and its
    span in `joined_text(pages)[0]`."""

    section: int
    number: int
    start: int
    end: int


@dataclass(frozen=True)
class WordText:
    """A .docx read for the chunker: one page per section, every section's heading (None for
    the text before the first heading), every paragraph's place, and the title from the
    document's properties (None when empty)."""

    pages: list[Page]
    headings: list[str | None]
    paragraphs: list[Paragraph]
    title: str | None = None

    @property
    def section_count(self) -> int:
        return len(self.pages)


# --------------------------------------------------------------------------- checks


def check_package(data: bytes) -> None:
    """The cheap checks without parsing XML: a ZIP with word/document.xml that does not unpack
    to more than MAX_UNPACKED_BYTES. Raises a `WordError`."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            members = package.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError) as exc:
        raise CorruptWord(type(exc).__name__) from exc
    names = {member.filename for member in members}
    if "word/document.xml" not in names:
        raise NotAWordDocument()
    if sum(member.file_size for member in members) > MAX_UNPACKED_BYTES:
        raise CorruptWord("açıldığında olağan dışı büyük")


def _open(data: bytes) -> docx.document.Document:
    check_package(data)
    try:
        return docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx and lxml raise many types on broken packages and XML
        raise CorruptWord(type(exc).__name__) from exc


# --------------------------------------------------------------------------- numbering


_ROMAN = [(1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"),
          (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i")]


def _roman(n: int) -> str:
    out = []
    for value, letters in _ROMAN:
        count, n = divmod(n, value)
        out.append(letters * count)
    return "".join(out)


def _letters(n: int) -> str:
    """Word's letter numbering: a … z, then aa … zz."""
    return chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)


def _format(n: int, fmt: str) -> str:
    if fmt == "lowerLetter":
        return _letters(n)
    if fmt == "upperLetter":
        return _letters(n).upper()
    if fmt == "lowerRoman":
        return _roman(n)
    if fmt == "upperRoman":
        return _roman(n).upper()
    if fmt == "decimalZero":
        return f"{n:02d}"
    return str(n)


def _val(element: object, tag: str) -> str | None:
    child = element.find(qn(tag)) if element is not None else None  # type: ignore[attr-defined]
    return None if child is None else child.get(qn("w:val"))


class _Numbering:
    """The label Word draws before a numbered paragraph ("(2)", "b)", "3.1."), with counters
    kept per abstract list as Word keeps them (lists sharing one continue each other)."""

    def __init__(self, document: docx.document.Document) -> None:
        self.levels: dict[str, dict[int, tuple[int, str, str]]] = {}  # abstract id → ilvl → (start, fmt, text)
        self.abstract_of: dict[str, str] = {}
        self.overrides: dict[str, dict[int, int]] = {}
        self.counters: dict[str, dict[int, int]] = {}
        self.seen: set[str] = set()
        try:
            root = document.part.numbering_part.element
        except (KeyError, NotImplementedError):  # no numbering part: nothing is numbered
            return
        for abstract in root.findall(qn("w:abstractNum")):
            levels = {}
            for lvl in abstract.findall(qn("w:lvl")):
                start = _val(lvl, "w:start")
                levels[int(lvl.get(qn("w:ilvl"), "0"))] = (
                    int(start) if start and start.lstrip("-").isdigit() else 1,
                    _val(lvl, "w:numFmt") or "decimal", _val(lvl, "w:lvlText") or "")
            self.levels[abstract.get(qn("w:abstractNumId"))] = levels
        for num in root.findall(qn("w:num")):
            num_id = num.get(qn("w:numId"))
            self.abstract_of[num_id] = _val(num, "w:abstractNumId") or ""
            self.overrides[num_id] = {
                int(o.get(qn("w:ilvl"), "0")): int(_val(o, "w:startOverride"))
                for o in num.findall(qn("w:lvlOverride")) if (_val(o, "w:startOverride") or "").isdigit()}

    def label(self, num_id: str, ilvl: int) -> str:
        abstract = self.abstract_of.get(num_id)
        levels = self.levels.get(abstract or "")
        if not levels or ilvl not in levels:
            return ""
        counters = self.counters.setdefault(abstract, {})
        if num_id not in self.seen:  # a restarted list: its overrides apply from its first paragraph
            self.seen.add(num_id)
            for level, start in self.overrides.get(num_id, {}).items():
                counters[level] = start - 1
        start, fmt, text = levels[ilvl]
        counters[ilvl] = counters.get(ilvl, start - 1) + 1
        for deeper in [level for level in counters if level > ilvl]:
            del counters[deeper]
        if fmt == "bullet":
            return "•"
        if fmt == "none":
            return ""

        def level_text(match: re.Match[str]) -> str:
            level = int(match.group(1)) - 1
            level_start, level_fmt, _ = levels.get(level, (1, "decimal", ""))
            return _format(counters.get(level, level_start), level_fmt)

        return re.sub(r"%(\d)", level_text, text).strip()


def _numbering_of(paragraph: DocxParagraph) -> tuple[str, int] | None:
    """(numId, ilvl) from the paragraph's own properties, else from its style's (and their bases')."""
    p_pr = paragraph._p.pPr
    num_pr = p_pr.numPr if p_pr is not None else None
    style = paragraph.style
    while num_pr is None and style is not None:
        style_pr = style.element.pPr
        num_pr = style_pr.numPr if style_pr is not None else None
        style = style.base_style
    if num_pr is None or num_pr.numId is None or num_pr.numId.val in (None, 0):
        return None
    return str(num_pr.numId.val), int(num_pr.ilvl.val) if num_pr.ilvl is not None else 0


# --------------------------------------------------------------------------- headings and text


def _is_heading(paragraph: DocxParagraph) -> bool:
    """A heading style ("Title", "Heading 1" … — Word stores built-in names in English whatever
    the UI language) or an outline level set on the paragraph or its styles."""
    style = paragraph.style
    p_pr = paragraph._p.pPr
    if p_pr is not None and p_pr.find(qn("w:outlineLvl")) is not None:
        return _val(p_pr, "w:outlineLvl") != "9"  # 9 is Word's "body text"
    while style is not None:
        if _HEADING_STYLE_RE.match(style.name or ""):
            return True
        style_pr = style.element.pPr
        if style_pr is not None and style_pr.find(qn("w:outlineLvl")) is not None:
            return _val(style_pr, "w:outlineLvl") != "9"
        style = style.base_style
    return False


def _clean(text: str) -> list[str]:
    """A paragraph's text → its lines, like the PDF path's: control characters and NFKC, spaces
    collapsed, soft line breaks kept as lines, empty lines dropped."""
    text = normalize(sanitize(text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00ad", "")))
    lines = (_SPACES_RE.sub(" ", line).strip() for line in text.split("\n"))
    return [line for line in lines if line]


def _blocks(document: docx.document.Document) -> Iterator[tuple[str, bool]]:
    """(text, is heading) for every paragraph in reading order; a table row is one paragraph,
    its cells joined by " | " (a merged cell repeated across the row is given once)."""
    numbering = _Numbering(document)
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            for row in block.rows:
                cells = list(dict.fromkeys(" ".join(_clean(cell.text)) for cell in row.cells))
                text = " | ".join(cell for cell in cells if cell)
                if text:
                    yield text, False
            continue
        text = block.text
        numbered = _numbering_of(block)
        if numbered is not None:
            label = numbering.label(*numbered)
            if label and text.strip():
                text = f"{label} {text}"
        yield text, _is_heading(block)


def _property_title(document: docx.document.Document) -> str | None:
    try:
        title = document.core_properties.title
    except Exception as exc:  # a broken docProps/core.xml costs the hint, not the upload
        log.info("unreadable .docx core properties: %s", type(exc).__name__)
        return None
    return sanitize(title or "", single_line=True).strip() or None


def extract_sections(data: bytes, *, progress: ParagraphProgress | None = None) -> WordText:
    """The document's sections as pages, with every paragraph's place; refuses a .docx that is
    not a ZIP, holds no Word document, does not parse, or has no text.

    `progress(done, total)` counts paragraphs (reading is quick; the count shows it moved).
    """
    document = _open(data)
    try:
        blocks = [(lines, heading) for text, heading in _blocks(document) if (lines := _clean(text))]
    except Exception as exc:  # malformed XML inside a part that python-docx opened lazily
        raise CorruptWord(type(exc).__name__) from exc
    if not blocks:
        raise EmptyWord()
    if progress is not None:
        progress(0, len(blocks))
    sections: list[list[str]] = []
    headings: list[str | None] = []
    places: list[tuple[int, int, int, int]] = []  # (section, number, offset in its page, length)
    number = offset = 0
    for index, (lines, heading) in enumerate(blocks):
        if heading or not sections:
            sections.append([])
            headings.append(" ".join(lines) if heading else None)
            number = offset = 0
        number += 0 if heading else 1
        length = len("\n".join(lines))
        places.append((len(sections), 0 if heading else number, offset, length))
        sections[-1].extend(lines)
        offset += length + 1
        if progress is not None and (index + 1) % 200 == 0:
            progress(index + 1, len(blocks))
    if progress is not None:
        progress(len(blocks), len(blocks))
    pages = [Page(number=i + 1, text="\n".join(lines)) for i, lines in enumerate(sections)]
    _, starts = joined_text(pages)
    paragraphs = [Paragraph(section, number, starts[section - 1] + offset, starts[section - 1] + offset + length)
                  for section, number, offset, length in places]
    return WordText(pages=pages, headings=headings, paragraphs=paragraphs, title=_property_title(document))


# --------------------------------------------------------------------------- citations


def section_label(heading: str | None, first: int, last: int) -> str:
    """"§ BİRİNCİ BÖLÜM · paragraf 2" ("paragraf 2–4" for a range; the heading alone for a
    chunk of headings only, `first` 0): what a .docx citation says instead of "s. n". A long
    heading is cut at a word."""
    name = heading or BEFORE_FIRST_HEADING
    if len(name) > MAX_HEADING_CHARS:
        name = name[:MAX_HEADING_CHARS].rsplit(" ", 1)[0] + "…"
    if first == 0:
        return f"§ {name}"
    numbers = str(first) if first == last else f"{first}–{last}"
    return f"§ {name} · paragraf {numbers}"


def locate(chunks: Sequence[Chunk], text: WordText) -> list[Chunk]:
    """The chunks with their section label (`Chunk.locator`).

    A chunk is cited at its first body paragraph (the headings printed above an article belong
    to its chunk, but the reader looks for the paragraph after them), up to its last paragraph
    when that one is in the same section.
    """
    starts = [p.start for p in text.paragraphs]
    located = []
    for chunk in chunks:
        first_index = max(bisect.bisect_right(starts, chunk.char_start) - 1, 0)
        last_index = max(bisect.bisect_right(starts, chunk.char_end - 1) - 1, first_index)
        inside = text.paragraphs[first_index : last_index + 1]
        body = [p for p in inside if p.number > 0] or inside
        first = body[0]
        last = max((p.number for p in body if p.section == first.section), default=first.number)
        located.append(replace(chunk, locator=section_label(text.headings[first.section - 1], first.number, last)))
    return located
