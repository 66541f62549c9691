"""The topic-switch pairs (eval/topic_switches.py): an everyday question asked after an unrelated one.

They measure what the follow-up rules cost a question that stands on its own, so each pair must
be a valid conversation in the gold format (it round-trips through the loader), asked by one
role, on two different articles, turn 2 a subject change whose written-out form is itself; the
splits must keep to the everyday set's halves (a test pair never uses a question tuning saw);
and the same seed must give the same pairs.
"""

from __future__ import annotations

from eval.conversation_run import SUBJECT_CHANGE, kind_of
from eval.conversations import DEV, TEST, parse_conversations, to_jsonl
from eval.gold_split import everyday_split
from eval.topic_switches import HALF_OF_SPLIT, pairs, topic_switches

HALVES = everyday_split()


def test_every_answerable_question_of_the_half_is_asked_once_as_turn_two_after_another_article():
    for split in (DEV, TEST):
        conversations = topic_switches(split)
        answerable = [q for q in HALVES[HALF_OF_SPLIT[split]] if q.answerable]
        assert len(conversations) == len(answerable) >= 100
        assert sorted(c.turns[1].question for c in conversations) == sorted(q.question for q in answerable)
        for c in conversations:
            first, second = c.turns
            assert c.split == split and first.roles == second.roles
            assert (first.expected[0].document, first.expected[0].article) != \
                   (second.expected[0].document, second.expected[0].article)
            assert second.standalone == second.question and not second.follow_up
            assert kind_of(second, 1) == SUBJECT_CHANGE


def test_an_other_law_is_preferred_when_the_role_reads_one():
    for c in topic_switches(DEV):
        first, second = c.turns
        if second.roles != ("isg",):  # isg reads 6331 only
            assert first.expected[0].document != second.expected[0].document, c.id


def test_dev_and_test_pairs_keep_to_their_own_halves():
    half = {split: {q.question for q in HALVES[HALF_OF_SPLIT[split]]} for split in (DEV, TEST)}
    for split, other in ((DEV, TEST), (TEST, DEV)):
        asked = {t.question for c in topic_switches(split) for t in c.turns}
        assert asked <= half[split] and not asked & half[other]


def test_pairs_are_valid_conversations_and_seeded():
    conversations = topic_switches(DEV, 20)
    assert len(conversations) == 20 and [c.id for c in conversations][:2] == ["ts001", "ts002"]
    assert parse_conversations(to_jsonl(conversations)) == conversations
    assert topic_switches(DEV, 20) == conversations
    other_seed = pairs(HALVES[HALF_OF_SPLIT[DEV]], DEV, 20, seed=1)
    assert [c.turns for c in other_seed] != [c.turns for c in conversations]
