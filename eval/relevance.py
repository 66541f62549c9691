"""Which chunks answer a question: a chunk of its own article whose span holds the whole answer.

A chunk that holds only part of the answer is not relevant (a reader could not quote it), and a
chunk of another article that happens to contain the same words is not relevant either (TQuAD
answers are tied to their paragraph).
"""

from __future__ import annotations

from collections.abc import Sequence

from eval.tquad import ChunkSet, Question


def relevant_chunks(chunks: ChunkSet, question: Question) -> list[int]:
    return [
        i
        for i in chunks.by_article[question.article]
        if chunks.chunks[i].start <= question.start and question.end <= chunks.chunks[i].end
    ]


def relevance(chunks: ChunkSet, questions: Sequence[Question]) -> list[list[int]]:
    return [relevant_chunks(chunks, q) for q in questions]
