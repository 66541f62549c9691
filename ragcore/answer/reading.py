"""The reader's answering policy: which passage and which sentences answer, and whether any does.

The reader (`ragcore.reader`) scores every window of the role's best retrieved candidates
together with the question. From those scores, and nothing else:
* the candidates are re-ordered, each by its best window's score plus the model config's
  `fusion.weight` divided by its retrieval rank (0: the reader's order alone; the weight is
  chosen on held-back questions with the cuts);
* the extractive answer quotes the best window of the first candidate, verbatim, with its
  citation; the closest-passages outcome marks each passage's best window, so the first thing
  a user reads is the reader's most likely answer;
* one cut pair on the top score decides the outcome: at or above `answer`, an answer; at or
  above `closest`, the closest passages; below, the refusal. The cuts are chosen on questions
  the reader was not trained on (`eval/reader/cuts.py`) and ship in the model's config. With a
  language model the reader's first passages are its context, it answers from `closest` up,
  and its answer is checked only for its citations.

The reader only ever sees what retrieval returned for the role: the permitted candidates.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ragcore.core import OUTCOME_ANSWER, OUTCOME_CLOSEST, OUTCOME_REFUSED, Source
from ragcore.reader import Reader, ReadWindow, chunk_passages

ANSWER, CLOSEST, REFUSED = OUTCOME_ANSWER, OUTCOME_CLOSEST, OUTCOME_REFUSED


@dataclass(frozen=True)
class ReaderCuts:
    answer: float
    closest: float

    @classmethod
    def of(cls, reader: Reader) -> ReaderCuts:
        cuts = reader.config["cuts"]
        return cls(float(cuts["answer"]), float(cuts["closest"]))

    def outcome(self, top: float, *, llm: bool = False) -> str:
        """The outcome for the top score; a language model answers from the closest cut up, since it
        reads every passage it is given, not one window."""
        if top >= (self.closest if llm else self.answer):
            return ANSWER
        return CLOSEST if top >= self.closest else REFUSED


@dataclass(frozen=True)
class Reading:
    """The candidates as the reader orders them (ranks renumbered from 1), each with the score and
    the text of its best window."""

    sources: tuple[Source, ...]
    scores: tuple[float, ...]
    windows: tuple[str, ...]
    ms: float

    @property
    def top(self) -> float:
        return self.scores[0] if self.scores else 0.0

    def as_dict(self) -> dict:
        return {"scores": [round(s, 4) for s in self.scores], "chunk_ids": [s.chunk_id for s in self.sources],
                "ms": round(self.ms, 1)}


def read(reader: Reader, question: str, candidates: Sequence[Source]) -> Reading:
    """Score every window of every candidate (given in retrieval's order) and order the candidates
    by their best window, fused with retrieval's rank by the model's weight."""
    started = time.perf_counter()
    windows: list[ReadWindow] = []
    for index, source in enumerate(candidates):
        windows += chunk_passages(source.text, source.article, source.title, index)
    scores = reader.predict([(question, w.context) for w in windows]) if windows else []
    best: dict[int, tuple[float, str]] = {}
    for window, score in zip(windows, scores, strict=True):
        if window.chunk not in best or score > best[window.chunk][0]:
            best[window.chunk] = (float(score), window.text.strip())
    weight = reader.fusion_weight
    order = sorted(range(len(candidates)), key=lambda i: (-(best.get(i, (0.0, ""))[0] + weight / (i + 1)), i))
    return Reading(tuple(replace(candidates[i], rank=rank) for rank, i in enumerate(order, start=1)),
                   tuple(best.get(i, (0.0, ""))[0] for i in order), tuple(best.get(i, (0.0, ""))[1] for i in order),
                   (time.perf_counter() - started) * 1000)
