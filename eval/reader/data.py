"""The reader's training pairs, written down: (question, window as the reader reads it, label).

Sources, each labelled by what holds the answer (graded: 1 carries it, 0.25 the same article
without the asked fact, 0 elsewhere):
* TQuAD train (articles that leak dev excluded, `eval.tquad.load_corpus`): the window holding
  the answer span is 1; the other windows of its paragraph and the lexically closest windows of
  the article's other paragraphs are 0.
* The everyday set's train half, and the extra training questions of
  `eval/gold/everyday_train_extra.jsonl`: the gold article's windows carrying every key fact are
  1, its other windows 0.25; the lexically closest windows of other articles the question's
  roles may read are 0. An unanswerable question's closest windows are all 0.
* The laws' article headings asked as questions: the article's first window 1, the rest 0.25,
  other articles' closest windows 0 (the heading is left out of the context, or it would answer
  itself).

A share of the everyday train half (`CALIBRATION_SHARE`, by question, fixed seed) is held back
from training: the reader's holdout curve and its answer/closest/refuse cuts are read on it,
questions the model never saw. The dev half and the paraphrase set are never read here.
Hard negatives of the law questions are what the app's hybrid retrieval would put before the
reader: BM25 over the windows (rank-bm25, on the app's lexical tokens, five-letter prefixes)
fused by reciprocal rank with e5's cosine (the app's default embedder), so building the pairs
needs no database. (Round 13's pairs took BM25 alone, `lexical_only=True`: the model then scored
much like lexical overlap.) A gold article's windows without the asked fact are capped at
`PARTIALS` per question, the ones retrieval puts first.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from rank_bm25 import BM25Okapi

from eval.answers import exact_match
from eval.gold_split import TRAIN, everyday_split, kind_of
from eval.goldset import GoldQuestion, parse_jsonl
from eval.tquad import load_corpus
from ragcore.core import Chunk, get_tokenizer
from ragcore.documents import chunk_pages, chunk_text, default_title, extract_pages
from ragcore.reader import ReadWindow, chunk_passages
from ragcore.retrieval import RRF_K  # the k of retrieval's RRF mode, for the hybrid negatives

EXTRA_FILE = Path(__file__).resolve().parent.parent / "gold" / "everyday_train_extra.jsonl"
CORPUS_FILE = Path(__file__).resolve().parent.parent / "gold" / "paraphrase_laws.corpus.json"
SEED = 0
CALIBRATION_SHARE = 0.4
TQUAD_QUESTIONS = 3500  # sampled from TQuAD train (of ~8,000): the laws should weigh as much
TQUAD_HOLDOUT = 300
CHUNK_SIZE, CHUNK_OVERLAP = 1000, 150  # the app's defaults: the reader reads the app's chunks
HARD_NEGATIVES = 8
PARTIALS = 4  # a gold article's windows without the fact, per question (the hybrid pairs only)
lexical_tokens = get_tokenizer("prefix5")  # the app's own lexical tokens (its BM25 leg)
PARTIAL = 0.25


@dataclass(frozen=True)
class Pair:
    question: str
    context: str
    label: float
    source: str  # tquad | everyday | extra | heading
    qid: str


@dataclass(frozen=True)
class LawWindow:
    document: str  # file name
    article: str | None
    pages: tuple[int, int]
    window: ReadWindow
    roles: tuple[str, ...]


def law_windows(documents_dir: Path) -> list[LawWindow]:
    """Every window of the three sample laws as the app chunks them, with the roles that read each."""
    corpus = json.loads(CORPUS_FILE.read_text(encoding="utf-8"))["documents"]
    out: list[LawWindow] = []
    for filename, meta in corpus.items():
        extracted = extract_pages((documents_dir / filename).read_bytes())
        title = default_title(filename, extracted.title, extracted.pages[0].text)
        chunks: list[Chunk] = chunk_pages(extracted.pages, CHUNK_SIZE, CHUNK_OVERLAP)
        for index, chunk in enumerate(chunks):
            for window in chunk_passages(chunk.text, chunk.article, title, index):
                out.append(LawWindow(filename, chunk.article, (chunk.page_start, chunk.page_end), window,
                                     tuple(meta["roles"])))
    return out


class _Lexical:
    """BM25 over a list of texts, answering with indexes best first."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._bm25 = BM25Okapi([lexical_tokens(t) or ["_"] for t in texts])

    def ranked(self, question: str, allowed: Sequence[int] | None = None) -> list[int]:
        scores = self._bm25.get_scores(lexical_tokens(question) or ["_"])
        pool = range(len(scores)) if allowed is None else allowed
        return sorted(pool, key=lambda i: -scores[i])


