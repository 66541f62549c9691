"""Bounds on a language model's answer: why one is cut, the note the user reads, and the watch
that reads the text as it streams.

A model server bounds an answer only by its own default (issue 36: 15–25 s an answer from a
llama.cpp server; a looping model never stops). The HTTP clients (`ragcore.answer.llm_clients`)
send LLM_MAX_TOKENS and stop reading at LLM_ANSWER_SECONDS; `AnswerWatch` stops a model that
loops or echoes its prompt. The answer service then shows the extractive answer, led by the note
of `cut_note`, and logs the question as an error with that note.

Loop: the same `LOOP_WORDS` words for the third time (a line or a sentence said over and over),
or the last `PERIOD_TAIL` characters made of one unit of at most `MAX_PERIOD` characters ("!!!!",
a line of dashes, a flood of blank lines: nothing a word count sees). A cited answer repeats the
name of a law, never twelve words in a row three times.

Echo: what tells a quote from an echo is where the words come from and how many come in a row.
The rules (the system prompt, less the fallback sentence, which is the legitimate refusal) are
never part of an answer: `ECHO_WORDS` of their words in a row are an echo. The sources (and the
question) may be quoted — the extractive answer does nothing else — up to the longest quote the
product shows itself (the reader's 600 characters: `QUOTE_WORDS` words of the law corpus at 7.5
characters a word); a longer verbatim run — the context reproduced block by block, headers and
all — is an echo. Hand-written rules, since no kept library watches a token stream: counting
word n-grams is a few lines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ragcore.core import FALLBACK_ANSWER, words

CUT_TIME = "time"
CUT_LENGTH = "length"
CUT_LOOP = "loop"
CUT_ECHO = "echo"
CUTS = (CUT_TIME, CUT_LENGTH, CUT_LOOP, CUT_ECHO)

_QUOTES_FOLLOW = "aşağıda belgelerden alıntı var."
LOOP_NOTE = f"Dil modelinin cevabı kendini tekrar ettiği için kesildi; {_QUOTES_FOLLOW}"
ECHO_NOTE = ("Dil modelinin cevabı kendisine verilen talimatları ya da belgeleri aynen tekrar ettiği için kesildi; "
             f"{_QUOTES_FOLLOW}")
LENGTH_NOTE = f"Dil modelinin cevabı uzunluk sınırına ulaşıp yarıda kaldığı için gösterilmedi; {_QUOTES_FOLLOW}"


def cut_note(reason: str, seconds: float) -> str:
    """The Turkish note shown above the quotes that replace a cut answer."""
    if reason == CUT_TIME:
        limit = f"{seconds:g}".replace(".", ",")
        return f"Dil modelinin cevabı {limit} saniyelik süre sınırında tamamlanmadığı için kesildi; {_QUOTES_FOLLOW}"
    return {CUT_LENGTH: LENGTH_NOTE, CUT_LOOP: LOOP_NOTE, CUT_ECHO: ECHO_NOTE}[reason]


LOOP_WORDS = 12
LOOP_TIMES = 3
PERIOD_TAIL = 240
MAX_PERIOD = 40
ECHO_WORDS = 8
QUOTE_WORDS = 80
MAX_WORD_CHARS = 64


def _grams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def _periodic(tail: str) -> bool:
    """`tail` is one unit of at most MAX_PERIOD characters over and over."""
    return any(tail[p:] == tail[:-p] for p in range(1, MAX_PERIOD + 1))


class AnswerWatch:
    """Reads a model's answer piece by piece and says when to stop it (module docstring: why so).

    Incremental, so a long stream costs the same per piece: words are counted once they are whole
    (a word cut between two pieces waits for the next)."""

    def __init__(self, messages: Sequence[dict]) -> None:
        system = " ".join(m.get("content", "") for m in messages if m.get("role") == "system")
        prompt = " ".join(m.get("content", "") for m in messages)
        self._rules = _grams(words(system.replace(FALLBACK_ANSWER, " ")), ECHO_WORDS)
        self._prompt = _grams(words(prompt), ECHO_WORDS)
        self._tokens: list[str] = []
        self._seen: Counter[tuple[str, ...]] = Counter()
        self._copied = 0  # consecutive ECHO_WORDS-grams found in the prompt
        self._partial = ""  # the text after the last whitespace: maybe half a word
        self._tail = ""

    def feed(self, piece: str) -> str | None:
        """Take the next piece; the reason to stop (CUT_LOOP, CUT_ECHO) or None."""
        self._tail = (self._tail + piece)[-PERIOD_TAIL:]
        if len(self._tail) == PERIOD_TAIL and _periodic(self._tail):
            return CUT_LOOP
        text = self._partial + piece
        end = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"))
        if len(text) - end > MAX_WORD_CHARS:  # no word is this long: a stream without spaces, counted as it comes
            end = len(text) - 1
        self._partial = text[end + 1:]
        return self._words(text[:end + 1])

    def end(self) -> str | None:
        """The stream ended: count its last word too."""
        text, self._partial = self._partial, ""
        return self._words(text)

    def _words(self, text: str) -> str | None:
        for token in words(text):
            self._tokens.append(token)
            reason = self._check()
            if reason:
                return reason
        return None

    def _check(self) -> str | None:
        tokens = self._tokens
        if len(tokens) >= LOOP_WORDS:
            gram = tuple(tokens[-LOOP_WORDS:])
            self._seen[gram] += 1
            if self._seen[gram] >= LOOP_TIMES:
                return CUT_LOOP
        if len(tokens) >= ECHO_WORDS:
            gram = tuple(tokens[-ECHO_WORDS:])
            if gram in self._rules:
                return CUT_ECHO
            self._copied = self._copied + 1 if gram in self._prompt else 0
            if self._copied + ECHO_WORDS - 1 > QUOTE_WORDS:
                return CUT_ECHO
        return None
