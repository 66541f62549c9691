"""Reading and embedding at once: a PDF's pages are read in one worker thread while the chunks of
the pages read so far are embedded.

Why: an upload used to read every page (Law 5510: about 25 s of pypdf) with the embedder idle,
then embed with the reader idle. With a model server (Ollama, a GPU) the embedder's time is not
this process's CPU, so the next pages are read for free meanwhile; with the embedded e5 both share
the cores and the gain is what the pages' reading leaves free (`bench/ingest.py` measures it).

Why it stays exact: the chunker needs the whole text (an article runs over pages), so the chunks
are still cut once from all pages at the end and stored as that cut makes them. While the pages
come in, the pages read so far are cut too, and the chunks that can no longer change (ending
before the last page read, and not of the last article: its end is not known yet) are embedded
ahead, with their sentence windows when the index has them; their vectors are kept by text.
At the end, each chunk and window text without a vector is embedded. A guess the final cut did
not keep costs a wasted vector, never a wrong one: vectors are looked up by the very text
stored. On the three sample laws every guessed chunk was kept.

Pages read by OCR (and a .docx's sections) come only at the end: they are not embedded ahead.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from ragcore.core import Page
from ragcore.documents.chunking import chunk_pages, joined_text
from ragcore.documents.windows import chunk_windows
from ragcore.embed import Embedder

Progress = Callable[[str, int, int], None]
PageSink = Callable[[Page], None]
T = TypeVar("T")

READ_AHEAD_PAGES = 16  # pages read ahead of the embedder at most: the queue between them is bounded
CUT_EVERY_PAGES = 4  # pages between two cuts of the pages read so far
EMBED_BATCH = 32  # texts per embedding call (the progress is reported per batch)

_DONE = "done"


class _Stopped(Exception):
    """The embedding side failed: the reading thread stops at its next page."""


class EmbeddedAhead:
    """Vectors by text, filled while the pages are read (`pages_read`) and completed at the end
    (`vectors_for`)."""

    def __init__(self, embedder: Embedder, size: int, overlap: int, *, windows: bool, guess: bool = True) -> None:
        """`guess` false: nothing is embedded ahead (an index of another model refuses the upload)."""
        self.embedder = embedder
        self.guess = guess
        self.size = size
        self.overlap = overlap
        self.windows = windows
        self.vectors: dict[str, np.ndarray] = {}
        self._pending: dict[str, None] = {}  # texts waiting for a full batch, in order

    def pages_read(self, pages: Sequence[Page]) -> None:
        """Queue the texts of the chunks that can no longer change; embed every full batch."""
        for text in self._settled_texts(pages):
            if text not in self.vectors:
                self._pending[text] = None
        while len(self._pending) >= EMBED_BATCH:
            self._embed(list(self._pending)[:EMBED_BATCH])

    def _settled_texts(self, pages: Sequence[Page]) -> list[str]:
        numbers = [page.number for page in pages]
        if not self.guess or len(pages) < 2 or numbers != list(range(numbers[0], numbers[0] + len(numbers))):
            return []  # a page missing in between (one left to OCR) changes the text after it
        _, starts = joined_text(pages)
        chunks = chunk_pages(pages, self.size, self.overlap)
        last_article = chunks[-1].article if chunks else None
        settled = [c for c in chunks if c.char_end <= starts[-1] and (c.article is None or c.article != last_article)]
        texts = [c.text for c in settled]
        if self.windows:
            texts += [w.text for c in settled for w in chunk_windows(c.text, c.article)]
        return texts

    def _embed(self, texts: list[str]) -> None:
        for text, vector in zip(texts, self.embedder.embed_passages(texts), strict=True):
            self.vectors[text] = np.asarray(vector, dtype=np.float32)
            self._pending.pop(text, None)

    def vectors_for(self, texts: Sequence[str], report: Progress) -> np.ndarray:
        """The vectors of `texts` in order: those embedded ahead, the rest embedded now, reporting the
        `embed` stage in distinct texts (the ones embedded ahead count as done)."""
        wanted = list(dict.fromkeys(texts))
        missing = [text for text in wanted if text not in self.vectors]
        done = len(wanted) - len(missing)
        report("embed", done, len(wanted))
        for start in range(0, len(missing), EMBED_BATCH):
            batch = missing[start : start + EMBED_BATCH]
            self._embed(batch)
            done += len(batch)
            report("embed", done, len(wanted))
        matrix = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            matrix[row] = self.vectors[text]
        return matrix


def read_while_embedding(read: Callable[[Progress, PageSink], T], ahead: EmbeddedAhead | None,
                         report: Progress) -> T:
    """`read(progress, page_sink)` in one worker thread; in this one, its progress relayed to
    `report` and, every CUT_EVERY_PAGES pages, `ahead.pages_read(pages so far)`. The thread's
    exception is raised here; an exception here stops the thread at its next page (or report)
    and waits for it, so nothing runs on after the upload failed."""
    inbox: queue.Queue = queue.Queue(maxsize=READ_AHEAD_PAGES)
    stop = threading.Event()
    outcome: dict = {}

    def put(item: tuple) -> None:
        if stop.is_set():
            raise _Stopped()
        inbox.put(item)

    def work() -> None:
        try:
            outcome["result"] = read(lambda stage, done, total: put(("progress", stage, done, total)),
                                     lambda page: put(("page", page)))
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the caller's thread, raised there
            outcome["error"] = exc
        finally:
            inbox.put((_DONE,))

    worker = threading.Thread(target=work, name="dayanak-read-ahead", daemon=True)
    worker.start()
    pages: list[Page] = []
    cut_at = 0
    try:
        while (item := inbox.get())[0] != _DONE:
            if item[0] == "progress":
                report(*item[1:])
                continue
            pages.append(item[1])
            if ahead is not None and len(pages) - cut_at >= CUT_EVERY_PAGES:
                cut_at = len(pages)
                ahead.pages_read(pages)
    except BaseException:
        stop.set()
        while inbox.get()[0] != _DONE:  # unblock the thread, wait for its end
            pass
        raise
    finally:
        worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
