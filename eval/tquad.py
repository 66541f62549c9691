"""TQuAD v0.1 as a retrieval benchmark: the seed's protocol, reproduced exactly.

Queries are the 892 dev questions; the corpus is the 72 dev articles plus the train articles as
distractors, minus those that leak dev content (same title after `strip().lower()`, or a paragraph
identical to a dev paragraph). Article text is the paragraphs, each with its whitespace runs
collapsed, joined by a blank line; every answer offset is mapped through that change and checked.
The counts are asserted so that a changed data file or a changed rule cannot go unnoticed.

The "train" protocol is the same corpus queried with questions of the kept train articles; it is
only used to tune choices (a fusion weight) that are then reported on dev.
"""

from __future__ import annotations

import bisect
import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ragcore.core import sha256_file

DEV_FILE = "dev-v0.1.json"
TRAIN_FILE = "train-v0.1.json"

EXPECTED_DEV_QUESTIONS = 892
EXPECTED_DEV_ARTICLES = 72
EXPECTED_EXCLUDED_TRAIN = 56
EXPECTED_KEPT_TRAIN = 625
EXPECTED_ARTICLES = 697

CHUNK_SIZES: tuple[int, ...] = (500, 1000, 1500)
OVERLAP_RATIO = 0.15
PARAGRAPH_SEPARATOR = "\n\n"
TRAIN_SAMPLE_SEED = 0
DEFAULT_TRAIN_QUESTIONS = 1000

_WS = re.compile(r"\s+")
_NON_WS = re.compile(r"\S+")

Progress = Callable[[str, int, int], None]


class ProtocolError(AssertionError):
    """The data does not give the seed's counts: the benchmark would not be comparable."""


@dataclass(frozen=True)
class Article:
    index: int
    key: str  # "dev/12" or "train/345": position in its file, stable across runs
    title: str
    text: str
    split: str


@dataclass(frozen=True)
class Question:
    qid: str
    article: int  # index into Corpus.articles
    question: str
    answer: str  # gold answer, whitespace-normalised exactly like the article text
    start: int  # span of the answer in the article text
    end: int


@dataclass(frozen=True)
class TextChunk:
    """A chunk of one article with its span into the article text (from the production chunker)."""

    index: int  # position in the ChunkSet
    chunk_id: str  # "<article key>#<ordinal>", stable and readable
    article: int
    ordinal: int
    start: int
    end: int
    text: str


@dataclass
class Corpus:
    articles: list[Article]
    dev_questions: list[Question]
    train_questions: list[Question]
    excluded_train: int
    kept_train: int
    unmapped_train_answers: int
    file_hashes: dict[str, str]

    @property
    def characters(self) -> int:
        return sum(len(a.text) for a in self.articles)

    def counts(self) -> dict[str, int]:
        return {
            "articles": len(self.articles),
            "dev_articles": sum(1 for a in self.articles if a.split == "dev"),
            "kept_train": self.kept_train,
            "excluded_train": self.excluded_train,
            "dev_questions": len(self.dev_questions),
            "train_questions": len(self.train_questions),
            "characters": self.characters,
        }

    def questions(self, split: str) -> list[Question]:
        if split == "dev":
            return self.dev_questions
        if split == "train":
            return self.train_questions
        raise ValueError(f"unknown question split {split!r} (dev or train)")


@dataclass
class ChunkSet:
    size: int
    overlap: int
    chunks: list[TextChunk]
    by_article: list[list[int]] = field(default_factory=list)

    @property
    def texts(self) -> list[str]:
        return [c.text for c in self.chunks]

    def __len__(self) -> int:
        return len(self.chunks)


# --------------------------------------------------------------------------- normalisation


def collapse(text: str) -> str:
    """Whitespace runs to one space, stripped: the form of every paragraph and gold answer."""
    return _WS.sub(" ", text).strip()


class _OffsetMap:
    """Maps offsets of non-space characters of a raw paragraph into its collapsed form.

    Collapsing keeps every non-space run intact and puts one space between runs, so an offset
    inside run i moves by (new start of run i - old start of run i).
    """

    def __init__(self, raw: str):
        self.old_starts: list[int] = []
        self.shifts: list[int] = []
        new = 0
        for run in _NON_WS.finditer(raw):
            if self.old_starts:
                new += 1  # the single space between runs
            self.old_starts.append(run.start())
            self.shifts.append(new - run.start())
            new += run.end() - run.start()

    def __call__(self, offset: int) -> int:
        i = bisect.bisect_right(self.old_starts, offset) - 1
        if i < 0:
            raise ValueError(f"offset {offset} lies before the first non-space character")
        return offset + self.shifts[i]


def _map_answer(raw: str, omap: _OffsetMap, base: int, answer: str, start: int) -> tuple[int, int] | None:
    """Map an answer span of a raw paragraph to (start, end) in the article text, or None."""
    if raw[start : start + len(answer)] != answer or not answer.strip():
        return None
    lead = len(answer) - len(answer.lstrip())
    first = start + lead
    last = start + len(answer.rstrip()) - 1
    if raw[first].isspace() or raw[last].isspace():
        return None
    return base + omap(first), base + omap(last) + 1


def _article_text(paragraphs: Sequence[dict]) -> tuple[str, list[tuple[int, _OffsetMap]]]:
    """The article text and, per paragraph, its start offset and offset map."""
    parts: list[str] = []
    maps: list[tuple[int, _OffsetMap]] = []
    pos = 0
    for i, para in enumerate(paragraphs):
        if i:
            pos += len(PARAGRAPH_SEPARATOR)
        raw = para["context"]
        maps.append((pos, _OffsetMap(raw)))
        part = collapse(raw)
        parts.append(part)
        pos += len(part)
    return PARAGRAPH_SEPARATOR.join(parts), maps


