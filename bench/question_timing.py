"""Question timing probe: can a user tell from retrieval_ms which texts another user asked?

Issue 21's attack, run against the app's own code in a scratch embedded database (a temporary
DATA_DIR, removed at the end) with the 6331 law readable by isg and ik. Per arm, 2N TQuAD dev
questions are split at random into N "asked" and N "fresh": user A (ik) asks the asked ones
through the answer service (the chat the app runs); user B (isg) then searches all 2N in a
random order through `retrieve` (what Kaynak arama, the API's /v1/search and the CLI call) and
records the `retrieval_ms` each shows. Two arms:

- app: the embedder as every user path builds it (`CachedEmbedder`, questions not cached);
- control: the former shared question cache (`cache_questions=True`, what the app did before
  issue 21), to show the probe finds a leak where there is one.

Reports per arm the median retrieval_ms of asked and fresh texts, the model's question embeddings
for B's searches of each, a two-sided Mann–Whitney U test, and the accuracy of guessing "asked"
when a search is faster than the median of all 2N (chance is 0.5). Prints a markdown section and
writes bench/results/question_timing.md with its run card.

    python -m bench.question_timing [--texts 40] [--backend use]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scipy.stats import mannwhitneyu

from bench import publish
from ragcore.access import create_user, get_user
from ragcore.answer import AnswerService, make_generator
from ragcore.core import Settings
from ragcore.documents import ingest_pdf
from ragcore.embed import CachedEmbedder, make_embedder
from ragcore.retrieval import resolve_mode, retrieve
from ragcore.store import Database, database_url, ensure_embedding_space, open_database, stop_embedded

LAW = "6331-is-sagligi-ve-guvenligi-kanunu.pdf"
SEED = 21
ASKER, PROBER = "ik", "isg"


class CountingModel:
    """The model behind a counter at the embedder boundary: how often it embedded each question."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.kind, self.model, self.name, self.dim = inner.kind, inner.model, inner.name, inner.dim
        self.questions: Counter[str] = Counter()

    def embed_queries(self, texts: Sequence[str]):
        self.questions.update(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]):
        return self.inner.embed_passages(texts)


@dataclass(frozen=True)
class Arm:
    name: str
    asked_ms: list[float]
    fresh_ms: list[float]
    asked_embeddings: int  # the model's question embeddings for B's searches of the asked texts
    fresh_embeddings: int
    p_value: float
    accuracy: float  # guessing "asked" when faster than the median of all searches

    def as_dict(self) -> dict:
        return {"arm": self.name, "asked_ms_median": round(statistics.median(self.asked_ms), 3),
                "fresh_ms_median": round(statistics.median(self.fresh_ms), 3),
                "asked_embeddings": self.asked_embeddings, "fresh_embeddings": self.fresh_embeddings,
                "mann_whitney_p": self.p_value, "guess_accuracy": self.accuracy, "texts_per_group": len(self.asked_ms)}


def guess_accuracy(asked_ms: Sequence[float], fresh_ms: Sequence[float]) -> float:
    """Share of searches classified right by "asked if faster than the median of all" (ties: fresh)."""
    threshold = statistics.median([*asked_ms, *fresh_ms])
    right = sum(ms < threshold for ms in asked_ms) + sum(ms >= threshold for ms in fresh_ms)
    return right / (len(asked_ms) + len(fresh_ms))


