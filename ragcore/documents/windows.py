"""Sentence windows: the short passages of a chunk the dense leg scores besides the whole chunk.

An everyday question usually asks about one sentence of an article ("kaç gün içinde bildirmek
zorunda?"), and a 1000-character chunk's vector averages that sentence with the rest of the
article. So each chunk also gets vectors for its windows (migration 012), and retrieval scores
the chunk by the mean of its own cosine and its best window's (`ragcore.retrieval.hybrid`):

* two consecutive sentence units (`chunking.sentence_units`, the one splitter), sliding by one;
  a chunk of only two units gets each unit alone, so that no window is the chunk again;
* the article's heading lines alone ("İş kazası ve meslek hastalığının bildirimi"), where the
  chunk starts an article — a question worded like the heading finds it.

At most MAX_WINDOWS per chunk (each costs an embedding at ingest); past that, the two-unit
windows start at evenly spread units, so the whole chunk stays covered while it has at most
twice as many units. A window is a span of its chunk's text (offsets into `Chunk.text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragcore.core import Chunk
from ragcore.documents.chunking import ARTICLE_RE, sentence_units

MAX_WINDOWS = 8
UNITS_PER_WINDOW = 2


@dataclass(frozen=True)
class Window:
    """One window of the `chunk`-th chunk of a document: its span in that chunk's text."""

    chunk: int
    position: int
    char_start: int
    char_end: int
    text: str


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def heading_span(text: str, article: str | None) -> tuple[int, int] | None:
    """The heading lines printed above the article's "MADDE n –", when the chunk starts with them."""
    if article is None:
        return None
    match = ARTICLE_RE.search(text)
    if match is None:
        return None
    start, end = _trimmed(text, 0, match.start())
    # Only lines above the article start (the chunker puts them first), never a sentence before it.
    if start >= end or any(ch in text[start:end] for ch in ".;:"):
        return None
    return start, end


def _spread(count: int, room: int) -> list[int]:
    """`room` indexes from 0 to count - 1, evenly spread (all of them when they fit)."""
    if count <= room:
        return list(range(count))
    if room == 1:
        return [0]
    return sorted({round(i * (count - 1) / (room - 1)) for i in range(room)})


def chunk_windows(text: str, article: str | None, chunk: int = 0) -> list[Window]:
    """The windows of one chunk's text (see the module docstring), in text order."""
    whole = _trimmed(text, 0, len(text))
    heading = heading_span(text, article)
    body_start = heading[1] if heading else 0
    units = [u for u in (_trimmed(text, a, b) for a, b in sentence_units(text, body_start, len(text))) if u[0] < u[1]]
    if len(units) > UNITS_PER_WINDOW:
        starts = range(len(units) - UNITS_PER_WINDOW + 1)
        spans = [(units[i][0], units[i + UNITS_PER_WINDOW - 1][1]) for i in starts]
    else:
        spans = list(units)
    room = MAX_WINDOWS - (1 if heading else 0)
    spans = [spans[i] for i in _spread(len(spans), room)]
    if heading:
        spans.insert(0, heading)
    spans = [span for span in dict.fromkeys(spans) if span != whole]
    return [Window(chunk, position, a, b, text[a:b]) for position, (a, b) in enumerate(spans)]


def document_windows(chunks: Sequence[Chunk]) -> list[Window]:
    """Every chunk's windows, chunk by chunk (`Window.chunk` is the index into `chunks`)."""
    return [window for index, chunk in enumerate(chunks)
            for window in chunk_windows(chunk.text, chunk.article, index)]
