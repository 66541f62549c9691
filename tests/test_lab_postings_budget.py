"""The lab's corpora never reach the app's lexical postings budget, so every lab figure is exact
BM25's (docs/retrieval.md, step 5 of the pruning).

A question's lexical leg can read at most every posting of every distinct query term: the sum of
the terms' document frequencies over the chunks its reader may read, which the whole corpus bounds.
Here that bound is computed for every question of the everyday and paraphrase sets over the three
sample laws, and for every TQuAD dev question over the TQuAD lab corpus, both chunked as the app
and the lab chunk them. It must stay under half the budget: the margin covers the respellings and
expansions a question's lexical query may add to its own words.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

import pytest

from ragcore.core import Settings, lexical_tokens
from ragcore.documents import chunk_pages, extract_pages
from ragcore.retrieval import query_terms
from tests.conftest import LAW_4857, LAW_5510, LAW_6331, REPO, TQUAD_DIR

GOLD = REPO / "eval" / "gold"
GOLD_SETS = ("everyday_laws.jsonl", "everyday_train_extra.jsonl", "paraphrase_laws.jsonl")


def document_frequencies(texts: Iterable[str]) -> Counter:
    df: Counter = Counter()
    for text in texts:
        df.update(set(lexical_tokens(text)))
    return df


def largest_plan(df: Counter, questions: Iterable[str]) -> int:
    """The most postings any question's exhaustive lexical plan could read."""
    return max(sum(df[term] for term in set(query_terms(q))) for q in questions)


def test_the_sample_laws_stay_under_the_budget() -> None:
    settings = Settings()
    chunks = [c.text for law in (LAW_6331, LAW_4857, LAW_5510)
              for c in chunk_pages(extract_pages(law.read_bytes()).pages, settings.chunk_size, settings.chunk_overlap)]
    questions = [json.loads(line)["question"] for name in GOLD_SETS
                 for line in (GOLD / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(chunks) > 1000 and len(questions) > 300
    assert largest_plan(document_frequencies(chunks), questions) < settings.lexical_postings_budget / 2


@pytest.mark.slow
def test_the_tquad_lab_corpus_stays_under_the_budget() -> None:
    from eval.tquad import chunk_corpus, load_corpus

    corpus = load_corpus(TQUAD_DIR)
    chunks = [c.text for c in chunk_corpus(corpus, 1000).chunks]
    largest = largest_plan(document_frequencies(chunks), [q.question for q in corpus.dev_questions])
    assert largest < Settings().lexical_postings_budget / 2