# --------------------------------------------------------------------------- loading


def _leaks(article: dict, dev_titles: set[str], dev_paragraphs: set[str]) -> bool:
    if article["title"].strip().lower() in dev_titles:
        return True
    return any(p["context"] in dev_paragraphs for p in article["paragraphs"])


def _questions_of(raw: dict, index: int, text: str, maps: list[tuple[int, _OffsetMap]], split: str):
    """Yield (Question or None) per question: None when its answer offset does not map."""
    for para, (base, omap) in zip(raw["paragraphs"], maps, strict=True):
        for qa in para["qas"]:
            gold = qa["answers"][0]
            span = _map_answer(para["context"], omap, base, gold["text"], int(gold["answer_start"]))
            answer = collapse(gold["text"])
            if span is None or text[span[0] : span[1]] != answer:
                yield None
                continue
            yield Question(f"{split}-{qa['id']}", index, collapse(qa["question"]), answer, span[0], span[1])


def _check(name: str, actual: int, expected: int) -> None:
    if actual != expected:
        raise ProtocolError(f"TQuAD protocol: expected {expected} {name}, found {actual}")


def load_corpus(tquad_dir: Path, *, check: bool = True) -> Corpus:
    """Build the corpus and both question sets, asserting the seed's counts (check=True)."""
    tquad_dir = Path(tquad_dir)
    dev_path, train_path = tquad_dir / DEV_FILE, tquad_dir / TRAIN_FILE
    for path in (dev_path, train_path):
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: run `python scripts/download_data.py` or set TQUAD_DIR")
    dev = json.loads(dev_path.read_text(encoding="utf-8"))["data"]
    train = json.loads(train_path.read_text(encoding="utf-8"))["data"]
    dev_titles = {a["title"].strip().lower() for a in dev}
    dev_paragraphs = {p["context"] for a in dev for p in a["paragraphs"]}
    kept = [(i, a) for i, a in enumerate(train) if not _leaks(a, dev_titles, dev_paragraphs)]

    articles: list[Article] = []
    dev_questions: list[Question] = []
    train_questions: list[Question] = []
    unmapped_dev = unmapped_train = 0
    sources = [("dev", i, a) for i, a in enumerate(dev)] + [("train", i, a) for i, a in kept]
    for index, (split, position, raw) in enumerate(sources):
        text, maps = _article_text(raw["paragraphs"])
        articles.append(Article(index, f"{split}/{position}", raw["title"].strip(), text, split))
        for question in _questions_of(raw, index, text, maps, split):
            if question is None:
                unmapped_dev += split == "dev"
                unmapped_train += split == "train"
            else:
                (dev_questions if split == "dev" else train_questions).append(question)

    corpus = Corpus(
        articles=articles,
        dev_questions=dev_questions,
        train_questions=train_questions,
        excluded_train=len(train) - len(kept),
        kept_train=len(kept),
        unmapped_train_answers=unmapped_train,
        file_hashes={DEV_FILE: sha256_file(dev_path), TRAIN_FILE: sha256_file(train_path)},
    )
    if check:
        _check("unmapped dev answers", unmapped_dev, 0)
        _check("dev questions", len(dev_questions), EXPECTED_DEV_QUESTIONS)
        _check("dev articles", len(dev), EXPECTED_DEV_ARTICLES)
        _check("excluded train articles", corpus.excluded_train, EXPECTED_EXCLUDED_TRAIN)
        _check("kept train articles", corpus.kept_train, EXPECTED_KEPT_TRAIN)
        _check("corpus articles", len(articles), EXPECTED_ARTICLES)
    return corpus


@lru_cache(maxsize=2)
def cached_corpus(tquad_dir: str) -> Corpus:
    """One parse per process (the page and the sweep ask repeatedly)."""
    return load_corpus(Path(tquad_dir))


def sample_train_questions(corpus: Corpus, n: int = DEFAULT_TRAIN_QUESTIONS, seed: int = TRAIN_SAMPLE_SEED):
    """A fixed random sample of train questions for tuning (all 8k would triple embedding time)."""
    pool = corpus.train_questions
    if n <= 0 or n >= len(pool):
        return list(pool)
    picked = sorted(random.Random(seed).sample(range(len(pool)), n))
    return [pool[i] for i in picked]


# --------------------------------------------------------------------------- chunking


def overlap_for(size: int) -> int:
    return round(size * OVERLAP_RATIO)


def chunk_corpus(corpus: Corpus, size: int, progress: Progress | None = None) -> ChunkSet:
    """Chunk every article with the production chunker (15 % overlap); spans index the article."""
    from ragcore.documents import chunk_text  # the code the app runs

    overlap = overlap_for(size)
    chunks: list[TextChunk] = []
    by_article: list[list[int]] = []
    total = len(corpus.articles)
    for article in corpus.articles:
        members: list[int] = []
        for ordinal, piece in enumerate(chunk_text(article.text, size, overlap)):
            index = len(chunks)
            chunks.append(
                TextChunk(
                    index=index,
                    chunk_id=f"{article.key}#{ordinal}",
                    article=article.index,
                    ordinal=ordinal,
                    start=piece.char_start,
                    end=piece.char_end,
                    text=piece.text,
                )
            )
            members.append(index)
        by_article.append(members)
        if progress and (article.index % 50 == 0 or article.index == total - 1):
            progress(f"chunking {size}", article.index + 1, total)
    return ChunkSet(size=size, overlap=overlap, chunks=chunks, by_article=by_article)