class _Hybrid:
    """BM25 and e5's cosine over the same texts, fused by reciprocal rank: the order the app's
    hybrid retrieval approximately gives, without a database."""

    def __init__(self, texts: Sequence[str]) -> None:
        from ragcore.embed import E5Embedder  # the app's default embedder; only the pair builder needs it

        self._lexical = _Lexical(texts)
        self._embedder = E5Embedder()
        self._vectors = self._embedder.embed_passages(list(texts))

    def ranked(self, question: str, allowed: Sequence[int] | None = None) -> list[int]:
        pool = list(range(len(self._vectors))) if allowed is None else list(allowed)
        lexical = self._lexical.ranked(question, pool)
        cosines = self._vectors[pool] @ self._embedder.embed_queries([question])[0]
        dense = [pool[j] for j in sorted(range(len(pool)), key=lambda j: -cosines[j])]
        fused: dict[int, float] = {}
        for order in (lexical, dense):
            for rank, i in enumerate(order):
                fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + rank + 1)
        return sorted(pool, key=lambda i: -fused[i])


def _gold_windows(question: GoldQuestion, windows: Sequence[LawWindow]) -> list[int]:
    wanted = {(e.document, e.article) for e in question.expected}
    return [i for i, w in enumerate(windows) if (w.document, w.article) in wanted]


def everyday_pairs(questions: Sequence[GoldQuestion], windows: Sequence[LawWindow], ranker: _Lexical | _Hybrid,
                   source: str, *, negatives: int = HARD_NEGATIVES, partials: int | None = None) -> Iterator[Pair]:
    """`partials`: keep at most that many of a gold article's windows without the fact, the ones
    `ranker` puts first (None: all, in window order, as round 13 built them)."""
    for q in questions:
        readable = [i for i, w in enumerate(windows) if "admin" in q.roles or set(q.roles) & set(w.roles)]
        gold = set(_gold_windows(q, windows)) if q.answerable else set()
        ranked = ranker.ranked(q.question, readable)
        position = {i: n for n, i in enumerate(ranked)}
        gold_order = sorted(gold) if partials is None else sorted(gold, key=lambda i: (position.get(i, len(ranked)), i))
        kept_partials = 0
        for i in gold_order:
            carries = bool(q.key_facts) and all(exact_match(f, windows[i].window.text) for f in q.key_facts)
            if not carries and partials is not None:
                if kept_partials >= partials:
                    continue
                kept_partials += 1
            yield Pair(q.question, windows[i].window.context, 1.0 if carries else PARTIAL, source, q.id)
        gold_articles = {(windows[i].document, windows[i].article) for i in gold}
        negatives_of = [i for i in ranked if (windows[i].document, windows[i].article) not in gold_articles][:negatives]
        for i in negatives_of:
            yield Pair(q.question, windows[i].window.context, 0.0, source, q.id)


def heading_pairs(windows: Sequence[LawWindow], ranker: _Lexical | _Hybrid, rng: random.Random, limit: int) -> Iterator[Pair]:
    """Each article's heading as a question (only chunks that print a heading)."""
    firsts: dict[tuple[str, str | None], list[int]] = {}
    for i, w in enumerate(windows):
        if w.article and w.window.context.count(". ") >= 2:
            firsts.setdefault((w.document, w.article), []).append(i)
    keys = sorted(firsts)
    rng.shuffle(keys)
    for key in keys[:limit]:
        members = firsts[key]
        title, heading, *_ = windows[members[0]].window.context.split(". ")
        if len(heading.split()) < 2 or heading.startswith("MADDE"):
            continue
        for rank, i in enumerate(members):
            body = windows[i].window.context.replace(f"{heading}. ", "", 1)
            yield Pair(heading, body, 1.0 if rank == 0 else PARTIAL, "heading", f"h:{key[0]}:{key[1]}")
        others = [i for i in ranker.ranked(heading) if (windows[i].document, windows[i].article) != key][:4]
        for i in others:
            yield Pair(heading, windows[i].window.context, 0.0, "heading", f"h:{key[0]}:{key[1]}")