def probe(name: str, db: Database, settings: Settings, model, texts: Sequence[str], *, cache_questions: bool) -> Arm:
    """User A asks half of `texts`; user B searches all of them; B's retrieval_ms per group."""
    counting = CountingModel(model)
    embedder = CachedEmbedder(counting, db, cache_questions=cache_questions)
    rng = random.Random(f"{SEED}:{name}")
    shuffled = list(texts)
    rng.shuffle(shuffled)
    half = len(shuffled) // 2
    asked, fresh = shuffled[:half], shuffled[half:]
    service = AnswerService(db, settings, embedder, make_generator(settings, embedder))
    asker = get_user(db, "soran")
    for text in asked:
        service.ask(asker, text)
    mode = resolve_mode(settings, embedder)
    before = Counter(counting.questions)
    order = list(shuffled)
    rng.shuffle(order)
    ms = {text: retrieve(db, embedder, text, PROBER, k=settings.top_k, mode=mode).ms for text in order}
    asked_ms, fresh_ms = [ms[t] for t in asked], [ms[t] for t in fresh]
    calls = {t: counting.questions[t] - before[t] for t in shuffled}
    return Arm(name, asked_ms, fresh_ms, sum(calls[t] for t in asked), sum(calls[t] for t in fresh),
               float(mannwhitneyu(asked_ms, fresh_ms, alternative="two-sided").pvalue),
               guess_accuracy(asked_ms, fresh_ms))


def section(arms: Sequence[Arm], backend_name: str, texts: int) -> str:
    lines = [
        "## Question timing probe (can retrieval_ms tell which texts another user asked?)",
        "",
        "| arm | texts per group | retrieval_ms median asked / fresh | model embeddings asked / fresh "
        "| Mann–Whitney p | guessed right |",
        "|---|---:|---|---|---:|---:|",
    ]
    for a in arms:
        lines.append(f"| {a.name} | {len(a.asked_ms)} | {statistics.median(a.asked_ms):.2f} / "
                     f"{statistics.median(a.fresh_ms):.2f} | {a.asked_embeddings} / {a.fresh_embeddings} "
                     f"| {a.p_value:.3g} | {a.accuracy:.2f} |")
    lines += ["", f"Embedder {backend_name}; {texts} TQuAD dev questions per arm, half asked by an {ASKER} user "
                  f"through the answer service, then all searched by an {PROBER} user in a random order. "
                  "app = questions not cached (every user path); control = the former shared question cache "
                  "(cache_questions=True). Guessing \"asked\" when faster than the median: chance is 0.50."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from eval.tquad import load_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=40, help="N: texts asked (and as many fresh) per arm")
    parser.add_argument("--backend", default="use", help="embedding backend (use, e5)")
    args = parser.parse_args(argv)
    base = Settings.from_env(dotenv=None)
    scratch = Path(tempfile.mkdtemp(prefix="dayanak-question-timing-"))
    settings = base.replace(database_url=None, data_dir=scratch, embed_backend=args.backend, llm_backend="extractive",
                          ollama_base_url="http://127.0.0.1:9")
    try:
        settings = settings.replace(database_url=database_url(settings))
        db = open_database(settings)
        model = make_embedder(settings)
        ensure_embedding_space(db, model.name, model.dim)
        started = time.perf_counter()
        ingest_pdf(db, settings, CachedEmbedder(model, db), (base.documents_dir / LAW).read_bytes(), filename=LAW,
                   roles=[ASKER, PROBER], uploaded_by="bench")
        print(f"ingested {LAW} in {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
        create_user(db, "soran", ASKER, "soru-zamani-parola")
        questions = [q.question for q in load_corpus(base.tquad_dir).dev_questions]
        picked = random.Random(SEED).sample(questions, 4 * args.texts + 5)
        for warm in picked[-5:]:  # model, pool and plans warmed before anything is timed
            retrieve(db, CachedEmbedder(model, db), warm, PROBER, k=settings.top_k, mode=resolve_mode(settings, model))
        arms = [probe("app", db, settings, model, picked[: 2 * args.texts], cache_questions=False),
                probe("control", db, settings, model, picked[2 * args.texts : 4 * args.texts], cache_questions=True)]
        db.close()
        publish("question_timing", section(arms, model.name, 2 * args.texts),
                numbers={"embedder": model.name, "texts_per_arm": 2 * args.texts,
                         "arms": [a.as_dict() for a in arms]})
        return 0
    finally:
        stop_embedded(scratch)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
