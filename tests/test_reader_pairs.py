"""The reader's training pairs (eval/reader/data.py): how a question's pairs are shaped and packed.

Only the pure parts are tested here: building the real pairs reads the laws and embeds every
window (minutes), and training needs torch, which `make test` does not install.
"""

from __future__ import annotations

import json
import random

from eval.goldset import parse_jsonl
from eval.reader.data import PARTIAL, LawWindow, Pair, everyday_pairs, question_batches
from ragcore.reader import ReadWindow


def _pairs(qid: str, n: int) -> list[Pair]:
    return [Pair(f"soru {qid}", f"{qid} bağlam {i}", 1.0 if i == 0 else 0.0, "extra", qid) for i in range(n)]


def test_a_questions_pairs_are_never_split_across_batches():
    pairs = _pairs("a", 5) + _pairs("b", 7) + _pairs("c", 3) + _pairs("d", 9)
    batches = question_batches(pairs, 8, random.Random(0))
    assert sorted(i for b in batches for i in b) == list(range(len(pairs)))
    for batch in batches:
        qids = [pairs[i].qid for i in batch]
        for qid in set(qids):
            assert qids.count(qid) == sum(p.qid == qid for p in pairs)


def test_an_upweighted_question_is_packed_as_two_copies():
    base = _pairs("a", 4) + _pairs("b", 4)
    pairs = base + _pairs("a", 4)  # "a" seen twice, as `reader train` upweights the law sources
    batches = question_batches(pairs, 4, random.Random(1))
    assert len(batches) == 3
    assert sorted(len(b) for b in batches) == [4, 4, 4]
    assert sum(1 for b in batches if pairs[b[0]].qid == "a") == 2


def _window(document: str, article: str, text: str) -> LawWindow:
    return LawWindow(document, article, (1, 1), ReadWindow(0, 0, len(text), text, f"Kanun. {text}"), ("ik",))


class _FixedOrder:
    """A ranker that answers with a fixed order: the pair builder only needs `ranked`."""

    def __init__(self, order: list[int]) -> None:
        self.order = order

    def ranked(self, question: str, allowed=None) -> list[int]:
        return [i for i in self.order if allowed is None or i in allowed]


def test_partial_windows_are_capped_to_the_ones_retrieval_puts_first():
    windows = [_window("k.pdf", "Madde 5", f"beşinci madde cümle {i}") for i in range(6)]
    windows.append(_window("k.pdf", "Madde 5", "izin süresi on dört gündür"))
    windows += [_window("k.pdf", "Madde 9", f"başka madde {i}") for i in range(5)]
    question = parse_jsonl(json.dumps({
        "id": "q1", "question": "Yıllık izin kaç gün?", "answerable": True, "roles": ["ik"],
        "expected": [{"document": "k.pdf", "article": "Madde 5"}], "key_facts": ["on dört gün"]}))[0]
    ranker = _FixedOrder([3, 8, 1, 6, 0, 7, 2, 4, 5, 9, 10, 11])
    pairs = list(everyday_pairs([question], windows, ranker, "extra", negatives=3, partials=2))
    labels = {p.context: p.label for p in pairs}
    assert labels[windows[6].window.context] == 1.0
    assert {c for c, label in labels.items() if label == PARTIAL} == {windows[3].window.context, windows[1].window.context}
    assert [p.context for p in pairs if p.label == 0.0] == [windows[i].window.context for i in (8, 7, 9)]
