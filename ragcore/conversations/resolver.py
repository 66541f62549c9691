"""A question in a conversation → the standalone question retrieval gets (`resolve_follow_up`).

Without a language model (the embedded default) the deterministic rules rewrite a follow-up
(`rules`); with one, the model condenses it in one short call (`condense`). The call is made only
for a question the rules take for a follow-up: on two CPU cores a 7B model needs seconds even
for a one-line answer, and a question with its own subject needs nothing from before. When the
call fails, the rules rewrite the question and the resolution says so in its `notice`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ragcore.answer import GeneratorError
from ragcore.conversations import condense, rules
from ragcore.conversations.models import METHOD_LLM, METHOD_RULES, Resolution, Turn
from ragcore.core import Settings, words

log = logging.getLogger(__name__)

CONDENSE_FAILED = ("Dil modeli soruyu önceki konuşmaya göre yeniden yazamadı; soru, önceki sorunun konusu "
                   "eklenerek arandı.")


def is_language_model(generator: object) -> bool:
    """Whether `generator` is a language model that can condense (the extractive quoter cannot)."""
    return generator is not None and getattr(generator, "kind", "") != "extractive"


def resolve_follow_up(previous: Sequence[Turn], question: str, *, generator: object = None,
                      settings: Settings | None = None) -> Resolution:
    """The standalone form of `question` after the turns `previous` (oldest first).

    `generator` None (or the extractive quoter): the deterministic rules, a pure function of the
    arguments. A language model: one condensation call for a follow-up. A question with its own
    subject, or the first of a conversation, stays as typed (`method` "none"). Pass only the
    turns the asking user may still read (`readable_history`)."""
    settings = settings or Settings()
    text = question.strip()
    if not previous or not text:
        return Resolution.as_typed(text)
    notice = None
    if is_language_model(generator) and rules.is_follow_up(text):
        try:
            condensed = condense.condense(generator, previous, text, settings.max_question_chars)
        except GeneratorError as exc:
            log.warning("condensing a follow-up failed, the rules rewrite it: %s", exc)
            notice = CONDENSE_FAILED
        else:
            if condensed is not None:
                if words(condensed) == words(text):
                    return Resolution.as_typed(text)
                return Resolution.rewritten_by(METHOD_LLM, condensed)
            log.warning("the language model returned no condensed question; the rules rewrite it")
            notice = CONDENSE_FAILED
    rewritten = rules.rewrite(previous, text, settings.max_question_chars)
    if rewritten is None:
        return Resolution(text, notice=notice)
    return Resolution.rewritten_by(METHOD_RULES, rewritten, notice)