def tquad_pairs(tquad_dir: Path, rng: random.Random, count: int, skip: int = 0) -> Iterator[Pair]:
    """`count` TQuAD train questions after the first `skip` of a seeded shuffle."""
    corpus = load_corpus(tquad_dir)
    windows_of: dict[int, list[ReadWindow]] = {}
    lexical_of: dict[int, _Lexical] = {}
    questions = list(corpus.train_questions)
    rng.shuffle(questions)
    for q in questions[skip:skip + count]:
        article = corpus.articles[q.article]
        if q.article not in windows_of:
            found = []
            for index, chunk in enumerate(chunk_text(article.text, CHUNK_SIZE, CHUNK_OVERLAP)):
                found += [ReadWindow(index, w.start + chunk.char_start, w.end + chunk.char_start, w.text, w.context)
                          for w in chunk_passages(chunk.text, None, article.title, index)]
            windows_of[q.article] = found
            lexical_of[q.article] = _Lexical([w.context for w in found])
        windows = windows_of[q.article]
        positive = [i for i, w in enumerate(windows) if w.start <= q.start and q.end <= w.end]
        if not positive:
            continue
        first = positive[0]
        ranked = lexical_of[q.article].ranked(q.question)
        holding = [i for i in ranked if i not in positive and q.answer not in windows[i].text][:4]
        yield Pair(q.question, windows[first].context, 1.0, "tquad", q.qid)
        for i in holding:
            yield Pair(q.question, windows[i].context, 0.0, "tquad", q.qid)


def question_batches(pairs: Sequence[Pair], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Pair indexes packed question by question (a question's pairs never split), in a shuffled
    question order, each batch closed once it holds `batch_size` pairs or more. A question whose
    pairs appear twice (upweighted) is packed as two copies."""
    members: dict[str, list[int]] = defaultdict(list)
    seen: dict[tuple[str, str], int] = defaultdict(int)
    for i, p in enumerate(pairs):
        copy = seen[(p.qid, p.context)]
        seen[(p.qid, p.context)] += 1
        members[f"{p.qid}#{copy}"].append(i)
    order = sorted(members)
    rng.shuffle(order)
    batches, current = [], []
    for key in order:
        current += members[key]
        if len(current) >= batch_size:
            batches.append(current)
            current = []
    if current:
        batches.append(current)
    return batches


def calibration_split(questions: Sequence[GoldQuestion], share: float = CALIBRATION_SHARE,
                      seed: int = SEED) -> tuple[list[GoldQuestion], list[GoldQuestion]]:
    """(trained on, held back for the holdout curve and the cuts), stratified like the halves."""
    rng = random.Random(seed)
    strata: dict[str, list[GoldQuestion]] = {}
    for q in questions:
        strata.setdefault(kind_of(q), []).append(q)
    held: set[str] = set()
    for name in sorted(strata):
        members = list(strata[name])
        rng.shuffle(members)
        held.update(q.id for q in members[: round(len(members) * share)])
    return [q for q in questions if q.id not in held], [q for q in questions if q.id in held]


def extra_questions() -> list[GoldQuestion]:
    return parse_jsonl(EXTRA_FILE.read_text(encoding="utf-8")) if EXTRA_FILE.is_file() else []


@dataclass(frozen=True)
class PairSets:
    train: list[Pair]
    holdout: list[Pair]
    calibration_ids: list[str]

    def digest(self) -> str:
        h = hashlib.sha256()
        for pair in self.train + self.holdout:
            h.update(json.dumps(asdict(pair), ensure_ascii=False, sort_keys=True).encode())
        return h.hexdigest()


def build_pairs(documents_dir: Path, tquad_dir: Path, *, tquad_questions: int = TQUAD_QUESTIONS,
                headings: int = 400, lexical_only: bool = False) -> PairSets:
    """`lexical_only`: round 13's pairs (BM25 negatives, every partial window)."""
    rng = random.Random(SEED)
    windows = law_windows(documents_dir)
    texts = [w.window.context for w in windows]
    ranker = _Lexical(texts) if lexical_only else _Hybrid(texts)
    shape = {} if lexical_only else {"negatives": HARD_NEGATIVES + 2, "partials": PARTIALS}
    trained, held = calibration_split(everyday_split()[TRAIN])
    train = list(everyday_pairs(trained, windows, ranker, "everyday", **shape))
    train += list(everyday_pairs(extra_questions(), windows, ranker, "extra", **shape))
    train += list(heading_pairs(windows, ranker, rng, headings))
    train += list(tquad_pairs(tquad_dir, random.Random(SEED), tquad_questions, skip=TQUAD_HOLDOUT))
    holdout = list(everyday_pairs(held, windows, ranker, "everyday", **shape))
    holdout += list(tquad_pairs(tquad_dir, random.Random(SEED), TQUAD_HOLDOUT))
    return PairSets(train, holdout, [q.id for q in held])


def write_pairs(pairs: PairSets, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", pairs.train), ("holdout", pairs.holdout)):
        with (folder / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for pair in rows:
                out.write(json.dumps(asdict(pair), ensure_ascii=False) + "\n")
    (folder / "calibration_ids.json").write_text(json.dumps(pairs.calibration_ids), encoding="utf-8")


def read_pairs(path: Path) -> list[Pair]:
    return [Pair(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
