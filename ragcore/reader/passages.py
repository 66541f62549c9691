"""What the reader reads of a chunk: its sentence windows, each with the words that place it.

A window is two consecutive sentence units of the chunk (`ragcore.documents.windows`, the
same windows the dense leg embeds, so there is one splitter), quoted verbatim when it answers.
The reader sees it after the document's title and the article's heading when the chunk
prints one ("İş Kanunu. Yıllık ücretli izin süreleri. …"): a window alone often says "Bu
süre…" without saying which. Training (eval/reader) and answering build pairs here, so the
model is asked at run time exactly what it learned.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragcore.documents import chunk_windows, heading_span


@dataclass(frozen=True)
class ReadWindow:
    """One window of one chunk: `text` is what a quote shows, `context` what the reader reads."""

    chunk: int  # index of the chunk among those read
    start: int  # span in the chunk's text
    end: int
    text: str
    context: str


def chunk_passages(text: str, article: str | None, title: str = "", chunk: int = 0) -> list[ReadWindow]:
    """The windows of one chunk (its heading is context, never a window of its own); a chunk too
    short to have windows is read whole."""
    heading = heading_span(text, article)
    heading_text = " ".join(text[heading[0]:heading[1]].split()) if heading else ""
    spans = [(w.char_start, w.char_end) for w in chunk_windows(text, article)
             if heading is None or (w.char_start, w.char_end) != heading]
    if not spans:
        stripped = text.strip()
        if not stripped:
            return []
        start = text.index(stripped[0])
        spans = [(start, start + len(stripped))]
    lead = ". ".join(part for part in (title.strip(), heading_text) if part)
    return [ReadWindow(chunk, a, b, text[a:b], f"{lead}. {' '.join(text[a:b].split())}" if lead
                       else " ".join(text[a:b].split()))
            for a, b in spans]
