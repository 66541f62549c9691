"""The reader's extra training questions (eval/gold/everyday_train_extra.jsonl) against the law text.

A training pair is only as right as its gold: a key fact that is not in the article, or an
article name that is not the law's, teaches the reader the wrong window. Every answerable
question goes through the conversation set's law-text check (`assert_on_the_law_text` in
tests/test_eval_conversations.py): the heading once, on or before the first cited page; the
cited pages inside the article's chunks; every key fact on them and in a chunk of the article.
"""

from __future__ import annotations

import pytest

from eval.reader.data import extra_questions
from tests.test_eval_conversations import assert_on_the_law_text

QUESTIONS = extra_questions()
ANSWERABLE = [q for q in QUESTIONS if q.answerable]


def test_ids_are_unique_and_name_their_batch_and_law():
    assert len({q.id for q in QUESTIONS}) == len(QUESTIONS) > 800
    for q in QUESTIONS:
        assert q.id[0] in "xyz", q.id
        if q.id[0] in "yz":  # x… (round 13) are numbered only; y… and z… carry their law
            assert all(e.document.startswith(q.id[1:5]) for e in q.expected), q.id


@pytest.mark.slow
@pytest.mark.needs_data("laws")
@pytest.mark.parametrize("question", ANSWERABLE, ids=[q.id for q in ANSWERABLE])
def test_every_key_fact_is_on_its_cited_pages_inside_its_article(question):
    for entry in question.expected:
        assert_on_the_law_text(question.id, entry, question.key_facts)
