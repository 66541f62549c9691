"""The quotable units of a chunk ("cümleler"), and the verbatim window a long one is clipped to.

A unit is a sentence as the chunker cuts it (`ragcore.documents.chunking.sentence_units`: one rule
for sentence ends in the whole app), re-joined where the text goes on: a legal list stays one
sentence ("…hizmet süresi; a) … ondört günden, b) … yirmi günden, c) … Az olamaz." is one unit,
as Turkish grammar has it). Headings ("MADDE 14 – İş kazası …" alone, a title line, an amendment
note) and fragments too short to answer anything are never quoted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragcore.core import Source, prefix_tokens, turkish_lower
from ragcore.documents import ARTICLE_RE, sentence_units

MAX_CHARS = 400  # a quote is at most this long; pieces of a unit are re-joined only up to it
MIN_CHARS = 12  # shorter pieces ("(2)", "a) İşveren;", "Az olamaz.") answer nothing on their own
ELLIPSIS = "…"

_CLOSERS = "\"”’')]»"
_TERMINAL = ".!?…"
_LEAD_IN = ":;"
# A stop after an initial, a Roman numeral or a title is not a sentence end ("Papa X. Leo",
# "Muhammed b. Musa", "Hz. Ali"); the chunker may still cut there, the quote must not.
_ABBREVIATION_END = re.compile(
    r"(?:^|[\s(])(?:[A-ZÇĞİÖŞÜ]|[IVXLC]+|b|Hz|Dr|Prof|Doç|St|vb|vs|bkz|Sn|No|Yrd|Av|Müh|Op|Uzm|Mr|Mrs)\.$")
# An amendment note printed inside a law's text: "(Ek cümle: 10/9/2014-6552/5 md.)".
_AMENDMENT = re.compile(r"^\((?:Ek|Değişik|Mülga|İptal|Yeniden düzenleme)[^()]*(?:\([^()]*\)[^()]*)*\)$")
_UPPER_START = re.compile(r"^[A-ZÇĞİÖŞÜÂÎÛ]")
_ARTICLE_MARKER_END = re.compile(r"(?:MADDE|Madde)\s+\d+(?:/[A-Za-zÇĞİÖŞÜçğıöşü])?\s*[–—-]$")


@dataclass(frozen=True)
class Candidate:
    """One quotable unit of a source: a sentence, or a legal list kept as the sentence it is."""

    number: int  # 1-based position of its source in the context
    text: str  # verbatim, whitespace collapsed
    position: int  # index among its source's units


def _ending(text: str) -> str:
    """The last character that is not a closing quote or bracket."""
    stripped = text.rstrip().rstrip(_CLOSERS)
    return stripped[-1:] if stripped else ""


def _is_heading(text: str) -> bool:
    """A title, an article marker with its title ("… bildirimi MADDE 14 –"), or an amendment note."""
    if _AMENDMENT.match(text):
        return True
    if _ARTICLE_MARKER_END.search(text):
        return True
    # a title line: capitalised, short, no digits, no closing punctuation ("Kapsam ve istisnalar")
    return (_ending(text) not in _TERMINAL + _LEAD_IN + ",)" and len(text) <= 120
            and not re.search(r"\d", text) and bool(_UPPER_START.match(text)))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the quotable units of `text`, in order (headings included; see `split_sentences`).

    The chunker's sentence and list-item units (`ragcore.documents.chunking.sentence_units`: one rule for
    sentence ends in the whole app), cut after an article marker "MADDE n –" so the heading stands
    alone, then re-joined where the text goes on: a piece ending in "," or without a stop, a lead-in
    ending in ":" / ";", or a stop after an initial, is continued by the next piece (never across
    an article marker or a blank line) while the whole fits MAX_CHARS.
    """
    cuts = {0, len(text)}
    for start, end in sentence_units(text, 0, len(text)):
        cuts.update((start, end))
    markers = {m.end() for m in ARTICLE_RE.finditer(text)}
    cuts.update(markers)
    pieces = []
    ordered = sorted(cuts)
    for start, end in zip(ordered, ordered[1:], strict=False):
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            pieces.append((start, end))
    spans: list[tuple[int, int]] = []
    for start, end in pieces:
        if spans:
            prev_start, prev_end = spans[-1]
            previous = text[prev_start:prev_end]
            boundary = any(prev_end <= m <= start for m in markers) or "\n\n" in text[prev_end:start]
            ending = _ending(previous)
            open_end = bool(ending) and ending not in _TERMINAL
            continues = (open_end and not _is_heading(_collapse(previous))) or _ABBREVIATION_END.search(previous)
            if continues and not boundary and len(_collapse(text[prev_start:end])) <= MAX_CHARS:
                spans[-1] = (prev_start, end)
                continue
        spans.append((start, end))
    return spans


def _collapse(text: str) -> str:
    return " ".join(text.split())


def split_sentences(text: str) -> list[str]:
    """The quotable units of a chunk: no headings, no fragments too short to answer anything."""
    units = (_collapse(text[a:b]) for a, b in sentence_spans(text))
    return [u for u in units if len(u) >= MIN_CHARS and not _is_heading(u)]


def candidates(sources: Sequence[Source]) -> list[Candidate]:
    """Every quotable unit of the context, each text once (chunk overlap repeats sentences)."""
    seen: set[str] = set()
    out: list[Candidate] = []
    for number, source in enumerate(sources, start=1):
        units = split_sentences(source.text)
        for position, unit in enumerate(units):
            if unit not in seen:
                seen.add(unit)
                out.append(Candidate(number, unit, position))
    return out


def clip(text: str, question: str, limit: int = MAX_CHARS) -> str:
    """A verbatim window of at most `limit` characters, "…" where cut, placed on the most of the
    question's words (4-letter prefixes): the answer sits next to what the question mentions."""
    if len(text) <= limit:
        return text
    wanted = set(prefix_tokens(question, 4))
    spans = [(m.start(), m.end(), turkish_lower(m.group())[:4] in wanted) for m in re.finditer(r"\S+", text)]
    budget = limit - 2 * len(ELLIPSIS)
    best, best_hits = None, -1
    right = hits = 0
    for left in range(len(spans)):
        right = max(right, left)
        if right == left:
            hits = 0
        while right < len(spans) and spans[right][1] - spans[left][0] <= budget:
            hits += spans[right][2]
            right += 1
        if right > left:
            if hits > best_hits:
                best, best_hits = (spans[left][0], spans[right - 1][1]), hits
            hits -= spans[left][2]
    if best is None:
        return text[:budget] + ELLIPSIS
    hit_spans = [sp for sp in spans if sp[2] and best[0] <= sp[0] and sp[1] <= best[1]]
    if hit_spans:  # centre the window on the question's words it holds
        centre = (hit_spans[0][0] + hit_spans[-1][1]) / 2
        first = next((i for i, sp in enumerate(spans) if sp[0] >= centre - budget / 2), 0)
        first = min(first, next(i for i, sp in enumerate(spans) if sp[0] == hit_spans[0][0]))
        last = first
        while last + 1 < len(spans) and spans[last + 1][1] - spans[first][0] <= budget:
            last += 1
        while first > 0 and spans[last][1] - spans[first - 1][0] <= budget:
            first -= 1
        best = (spans[first][0], spans[last][1])
    start, end = best
    return (ELLIPSIS if start > 0 else "") + text[start:end] + (ELLIPSIS if end < len(text) else "")
