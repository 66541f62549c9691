"""Topic switches: two-turn conversations whose second turn is an unrelated everyday question.

The conversation gold set measures follow-ups, and every subject change in it is a long question;
it cannot say what the follow-up rules do to a question that stands on its own but comes after
another one ("Yıllık izin kaç gündür?" after a maternity-leave question). These pairs can: turn 1
and turn 2 are both answerable everyday questions (`eval/gold/everyday_laws.jsonl`) asked by the
same role, on different articles, so turn 2 typed alone is the right question and every word the
rules carry into it is the old subject. Written in the conversation format (turn 2 a subject
change, `follow_up` false, `standalone` the question itself), so `eval.conversation_run` walks
them through the app and reports them as subject changes.

Splits respect the everyday set's own (`eval.gold_split`): conversation "dev" pairs are drawn
from its train half (tune here), "test" pairs from its dev half (report here), so a rule tuned on
dev never saw a test question. Pairing is seeded: the same split, count and seed give the same
pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eval.conversations import DEV, TEST, GoldConversation, GoldTurn
from eval.gold_split import DEV as EVERYDAY_DEV
from eval.gold_split import TRAIN as EVERYDAY_TRAIN
from eval.gold_split import everyday_split
from eval.goldset import GoldQuestion

SEED = 0
# Conversation split → the everyday set's half its questions come from.
HALF_OF_SPLIT = {DEV: EVERYDAY_TRAIN, TEST: EVERYDAY_DEV}
ID_PREFIX = "ts"


def _turn(question: GoldQuestion, conversation_id: str, n: int) -> GoldTurn:
    return GoldTurn(f"{conversation_id}.{n}", question.question, question.question, False, question.answerable,
                    question.expected, question.roles, question.key_facts, question.notes)


def _article(question: GoldQuestion) -> tuple[str, str]:
    return question.expected[0].document, question.expected[0].article


def pairs(questions: Sequence[GoldQuestion], split: str, count: int | None = None,
          seed: int = SEED) -> list[GoldConversation]:
    """Two-turn conversations: each answerable question of `questions` once as turn 2 (in a seeded
    order, the first `count` kept), after a turn 1 drawn from the answerable questions asked by
    the same roles on another article — of another law when the roles read one."""
    answerable = [q for q in questions if q.answerable]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(answerable))
    conversations = []
    for index in order[: len(answerable) if count is None else count]:
        second = answerable[index]
        same_roles = [q for q in answerable if q.roles == second.roles and _article(q) != _article(second)]
        other_law = [q for q in same_roles if q.expected[0].document != second.expected[0].document]
        pool = other_law or same_roles
        if not pool:
            continue
        first = pool[int(rng.integers(len(pool)))]
        conversation_id = f"{ID_PREFIX}{len(conversations) + 1:03d}"
        conversations.append(GoldConversation(
            conversation_id, split, (_turn(first, conversation_id, 1), _turn(second, conversation_id, 2)),
            f"konu değişikliği: {first.id} → {second.id} (everyday_laws.jsonl)"))
    return conversations


def topic_switches(split: str, count: int | None = None, seed: int = SEED) -> list[GoldConversation]:
    """The topic-switch pairs of a conversation split, from the everyday set's matching half."""
    return pairs(everyday_split()[HALF_OF_SPLIT[split]], split, count, seed)
