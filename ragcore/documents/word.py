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

A .docx is a ZIP of XML, and a few hundred kilobytes of it can unpack to a tree of gigabytes
(20 million empty paragraphs in a 220 KB file). So before python-docx builds any tree, every
part is streamed through a counting parser that builds nothing (`check_parts`) and the file is
refused at the first element past a cap (`WordLimits`: elements, paragraphs, nesting depth; the
unpacked size is checked from the ZIP's directory before that, the text read after). huge_tree
stays off in both parsers, entities are not resolved and a DOCTYPE is refused. What python-docx
then does per paragraph or per table cell in time that grows with the document (the default
style found by scanning every style, a merged cell found by walking up row by row) is read here
once per document (`_Styles`, `_rows`).
"""

from __future__ import annotations

import bisect
import io
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import docx
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml.ns import nsmap, qn
from docx.oxml.numbering import CT_NumPr
from docx.oxml.styles import CT_Style
from docx.oxml.table import CT_Tbl
from docx.oxml.text.paragraph import CT_P
from docx.styles import BabelFish
from lxml import etree

from ragcore.core import Chunk, Page, Settings, format_integer, normalize, sanitize
from ragcore.documents import packages
from ragcore.documents.chunking import joined_text
from ragcore.documents.formats import UnusableFile

log = logging.getLogger(__name__)

ParagraphProgress = Callable[[int, int], None]
_T = TypeVar("_T")
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
        super().__init__("Bu dosya bir ZIP paketi ama Word belgesi değil; Excel ya da PowerPoint dosyası da değil "
                         "(içinde word/document.xml, xl/workbook.xml ya da ppt/presentation.xml yok). Lütfen PDF, "
                         ".docx, .xlsx ya da .pptx yükleyin.")


class EmptyWord(WordError):
    def __init__(self) -> None:
        super().__init__("Word belgesinde okunacak metin yok (boş belge ya da yalnızca resimler).")


class WordTooLarge(WordError):
    """A .docx past one of the caps of `WordLimits`; the message names the cap and its setting."""


class WordWithDoctype(WordError):
    def __init__(self) -> None:
        super().__init__("Bu Word dosyasında Word'ün yazmadığı bir DOCTYPE bildirimi var; güvenlik için okunmadı. "
                         "Dosyayı Word'de açıp yeniden kaydedin ya da PDF olarak yükleyin.")


@dataclass(frozen=True)
class WordLimits:
    """The caps a .docx is read under (settings DOCX_MAX_*). Each keeps one small file from
    taking the worker's memory or time; a real 500-page manual stays well below each."""

    unpacked_mb: int
    elements: int
    paragraphs: int
    depth: int
    characters: int

    @classmethod
    def of(cls, settings: Settings) -> WordLimits:
        return cls(unpacked_mb=settings.docx_max_unpacked_mb, elements=settings.docx_max_elements,
                   paragraphs=settings.docx_max_paragraphs, depth=settings.docx_max_depth,
                   characters=settings.docx_max_characters)

    @property
    def unpacked_bytes(self) -> int:
        return self.unpacked_mb * 1024 * 1024

    @property
    def package(self) -> packages.PackageLimits:
        return packages.PackageLimits(unpacked_mb=self.unpacked_mb, elements=self.elements, depth=self.depth)


DEFAULT_LIMITS = WordLimits.of(Settings())


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


def check_package(data: bytes, limits: WordLimits = DEFAULT_LIMITS) -> None:
    """The cheap checks without parsing XML: a ZIP with word/document.xml whose parts do not
    unpack to more than `limits.unpacked_mb` by its directory (zipfile never yields more than
    the directory says). Raises a `WordError`."""
    entries = packages.members(data, CorruptWord)
    if "word/document.xml" not in {entry.filename for entry in entries}:
        raise NotAWordDocument()
    packages.check_unpacked(entries, limits.package, packages.WORD, WordTooLarge)


_PARAGRAPH_TAG = qn("w:p")


class _Paragraphs:
    """Counts paragraphs (w:p, in tables, headers and notes too) for the streaming counter."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def __call__(self, tag: str, attrib: dict[str, str]) -> None:
        if tag == _PARAGRAPH_TAG:
            self.count += 1
            if self.count > self.limit:
                raise WordTooLarge(f"Bu Word dosyası çok büyük: en fazla {format_integer(self.limit)} "
                                   "paragraf okunabiliyor, bu dosyada daha fazlası var (DOCX_MAX_PARAGRAPHS). Dosyayı "
                                   "birkaç parçaya bölerek yükleyin.")


def check_parts(data: bytes, limits: WordLimits = DEFAULT_LIMITS) -> None:
    """Every part of the package streamed through the counting parser (`packages.count_parts`)
    before python-docx parses any: refuses (`WordTooLarge`) a package past the element,
    paragraph or depth cap, summed over all parts, and a DOCTYPE (`WordWithDoctype`)."""
    counter = packages.Counter(limits.package, packages.WORD, WordTooLarge, WordWithDoctype,
                               watch=_Paragraphs(limits.paragraphs))
    packages.count_parts(data, counter, CorruptWord)


def _open(data: bytes, limits: WordLimits) -> docx.document.Document:
    check_package(data, limits)
    check_parts(data, limits)
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


# Word's nine list levels (0-8) and its largest "start at" value: anything outside is a forged
# numbering.xml, whose level tables or counters would otherwise grow with every paragraph.
_LEVELS = range(9)
_MAX_START = 32767


def _level(element: object) -> int | None:
    raw = element.get(qn("w:ilvl"), "0")  # type: ignore[attr-defined]
    return int(raw) if raw.isdigit() and len(raw) <= 2 and int(raw) in _LEVELS else None


def _start(raw: str | None) -> int:
    """A level's start value kept within ±32,767 (Word's dialog takes 0-32,767): a forged 10**9
    would make each "a, b, …" label 38 million letters long."""
    if not raw or not raw.lstrip("-").isdigit():
        return 1
    value = int(raw) if len(raw) <= 6 else -_MAX_START if raw.startswith("-") else _MAX_START
    return max(-_MAX_START, min(value, _MAX_START))


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
                if (level := _level(lvl)) is not None:
                    levels[level] = (_start(_val(lvl, "w:start")), _val(lvl, "w:numFmt") or "decimal",
                                     _val(lvl, "w:lvlText") or "")
            self.levels[abstract.get(qn("w:abstractNumId"))] = levels
        for num in root.findall(qn("w:num")):
            num_id = num.get(qn("w:numId"))
            self.abstract_of[num_id] = _val(num, "w:abstractNumId") or ""
            self.overrides[num_id] = {
                level: _start(_val(o, "w:startOverride")) for o in num.findall(qn("w:lvlOverride"))
                if (level := _level(o)) is not None and (_val(o, "w:startOverride") or "").isdigit()}

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


# --------------------------------------------------------------------------- styles


class _Styles:
    """What a paragraph's style says, worked out once per document: whether it makes a heading
    and which list numbers it. python-docx's `paragraph.style` looks the style up anew on every
    call, and for a paragraph without a style of its own it scans every style for the default
    (100,000 empty paragraphs held the worker for minutes); here a paragraph costs a dict look-up.

    python-docx's rules are kept: an unknown style id, or the id of a style that is not a
    paragraph style, means the default paragraph style (the last one marked default); a style's
    base is found by id whatever its type, the first style with an id wins. A `basedOn` cycle
    ends the walk (python-docx would walk it for ever)."""

    def __init__(self, document: docx.document.Document) -> None:
        self.by_id: dict[str, CT_Style] = {}
        self.paragraph_styles: set[CT_Style] = set()
        self.default: CT_Style | None = None
        for style in document.styles.element.style_lst:
            if style.type == WD_STYLE_TYPE.PARAGRAPH:
                self.paragraph_styles.add(style)
                if style.default:
                    self.default = style
            if style.styleId is not None:
                self.by_id.setdefault(style.styleId, style)
        self._heading: dict[CT_Style, bool | None] = {}
        self._num_pr: dict[CT_Style, CT_NumPr | None] = {}

    def of(self, p: CT_P) -> CT_Style | None:
        """The paragraph's style (python-docx's `paragraph.style`)."""
        style = self.by_id.get(p.style) if p.style else None
        return style if style in self.paragraph_styles else self.default

    def heading(self, style: CT_Style | None) -> bool:
        return bool(self._inherited(style, self._heading, _own_heading))

    def num_pr(self, style: CT_Style | None) -> CT_NumPr | None:
        return self._inherited(style, self._num_pr, _own_num_pr)

    def _inherited(self, style: CT_Style | None, memo: dict[CT_Style, _T | None],
                   own: Callable[[CT_Style], _T | None]) -> _T | None:
        """The first value `own` finds along the style's basedOn chain; every style walked is
        remembered, so each is worked out once per document."""
        path: list[CT_Style] = []
        value = None
        while style is not None and style not in path:
            if style in memo:
                value = memo[style]
                break
            path.append(style)
            value = own(style)
            if value is not None:
                break
            based_on = style.basedOn_val
            style = self.by_id.get(based_on) if based_on else None
        for walked in path:
            memo[walked] = value
        return value


def _own_heading(style: CT_Style) -> bool | None:
    """A heading style ("Title", "Heading 1" … — Word stores built-in names in English whatever
    the UI language; python-docx's BabelFish gives them as the UI names them), or an outline
    level on the style; None when the style says neither and its base decides."""
    name = style.name_val
    if name and _HEADING_STYLE_RE.match(BabelFish.internal2ui(name)):
        return True
    if style.pPr is not None and style.pPr.find(qn("w:outlineLvl")) is not None:
        return _val(style.pPr, "w:outlineLvl") != "9"  # 9 is Word's "body text"
    return None


def _own_num_pr(style: CT_Style) -> CT_NumPr | None:
    return style.pPr.numPr if style.pPr is not None else None


def _numbering_of(p: CT_P, style: CT_Style | None, styles: _Styles) -> tuple[str, int] | None:
    """(numId, ilvl) from the paragraph's own properties, else from its style's (and their bases')."""
    p_pr = p.pPr
    num_pr = p_pr.numPr if p_pr is not None else None
    if num_pr is None:
        num_pr = styles.num_pr(style)
    if num_pr is None or num_pr.numId is None or num_pr.numId.val in (None, 0):
        return None
    return str(num_pr.numId.val), int(num_pr.ilvl.val) if num_pr.ilvl is not None else 0


# --------------------------------------------------------------------------- headings and text


def _is_heading(p: CT_P, style: CT_Style | None, styles: _Styles) -> bool:
    """An outline level set on the paragraph, else its style's heading name or outline level."""
    p_pr = p.pPr
    if p_pr is not None and p_pr.find(qn("w:outlineLvl")) is not None:
        return _val(p_pr, "w:outlineLvl") != "9"
    return styles.heading(style)


# python-docx's `CT_P.text` with its XPath compiled once: `CT_P.text` compiles it on every call,
# most of a paragraph's reading time.
_RUNS = etree.XPath("w:r | w:hyperlink", namespaces={"w": nsmap["w"]})


def _text(p: CT_P) -> str:
    return "".join(run.text for run in _RUNS(p))


def _clean(text: str) -> list[str]:
    """A paragraph's text → its lines, like the PDF path's: control characters and NFKC, spaces
    collapsed, soft line breaks kept as lines, empty lines dropped."""
    if not text:
        return []
    text = normalize(sanitize(text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00ad", "")))
    lines = (_SPACES_RE.sub(" ", line).strip() for line in text.split("\n"))
    return [line for line in lines if line]


def _rows(tbl: CT_Tbl) -> Iterator[str]:
    """Each row's text, its cells joined by " | ": a cell spanning columns is given once, and a
    cell continuing a vertical merge gives the text of the cell it continues, as python-docx's
    `row.cells` gives them. Read here in one pass: `row.cells` repeats a spanning cell once per
    column it spans (a 36 KB file with one gridSpan of 300,000,000 took gigabytes) and finds a
    merged cell's origin by walking up row by row, recursively (quadratic in the rows, and a
    RecursionError after a few hundred). A continuing cell with no cell above it is empty."""
    above: dict[int, str] = {}  # grid column → text of the previous row's cell starting there
    for tr in tbl.tr_lst:
        row: dict[int, str] = {}
        column = tr.grid_before
        for tc in tr.tc_lst:
            if tc.vMerge == "continue":
                row[column] = above.get(column, "")
            else:
                row[column] = " ".join(_clean("\n".join(_text(p) for p in tc.p_lst)))
            column += tc.grid_span
        above = row
        text = " | ".join(cell for cell in dict.fromkeys(row.values()) if cell)
        if text:
            yield text


def _blocks(document: docx.document.Document) -> Iterator[tuple[str, bool]]:
    """(text, is heading) for every paragraph in reading order; a table row is one paragraph,
    its cells joined by " | " (a merged cell repeated across the row is given once)."""
    numbering = _Numbering(document)
    styles = _Styles(document)
    for block in document.element.body.inner_content_elements:
        if isinstance(block, CT_Tbl):
            for text in _rows(block):
                yield text, False
            continue
        text, style = _text(block), styles.of(block)
        numbered = _numbering_of(block, style, styles)
        if numbered is not None:
            label = numbering.label(*numbered)
            if label and text.strip():
                text = f"{label} {text}"
        yield text, _is_heading(block, style, styles)


def _read_blocks(document: docx.document.Document, limits: WordLimits) -> list[tuple[list[str], bool]]:
    """The non-empty blocks' lines, refused past `limits.characters`: list numbers and merged
    table cells repeat text the file holds once, so the text read can outgrow the file."""
    blocks, characters = [], 0
    for text, heading in _blocks(document):
        if lines := _clean(text):
            characters += sum(len(line) + 1 for line in lines)
            if characters > limits.characters:
                raise WordTooLarge(f"Bu Word dosyası çok büyük: en fazla {format_integer(limits.characters)} "
                                   "karakter metin okunabiliyor, bu dosyada daha fazlası var (DOCX_MAX_CHARACTERS). "
                                   "Dosyayı birkaç parçaya bölerek yükleyin.")
            blocks.append((lines, heading))
    return blocks


def _property_title(document: docx.document.Document) -> str | None:
    try:
        title = document.core_properties.title
    except Exception as exc:  # a broken docProps/core.xml costs the hint, not the upload
        log.info("unreadable .docx core properties: %s", type(exc).__name__)
        return None
    return sanitize(title or "", single_line=True).strip() or None


def extract_sections(data: bytes, limits: WordLimits = DEFAULT_LIMITS, *,
                     progress: ParagraphProgress | None = None) -> WordText:
    """The document's sections as pages, with every paragraph's place; refuses a .docx that is
    not a ZIP, holds no Word document, does not parse, is past one of `limits`, or has no text.

    `progress(done, total)` counts paragraphs (reading is quick; the count shows it moved).
    """
    document = _open(data, limits)
    try:
        blocks = _read_blocks(document, limits)
    except WordError:
        raise
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
