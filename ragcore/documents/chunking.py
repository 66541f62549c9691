"""Text → chunks of about CHUNK_SIZE characters that keep articles whole and pages exact.

Turkish laws and procedures are organised by article ("MADDE 10 –"). A question about one
article should retrieve that article, not half of it or a mix of two, so for documents with
article headings each article (with the headings printed above it) is its own segment: one
chunk when it fits, otherwise split at its numbered paragraphs "(1)", "(2)" and only then at
sentences. Text outside articles never crosses a page break, so every citation's page range
is exact. Plain prose (TQuAD) goes through the same sentence packer.

Invariant, tested: for every chunk, `text[c.char_start:c.char_end] == c.text`, where `text`
is the string given to `chunk_text`, or `joined_text(pages)[0]` for `chunk_pages`.

What the lexical index holds of a chunk (`lexical_texts`) is its text, and, for a chunk that
continues a long article, that article's heading lines below it: employees ask in words close
to the headings ("Kıdem tazminatı", "Yıllık ücretli izin"), which only the article's first
chunk prints. The chunk's text, the one shown and cited, does not change.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragcore.core import Chunk, Page

PAGE_SEPARATOR = "\n"
# An article may exceed CHUNK_SIZE by this factor and still stay one chunk.
ARTICLE_SLACK = 1.2
MAX_HEADING_LINES = 6

_UPPER = "A-ZÇĞİÖŞÜÂÎÛ"
_LOWER = "a-zçğıöşüâîû"
ARTICLE_RE = re.compile(
    rf"^(?:(?P<kind>GEÇİCİ|Geçici|EK|Ek|MÜKERRER|Mükerrer)[ \t]+)?(?:MADDE|Madde)[ \t]+"
    rf"(?P<num>\d+(?:/[{_UPPER}{_LOWER}])?)[ \t]*[–—-]",
    re.MULTILINE,
)
_PARAGRAPH_RE = re.compile(r"^\(\d+\)[ \t]", re.MULTILINE)
# The amendment tables printed after the last article ("… SAYILI KANUNA EK VE DEĞİŞİKLİK
# GETİREN MEVZUATIN … GÖSTERİR LİSTE") are not part of it.
_CLOSING_RE = re.compile(rf"^[^{_LOWER}\n]*(?:KANUNA|İŞLENEMEYEN|GÖSTERİR|DEĞİŞİKLİK GETİREN)[^{_LOWER}\n]*$", re.MULTILINE)
# A sentence ends at . ! ? … (and closing quotes/brackets) before whitespace and a capital, digit
# or opening bracket; TQuAD also glues sentences ("Musul).Astronom"), so a capitalised word
# right after the stop counts too ("T.C." does not: its "C" is not followed by a lowercase letter).
_SENTENCE_END_RE = re.compile(
    rf"[.!?…][\"”’')\]]*(?:\s+(?=[{_UPPER}0-9(\"“'‘])|(?=[{_UPPER}][{_LOWER}]))"
)
_LIST_BREAK_RE = re.compile(rf"(?:(?<=[;:])\s*\n|\n(?=\(?(?:\d{{1,3}}|[{_LOWER}])\)\s))")
_KIND_LABEL = {"geçici": "Geçici Madde", "ek": "Ek Madde", "mükerrer": "Mükerrer Madde"}


@dataclass(frozen=True)
class Segment:
    """A stretch of the text that chunks may not cross: one article, or one page outside articles."""

    start: int
    end: int
    article: str | None


# --------------------------------------------------------------------------- public API


def joined_text(pages: Sequence[Page]) -> tuple[str, list[int]]:
    """The pages joined with PAGE_SEPARATOR, and the offset where each page starts."""
    starts, offset = [], 0
    for page in pages:
        starts.append(offset)
        offset += len(page.text) + len(PAGE_SEPARATOR)
    return PAGE_SEPARATOR.join(page.text for page in pages), starts


def article_label(match: re.Match[str]) -> str:
    """"GEÇİCİ MADDE 1 –" → "Geçici Madde 1"; "MADDE 25/A –" → "Madde 25/A"."""
    kind = (match.group("kind") or "").replace("İ", "i").lower()
    return f"{_KIND_LABEL.get(kind, 'Madde')} {match.group('num').upper()}"


def chunk_pages(pages: Sequence[Page], size: int, overlap: int) -> list[Chunk]:
    """Article-aware chunks of a document's pages with exact page ranges."""
    _check_sizes(size, overlap)
    text, starts = joined_text(pages)
    numbers = [page.number for page in pages]

    def page_at(offset: int) -> int:
        return numbers[bisect.bisect_right(starts, offset) - 1]

    chunks: list[Chunk] = []
    for segment in segments(text, starts):
        for start, end in _chunk_segment(text, segment, size, overlap):
            chunks.append(
                Chunk(
                    ordinal=len(chunks),
                    text=text[start:end],
                    page_start=page_at(start),
                    page_end=page_at(end - 1),
                    article=segment.article,
                    char_start=start,
                    char_end=end,
                )
            )
    return chunks


