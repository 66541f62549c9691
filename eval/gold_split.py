"""Train and dev halves of a gold set, split by question with a fixed seed.

Everything tuned on everyday questions (the abstention model, its operating points, fusion
weights) is fitted on the train half and chosen on the dev half; the paraphrase set is only
reported. The split is stratified by kind (each law's answerable questions, each kind of
unanswerable one, read from `notes` before the first colon) so both halves see every kind.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eval.goldset import GoldQuestion, parse_jsonl

EVERYDAY_FILE = Path(__file__).resolve().parent / "gold" / "everyday_laws.jsonl"
SPLIT_SEED = 0
TRAIN, DEV = "train", "dev"


def kind_of(question: GoldQuestion) -> str:
    """The stratum: "answerable:<document>" or the unanswerable kind the notes start with."""
    if question.answerable:
        return "answerable:" + question.expected[0].document
    return "unanswerable:" + (question.notes.split(":", 1)[0].strip() if ":" in question.notes else "other")


def split(questions: Sequence[GoldQuestion], seed: int = SPLIT_SEED) -> dict[str, list[GoldQuestion]]:
    """Half of each stratum (the larger half to train when odd), in file order within a half."""
    strata: dict[str, list[int]] = defaultdict(list)
    for index, question in enumerate(questions):
        strata[kind_of(question)].append(index)
    rng = np.random.default_rng(seed)
    train: set[int] = set()
    for name in sorted(strata):
        members = strata[name]
        chosen = rng.permutation(len(members))[: (len(members) + 1) // 2]
        train.update(members[i] for i in chosen)
    return {TRAIN: [q for i, q in enumerate(questions) if i in train],
            DEV: [q for i, q in enumerate(questions) if i not in train]}


def everyday_split(seed: int = SPLIT_SEED) -> dict[str, list[GoldQuestion]]:
    """The shipped everyday-question development set, split."""
    return split(parse_jsonl(EVERYDAY_FILE.read_text(encoding="utf-8")), seed)
