"""What happens to generated text afterwards: its [n] citations and what kind of text it is.

`finalize` parses the [n] markers, drops those pointing outside the context, and tells a real
refusal (the fallback sentence) from an instruction echo (the model repeating its rules, which
is unreliable and replaced by quoted passages).

`renumber` then numbers the citations of a finished answer — the extractive one and a
language model's alike — in the order they are first cited: the first citation is [1], the
sources are reordered to match (each `Source.rank` is its new number) and the markers in the
text are rewritten. Sources the answer does not cite are kept, after the cited ones and in
retrieval order: the answer was written from all of them (the chat's permission check and the
questions log cover the whole context), and the page lists them apart as not used.
`renumbered_pieces` gives streamed text the same numbers while it streams.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from ragcore.answer.prompt import SYSTEM_PROMPT
from ragcore.core import FALLBACK_ANSWER, Source, turkish_lower, words

# A citation marker, "[2]", "[1, 3]", "[ 2 ]": the one spelling the app, the conversations and the
# lab read citations by (`CITATION_MARKER`, `strip_citations`).
CITATION_MARKER = re.compile(r"\[\s*(\d+(?:\s*[,;]\s*\d+)*)\s*\]")
_MARKER = CITATION_MARKER
_OPEN_MARKER = re.compile(r"\[[\d\s,;]*$")  # a marker cut off at the end of a streamed piece
_ECHO_PHRASES = (
    "numaralandırılmış bağlam", "köşeli parantez", "kendi bilgini", "genel kültür",
    "şu cümleyi aynen", "talimatları", "kurallar:", "sen dayanak",
)

KIND_ANSWER = "answer"
KIND_REFUSAL = "refusal"
KIND_ECHO = "echo"
KIND_EMPTY = "empty"


@dataclass(frozen=True)
class FinishedAnswer:
    """A finished answer: its text as shown and logged, what kind of text it is, the sources it cites."""

    text: str
    kind: str  # answer | refusal | echo | empty
    cited: tuple[int, ...]  # 1-based context numbers, in order of first citation


def parse_citations(text: str, n_sources: int) -> tuple[str, tuple[int, ...]]:
    """Keep markers 1..n_sources (in order of first use); remove the others from the text."""
    cited: list[int] = []

    def replace(match: re.Match) -> str:
        numbers = [int(x) for x in re.split(r"\s*[,;]\s*", match.group(1))]
        valid = [x for x in numbers if 1 <= x <= n_sources]
        for x in valid:
            if x not in cited:
                cited.append(x)
        return "".join(f"[{x}]" for x in valid)

    cleaned = _MARKER.sub(replace, text)
    cleaned = re.sub(r"[ \t]+([.,;:])", r"\1", cleaned)
    return cleaned.strip(), tuple(cited)


def _ngrams(tokens: list[str], n: int = 3) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


_PROMPT_NGRAMS = _ngrams(words(SYSTEM_PROMPT.replace(FALLBACK_ANSWER, " "))) - _ngrams(words(FALLBACK_ANSWER))
_FALLBACK_WORDS = words(FALLBACK_ANSWER)


def is_instruction_echo(text: str) -> bool:
    """The model repeated its rules (seed 002): phrases or 3-grams of the system prompt."""
    lowered = turkish_lower(text)
    if sum(phrase in lowered for phrase in _ECHO_PHRASES) >= 2:
        return True
    grams = _ngrams(words(text))
    return len(grams) >= 4 and len(grams & _PROMPT_NGRAMS) / len(grams) >= 0.4


# How a model says the answer is not in its context, in its own words (the fallback sentence is
# one way). Only a short text counts: a long quote that merely contains "bulunmuyor" answers.
REFUSAL_PHRASES = (
    "bulunmuyor", "bulunmamaktadır", "bulunmamakta", "yer almıyor", "yer almamaktadır", "bilgi yok",
    "bilgi bulunm", "belirtilmemiş", "belirtilmemektedir", "cevap veremiyorum", "yanıt veremiyorum",
    "bilmiyorum", "erişebildiğiniz dokümanlarda",
)
REFUSAL_MAX_WORDS = 25


def strip_citations(text: str) -> str:
    """The text without its [n] markers (each replaced by a space)."""
    return CITATION_MARKER.sub(" ", text)


def is_refusal(text: str) -> bool:
    """A real refusal, not an answer: the fallback sentence with (almost) nothing else, or a short
    text (at most REFUSAL_MAX_WORDS words) that cites nothing and says in other words that the
    information is absent ("Kanunda süre belirtilmemiş [1]." cites its source: it answers). The one
    detector: the app replaces such an answer with the fallback, and the lab counts it refused."""
    tokens = words(strip_citations(text))
    if not tokens:
        return False
    joined, fallback = " ".join(tokens), " ".join(_FALLBACK_WORDS)
    if fallback in joined:
        return len(tokens) - len(_FALLBACK_WORDS) <= 6
    lowered = turkish_lower(" ".join(tokens))
    cites = CITATION_MARKER.search(text) is not None
    return not cites and len(tokens) <= REFUSAL_MAX_WORDS and any(phrase in lowered for phrase in REFUSAL_PHRASES)


def finalize(text: str, sources: Sequence[Source]) -> FinishedAnswer:
    """Classify generated text and clean its citations (refusal and echo checks come first)."""
    if not text.strip():
        return FinishedAnswer("", KIND_EMPTY, ())
    if is_instruction_echo(text):
        return FinishedAnswer(text.strip(), KIND_ECHO, ())
    cleaned, cited = parse_citations(text, len(sources))
    if is_refusal(cleaned):
        return FinishedAnswer(FALLBACK_ANSWER, KIND_REFUSAL, ())
    return FinishedAnswer(cleaned, KIND_ANSWER, cited)



def renumber(text: str, cited: Sequence[int], sources: Sequence[Source]) -> tuple[str, tuple[int, ...], tuple[Source, ...]]:
    """Number a finished answer's citations by first use (module docstring): the text with its
    markers rewritten, the citations (1..len(cited)) and the sources in their new order."""
    order = [*cited, *(n for n in range(1, len(sources) + 1) if n not in cited)]
    new = {old: index for index, old in enumerate(order, start=1)}

    def rewrite(match: re.Match) -> str:
        numbers = [int(x) for x in re.split(r"\s*[,;]\s*", match.group(1))]
        return "".join(f"[{new[x]}]" for x in numbers if x in new)

    numbered = tuple(replace(sources[old - 1], rank=number) for number, old in enumerate(order, start=1))
    return _MARKER.sub(rewrite, text), tuple(range(1, len(cited) + 1)), numbered


def renumbered_pieces(pieces: Iterable[str], n_sources: int) -> Iterator[str]:
    """Streamed text with each valid [n] already given the number `renumber` will give it, so
    the page shows [1] first while the answer streams. A marker with no number in the context
    streams as the model wrote it (the final text drops it, and the answer is then replaced).
    A marker cut between two pieces is held back until it closes."""
    first_use: dict[int, int] = {}

    def rewrite(match: re.Match) -> str:
        numbers = [int(x) for x in re.split(r"\s*[,;]\s*", match.group(1))]
        valid = [x for x in numbers if 1 <= x <= n_sources]
        for x in valid:
            first_use.setdefault(x, len(first_use) + 1)
        return "".join(f"[{first_use[x]}]" for x in valid) if valid else match.group(0)

    held = ""
    for piece in pieces:
        text = held + piece
        cut = _OPEN_MARKER.search(text)
        ready, held = (text[: cut.start()], text[cut.start():]) if cut else (text, "")
        if ready:
            yield _MARKER.sub(rewrite, ready)
    if held:
        yield _MARKER.sub(rewrite, held)
