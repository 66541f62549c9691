"""The language model's condensation of a follow-up: one short call whose output is the standalone question.

The model sees a Turkish instruction, the last CONDENSE_TURNS turns (each question as typed and
the start of its answer, citation marks removed) and the new question, and writes the question
as someone who never saw the conversation would understand it. The call goes through the
generator's own `stream` (the answer's clients, their errors and limits); its output is read up
to its first line or MAX_CONDENSED_CHARS characters and then the stream is closed, so the call
stays small whatever the model does. The caller passes only turns the user may still read
(`ragcore.conversations.history.readable_history`): a hidden answer never reaches the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragcore.answer import CITATION_MARKER
from ragcore.conversations.models import Turn
from ragcore.core import sanitize

CONDENSE_TURNS = 3  # earlier turns the model sees
ANSWER_CHARS = 300  # of each earlier answer
MAX_CONDENSED_CHARS = 400  # the output read before the stream is closed

SYSTEM = (
    "Bir şirketin doküman asistanıyla yapılan bir sohbetin son sorusunu, önceki konuşmayı görmemiş birinin "
    "de anlayacağı tek bir soruya dönüştürüyorsun.\n"
    "Kurallar:\n"
    "1. Yalnızca soruyu yaz: tek satır; cevap, açıklama, tırnak ya da başlık yazma.\n"
    "2. Son soru kendi başına anlaşılıyorsa onu aynen yaz.\n"
    "3. Son sorunun eksik bıraktığı konuyu (hangi izin, hangi hak, hangi kanun ya da madde) önceki "
    "sorulardan tamamla.\n"
    "4. Önceki cevaplardaki bilgileri soruya ekleme ve soruyu cevaplama; yalnızca konuyu taşı.\n"
    "5. Türkçe yaz, en fazla {limit} karakter."
)
_CITATION_MARK = re.compile(r"\s*" + CITATION_MARKER.pattern)  # the app's one marker, with the space before it
_LABEL = re.compile(r"^(?:tek başına anlaşılır soru|yeniden yazılmış soru|soru)\s*:\s*", re.IGNORECASE)
_QUOTES = "\"'“”‘’«»`"


def messages(previous: Sequence[Turn], question: str, max_chars: int) -> list[dict]:
    """The chat messages of the condensation call (the prompt contract the tests pin)."""
    lines = []
    for turn in previous[-CONDENSE_TURNS:]:
        lines.append(f"Kullanıcı: {turn.question.strip()}")
        answer = _CITATION_MARK.sub("", turn.answer_text).strip()
        if answer and not turn.hidden:
            clipped = answer if len(answer) <= ANSWER_CHARS else answer[:ANSWER_CHARS].rstrip() + "…"
            lines.append(f"Dayanak: {' '.join(clipped.split())}")
    user = "Önceki konuşma:\n" + "\n".join(lines) + f"\n\nSon soru: {question.strip()}\n\nTek başına anlaşılır soru:"
    limit = min(max_chars, MAX_CONDENSED_CHARS)
    return [{"role": "system", "content": SYSTEM.format(limit=limit)}, {"role": "user", "content": user}]


def condense(generator: object, previous: Sequence[Turn], question: str, max_chars: int) -> str | None:
    """The model's standalone question, or None when it wrote nothing usable. Raises the
    generator's `GeneratorError` when the call fails."""
    stream = generator.stream(messages(previous, question, max_chars), (), question)  # type: ignore[attr-defined]
    text = ""
    try:
        for piece in stream:
            text += piece
            if len(text) >= MAX_CONDENSED_CHARS or "\n" in text.strip():
                break
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()  # stops the HTTP stream: the rest of the output is not wanted
    return cleaned(text, min(max_chars, MAX_CONDENSED_CHARS))


def cleaned(output: str, max_chars: int) -> str | None:
    """The first line of the model's output without a label ("Soru: …") or quotes, at most
    `max_chars` characters; None when nothing is left."""
    lines = [line.strip() for line in sanitize(output).splitlines() if line.strip()]
    if not lines:
        return None
    text = _CITATION_MARK.sub("", _LABEL.sub("", lines[0])).strip().strip(_QUOTES).strip()
    return text[:max_chars].strip() or None