def article_headings(texts: Sequence[str], articles: Sequence[str | None]) -> list[tuple[str, bool]]:
    """For a document's chunks in order: (its article's heading lines, whether the chunk starts the article).

    The chunker puts exactly one "MADDE n –" line in each article, at its top under the heading
    lines, so a chunk holding that line starts its article and the text above the line is the
    heading; the chunks after it with the same label continue the article. Outside articles,
    or when an article's first chunk is not among `texts`, the heading is "".
    """
    out: list[tuple[str, bool]] = []
    heading, previous = "", None
    for text, article in zip(texts, articles, strict=True):
        match = ARTICLE_RE.search(text) if article is not None else None
        if match is not None:
            heading = text[: match.start()].strip()
        elif article is None or article != previous:
            heading = ""
        out.append((heading, match is not None))
        previous = article
    return out


def lexical_texts(texts: Sequence[str], articles: Sequence[str | None]) -> list[str]:
    """What BM25 indexes for each of a document's chunks (in order): the text, and below it the
    heading lines of the article a continuation chunk belongs to (module docstring)."""
    return [f"{text}\n{heading}" if heading and not starts else text
            for text, (heading, starts) in zip(texts, article_headings(texts, articles), strict=True)]


def chunk_text(text: str, size: int, overlap: int) -> list[Chunk]:
    """Plain prose (no articles, one page) → sentence-packed chunks with spans into `text`."""
    _check_sizes(size, overlap)
    spans = pack_sentences(text, 0, len(text), size, overlap)
    return [
        Chunk(ordinal=i, text=text[s:e], page_start=1, page_end=1, article=None, char_start=s, char_end=e)
        for i, (s, e) in enumerate(spans)
    ]


# --------------------------------------------------------------------------- segments


def _check_sizes(size: int, overlap: int) -> None:
    if size < 50 or not 0 <= overlap < size:
        raise ValueError(f"chunk size {size} / overlap {overlap}: need size >= 50 and 0 <= overlap < size")


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _is_heading(line: str) -> bool:
    """A title line printed above an article ("BİRİNCİ BÖLÜM", "Amaç", "Kapsam ve istisnalar")."""
    line = line.strip()
    return (
        0 < len(line) <= 100
        and line[0].isupper()
        and line[-1] not in ".,;:"
        and not re.search(r"[\d:()]", line)
        and not _CLOSING_RE.match(line)
    )


def _heading_start(text: str, article_start: int, floor: int) -> int:
    """Walk back over heading lines above an article start (never past `floor`)."""
    start = article_start
    for _ in range(MAX_HEADING_LINES):
        if start <= floor:
            break
        previous = _line_start(text, start - 1)
        if previous < floor or not _is_heading(text[previous : start - 1]):
            break
        start = previous
    return start


def _boundaries(text: str) -> list[tuple[int, str | None]]:
    """(offset, article label or None) where a new segment begins, in order.

    A closing line (amendment table title) ends the article before it; it is never taken as
    a heading because `_is_heading` rejects it.
    """
    marks: list[tuple[int, str | None]] = []
    floor = 0
    for match in ARTICLE_RE.finditer(text):
        marks.append((_heading_start(text, match.start(), floor), article_label(match)))
        floor = match.end()
    marks.extend((m.start(), None) for m in _CLOSING_RE.finditer(text))
    marks.sort(key=lambda mark: mark[0])
    # consecutive closing lines form one title: keep only where it begins
    return [mark for i, mark in enumerate(marks) if mark[1] is not None or i == 0 or marks[i - 1][1] is not None]


