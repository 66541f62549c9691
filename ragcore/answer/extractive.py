"""The extractive answerer ("alıntı modu"): quote the one or two context sentences that answer.

With no language model Dayanak still answers, by quoting the retrieved text verbatim with its
[n] citation. This module ranks the context's quotable units (`ragcore.answer.sentences`) by the
measured sentence model (`ragcore.answer.extractive_model`, features that include what the
question asks for, `ragcore.answer.question_types`) and chooses what to quote.

The quote starts with a lead line naming the document and article it comes from
(`ragcore.answer.lead`), then the sentences most probable first — the order of relevance, not
of position in the text; the answer service then numbers the citations by first use.

Selection: the most probable sentence, plus a second one only when its probability is
comparable (the ratio is chosen on the training holdout), never more than two sentences or
400 characters, never a bare heading ("MADDE 14 – İş kazası …" alone).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragcore.answer.extractive_model import (
    FEATURES,
    TYPE_MATCH_FEATURES,
    ExtractiveModelError,
    SentenceModel,
    cosines,
    feature_matrix,
    model_file,
)
from ragcore.answer.lead import lead_line
from ragcore.answer.question_types import asked
from ragcore.answer.sentences import MAX_CHARS, candidates, clip
from ragcore.core import FALLBACK_ANSWER, Source
from ragcore.retrieval import QuoteSignals

# Shown by the UI (badge tooltip) next to a quoted answer; no longer part of the answer text.
EXTRACTIVE_NOTICE = ("Alıntı modu: dil modeli kullanılmadı; cevap üretilmedi, dokümanlardaki ilgili "
                     "cümleler aynen aktarılıyor.")
MAX_SENTENCES = 2
MIN_CLIP_CHARS = 100  # a second sentence is clipped to the room left only if that room is this large


@dataclass(frozen=True)
class Passage:
    number: int  # 1-based position of its source in the context
    text: str
    score: float  # the model's probability that the sentence holds the answer


def rank_passages(question: str, sources: Sequence[Source], embedder: object | None,
                  model: SentenceModel | None = None, query_vector: np.ndarray | None = None) -> list[Passage]:
    """Every quotable unit of the context with the model's probability, most probable first
    (`query_vector`: the question's vector from retrieval, so the question is not embedded twice)."""
    return _ranked(question, sources, embedder, model or model_file().for_embedder(embedder), query_vector)[0]


def _ranked(question: str, sources: Sequence[Source], embedder: object | None, model: SentenceModel,
            query_vector: np.ndarray | None) -> tuple[list[Passage], dict[str, float]]:
    """The ranking, and what the quote check reads of its best unit: its feature values (by name)
    and its absolute cosine with the question ("cosine"; 0 without an embedder)."""
    cands = candidates(sources)
    if not cands:
        return [], {}
    uses_cosine = any(f.startswith("cosine") for f in model.features)
    cosine = (cosines(embedder, question, [c.text for c in cands], query_vector)
              if uses_cosine and embedder is not None else None)
    if uses_cosine and cosine is None:
        raise ExtractiveModelError(f"sentence model {model.name!r} needs an embedder")
    matrix = feature_matrix(question, cands, cosine, [s.text for s in sources])
    probability = model.probabilities(matrix)
    order = sorted(range(len(cands)), key=lambda i: (-probability[i], cands[i].number, cands[i].position))
    best = {name: float(matrix[order[0], i]) for i, name in enumerate(FEATURES)}
    best["cosine"] = 0.0 if cosine is None else float(cosine[order[0]])
    return [Passage(cands[i].number, cands[i].text, float(probability[i])) for i in order], best


def select_passages(passages: Sequence[Passage], question: str = "", *, ratio: float,
                    max_sentences: int = MAX_SENTENCES, max_chars: int = MAX_CHARS) -> list[Passage]:
    """The most probable unit, and the next ones whose probability is within `ratio` of it, while the
    quote stays within `max_sentences` units and `max_chars` characters: a comparable sentence
    longer than the room left is clipped to it (verbatim, "…"), unless that room is too small."""
    if not passages:
        return []
    first = passages[0]
    chosen = [Passage(first.number, clip(first.text, question, max_chars), first.score)]
    used = len(chosen[0].text)
    for passage in passages[1:]:
        if len(chosen) >= max_sentences or passage.score < ratio * first.score:
            break
        room = max_chars - used
        if len(passage.text) <= room or room >= MIN_CLIP_CHARS:
            chosen.append(Passage(passage.number, clip(passage.text, question, room), passage.score))
            used += len(chosen[-1].text)
    return chosen


@dataclass(frozen=True)
class QuoteChoice:
    """The quoter's ranking of the context and what it quotes from it."""

    ranked: tuple[Passage, ...]
    passages: tuple[Passage, ...]
    best_features: dict[str, float] = field(default_factory=dict)  # of the best unit (`_ranked`)
    asks_type: bool = False  # the question asks for an amount, a date, a name, a place or "hangi …"

    def signals(self) -> QuoteSignals:
        """What the quote check reads (`ragcore.retrieval.abstention`); zeros for an empty context."""
        best = self.ranked[0] if self.ranked else None
        second = self.ranked[1].score if len(self.ranked) > 1 else 0.0
        f = self.best_features
        return QuoteSignals(best.score if best else 0.0, second, best.number if best else 0,
                            sentence_cosine=f.get("cosine", 0.0), sentence_overlap=f.get("overlap", 0.0),
                            sentence_overlap4=f.get("overlap_prefix4", 0.0),
                            type_match=max((f.get(n, 0.0) for n in TYPE_MATCH_FEATURES), default=0.0),
                            asks_type=float(self.asks_type), source_overlap=f.get("source_overlap", 0.0))

    def nearest(self, count: int) -> tuple[str, ...]:
        """For each of the first `count` sources, its unit the quoter ranks highest ("" for a source
        without a quotable unit): the sentence the closest-passages outcome marks in each passage it
        shows, so the reader finds the likeliest place first. A mark, not a quote: the passage is
        shown whole around it."""
        best: dict[int, str] = {}
        for passage in self.ranked:
            best.setdefault(passage.number, passage.text)
        return tuple(best.get(number, "") for number in range(1, count + 1))


def choose_quote(question: str, sources: Sequence[Source], embedder: object | None,
                 query_vector: np.ndarray | None = None) -> QuoteChoice:
    """Rank the context's sentences once; the quote check and the quote both read the result."""
    model = model_file().for_embedder(embedder)
    ranked, best = _ranked(question, sources, embedder, model, query_vector)
    return QuoteChoice(tuple(ranked), tuple(select_passages(ranked, question, ratio=model.second_ratio)), best,
                       asked(question).anything)


def answer_passages(question: str, sources: Sequence[Source], embedder: object | None,
                    query_vector: np.ndarray | None = None) -> list[Passage]:
    """The passages the extractive answer quotes (at most two sentences, 400 characters)."""
    return list(choose_quote(question, sources, embedder, query_vector).passages)


def quote_line(passage: Passage) -> str:
    return f"> “{passage.text}” [{passage.number}]"


def quote_lead(passages: Sequence[Passage], sources: Sequence[Source]) -> str:
    """The lead line for these passages: their sources' documents and articles, in quoting order."""
    return lead_line([sources[p.number - 1] for p in passages])


def quote(passages: Sequence[Passage], sources: Sequence[Source]) -> str:
    """The lead line, a blank line, then the quoted passages, one per line, each with its [n] citation."""
    return "\n".join([quote_lead(passages, sources), "", *(quote_line(p) for p in passages)])


class ExtractiveGenerator:
    """Quotes the one or two context sentences that best answer the question, with [n] markers."""

    kind = "extractive"
    model = "extractive"
    label = "extractive"

    def __init__(self, embedder: object | None = None) -> None:
        self.embedder = embedder
        model_file().for_embedder(embedder)  # a missing or broken model file fails here, not mid-answer

    def stream(self, messages: list[dict], sources: Sequence[Source], question: str, *,
               query_vector: np.ndarray | None = None, passages: Sequence[Passage] | None = None) -> Iterator[str]:
        """`passages`: what `answer_passages` already chose for this question and context (the answer
        service's quote check), so the sentences are not ranked twice."""
        if passages is None:
            passages = answer_passages(question, sources, self.embedder, query_vector)
        if not passages:
            yield FALLBACK_ANSWER
            return
        yield quote_lead(passages, sources) + "\n\n"
        for index, passage in enumerate(passages):
            yield ("\n" if index else "") + quote_line(passage)