def segments(text: str, page_starts: Sequence[int] = (0,)) -> list[Segment]:
    """Split the text into articles (which may span pages) and page-bounded unlabelled parts."""
    marks = _boundaries(text)
    if not marks or marks[0][0] > 0:
        marks.insert(0, (0, None))
    result: list[Segment] = []
    for (start, label), (end, _) in zip(marks, [*marks[1:], (len(text), None)], strict=True):
        if label is not None:
            result.append(Segment(start, end, label))
            continue
        cuts = sorted({start, end, *(p for p in page_starts if start < p < end)})
        result.extend(Segment(a, b, None) for a, b in zip(cuts, cuts[1:], strict=False))
    return [segment for segment in result if text[segment.start : segment.end].strip()]


# --------------------------------------------------------------------------- packing


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _chunk_segment(text: str, segment: Segment, size: int, overlap: int) -> list[tuple[int, int]]:
    start, end = _trim(text, segment.start, segment.end)
    if start >= end:
        return []
    if segment.article is None:
        return pack_sentences(text, start, end, size, overlap)
    if end - start <= size * ARTICLE_SLACK:
        return [(start, end)]
    return _pack_paragraphs(text, start, end, size, overlap)


def _pack_paragraphs(text: str, start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy packing of numbered paragraphs; a paragraph too long on its own is sentence-packed."""
    cuts = [start, *(m.start() for m in _PARAGRAPH_RE.finditer(text, start, end) if m.start() > start), end]
    blocks = [_trim(text, a, b) for a, b in zip(cuts, cuts[1:], strict=False)]
    blocks = [(a, b) for a, b in blocks if a < b]
    spans: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for a, b in blocks:
        if current is not None and b - current[0] <= size:
            current = (current[0], b)
            continue
        if current is not None:
            spans.append(current)
            current = None
        if b - a <= size:
            current = (a, b)
        else:
            spans.extend(pack_sentences(text, a, b, size, overlap))
    if current is not None:
        spans.append(current)
    return spans


def sentence_units(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Contiguous spans covering [start, end), each one sentence or list item."""
    cuts = {start, end}
    for regex in (_SENTENCE_END_RE, _LIST_BREAK_RE):
        cuts.update(m.end() for m in regex.finditer(text, start, end) if start < m.end() < end)
    ordered = sorted(cuts)
    return [(a, b) for a, b in zip(ordered, ordered[1:], strict=False)]


def pack_sentences(text: str, start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy sentence packing with sentence-level overlap; a hard cut only inside one long sentence."""
    units = [u for u in (_trim(text, a, b) for a, b in sentence_units(text, start, end)) if u[0] < u[1]]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(units):
        if units[i][1] - units[i][0] > size:
            spans.extend(_hard_cut(text, units[i][0], units[i][1], size, overlap))
            i += 1
            continue
        j = i
        while j + 1 < len(units) and units[j + 1][1] - units[i][0] <= size:
            j += 1
        spans.append((units[i][0], units[j][1]))
        if j + 1 >= len(units):
            break
        k = j + 1
        while k - 1 > i and units[j][1] - units[k - 1][0] <= overlap:
            k -= 1
        i = k
    return spans


def _hard_cut(text: str, start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows of at most `size` over one over-long sentence, cut at spaces where possible."""
    spans: list[tuple[int, int]] = []
    while start < end:
        stop = min(start + size, end)
        if stop < end:
            space = text.rfind(" ", start + size // 2, stop)
            stop = space if space > start else stop
        spans.append(_trim(text, start, stop))
        if stop >= end:
            break
        nxt = text.find(" ", max(stop - overlap, start + 1), stop)
        start = nxt + 1 if nxt != -1 else stop
    return [(a, b) for a, b in spans if a < b]
