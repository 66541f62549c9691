"""A retrieval sweep: retrievers × chunk sizes on the TQuAD dev questions, with metrics and CIs.

The sweep is a pure function of the data, the configuration and the code (plus the app's
embedding cache in PostgreSQL, which only saves time); the CLI, the page and the benchmark all
call `run_sweep`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from eval import metrics
from eval.relevance import relevance
from eval.retrievers import Retriever, Workspace, make_retriever
from eval.tquad import CHUNK_SIZES, ChunkSet, Corpus, Progress, Question, cached_corpus

DEPTH = 10


@dataclass
class SweepConfig:
    retrievers: list[str]
    chunk_sizes: list[int] = field(default_factory=lambda: list(CHUNK_SIZES))
    depth: int = DEPTH
    baseline: str | None = None  # "retriever@size"; default: first retriever at 1000 (or the first size)
    train_questions: int = 1000  # recorded only: a sweep tunes nothing (`python -m eval fit retrieval` does)
    limit: int | None = None  # first N dev questions only (tests, quick looks)
    keep_namespaces: bool = False

    def baseline_key(self) -> str:
        if self.baseline:
            return self.baseline if "@" in self.baseline else f"{self.baseline}@{self._default_size()}"
        return f"{self.retrievers[0]}@{self._default_size()}"

    def _default_size(self) -> int:
        return 1000 if 1000 in self.chunk_sizes else self.chunk_sizes[0]

    def as_dict(self) -> dict:
        return {
            "retrievers": self.retrievers,
            "chunk_sizes": self.chunk_sizes,
            "depth": self.depth,
            "baseline": self.baseline_key(),
            "train_questions": self.train_questions,
            "limit": self.limit,
            "overlap_ratio": 0.15,
            "bootstrap_resamples": metrics.RESAMPLES,
            "randomization_permutations": metrics.PERMUTATIONS,
            "seed": metrics.SEED,
        }


@dataclass
class SystemRun:
    retriever: str
    chunk_size: int
    top: np.ndarray  # (n questions, depth) chunk indices into the size's ChunkSet
    scores: dict[str, np.ndarray]
    seconds: float
    config: dict

    @property
    def key(self) -> str:
        return f"{self.retriever}@{self.chunk_size}"


@dataclass
class SweepResult:
    config: SweepConfig
    corpus: Corpus
    questions: list[Question]
    chunk_sets: dict[int, ChunkSet]
    relevant: dict[int, list[list[int]]]
    runs: list[SystemRun]
    summaries: dict[str, dict]
    comparisons: list[dict]
    tuned: dict[str, dict]
    timings: dict[str, float]
    extras: dict[str, dict] = field(default_factory=dict)

    def run(self, key: str) -> SystemRun:
        return next(r for r in self.runs if r.key == key)


def default_embedder_factory(settings) -> Callable[[str], object]:
    """spec "default" = the configured embedder; "e5"; "use"; anything else = that Ollama model."""

    def make(spec: str):
        from ragcore.embed import make_embedder

        if spec == "default":
            return make_embedder(settings)
        if spec in ("e5", "use"):
            return make_embedder(settings.replace(embed_backend=spec))
        return make_embedder(settings.replace(embed_backend="ollama", embed_model=spec))

    return make


def make_workspace(settings, progress: Progress | None = None, cache_db=None,
                   embedder_factory: Callable[[str], object] | None = None, corpus: Corpus | None = None,
                   embedding_cache: bool = True) -> Workspace:
    """A workspace whose embeddings go through the embedding cache of `cache_db` (default: a small
    pool on the settings' database, opened when the first embedder is needed and closed by
    `Workspace.close`); `embedding_cache=False` for none."""

    def open_cache():
        from ragcore import store as dbmod

        database = dbmod.Database(dbmod.database_url(settings), max_size=2)
        dbmod.migrate(database)  # the cache table (migration 006) exists from here on
        return database

    return Workspace(
        corpus=corpus or cached_corpus(str(settings.tquad_dir)),
        cache_db=cache_db if embedding_cache else None,
        embedder_factory=embedder_factory or default_embedder_factory(settings),
        progress=progress,
        settings=settings,
        open_cache=open_cache if embedding_cache and cache_db is None else None,
    )


def _run_one(ws: Workspace, retriever: Retriever, size: int, questions: Sequence[Question], depth: int,
             rel: list[list[int]]) -> SystemRun:
    started = time.perf_counter()
    top = retriever.rank(ws, size, questions, "dev", depth)
    seconds = time.perf_counter() - started
    scores = metrics.per_question(top.tolist(), rel)
    return SystemRun(retriever.name, size, top, scores, seconds, retriever.config())


def run_sweep(settings, config: SweepConfig, progress: Progress | None = None, *,
              workspace: Workspace | None = None) -> SweepResult:
    """Run every retriever at every chunk size; bootstrap CIs and comparisons against the baseline."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    ws = workspace or make_workspace(settings, progress)
    ws.progress = progress
    questions = ws.corpus.dev_questions[: config.limit] if config.limit else ws.corpus.dev_questions
    retrievers = [make_retriever(name) for name in config.retrievers]
    for r in retrievers:
        if hasattr(r, "keep_namespace"):
            r.keep_namespace = True  # production modes of one sweep share the stored corpus
    timings["load"] = time.perf_counter() - t0

    runs: list[SystemRun] = []
    chunk_sets: dict[int, ChunkSet] = {}
    rels: dict[int, list[list[int]]] = {}
    for size in config.chunk_sizes:
        t = time.perf_counter()
        chunk_sets[size] = ws.chunks(size)
        rels[size] = relevance(chunk_sets[size], questions)
        timings[f"chunking {size}"] = time.perf_counter() - t
        for retriever in retrievers:
            runs.append(_run_one(ws, retriever, size, questions, config.depth, rels[size]))
            timings[runs[-1].key] = runs[-1].seconds

    if not config.keep_namespaces:
        for r in retrievers:
            if hasattr(r, "cleanup"):
                r.cleanup(ws)
    t = time.perf_counter()
    indices = metrics.bootstrap_indices(len(questions))
    summaries = {}
    for i, run in enumerate(runs):
        if progress:
            progress("bootstrap", i, len(runs))
        summaries[run.key] = metrics.summarise(run.scores, indices)
    if progress:
        progress("bootstrap", len(runs), len(runs))
    systems = {run.key: run.scores for run in runs}
    baseline = config.baseline_key()
    comparisons = metrics.compare(systems, baseline, indices=indices) if baseline in systems and len(runs) > 1 else []
    timings["bootstrap"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0
    if workspace is None:
        ws.close()
    extras = {r.key: getattr(r, "extra", {}) for r in runs}
    for retriever in retrievers:
        for key, value in getattr(retriever, "report", {}).items():
            extras.setdefault(f"{retriever.name}@{key}", {}).update(value)
    return SweepResult(config, ws.corpus, list(questions), chunk_sets, rels, runs, summaries, comparisons,
                       dict(ws.tuned), timings, extras)


def results_table(result: SweepResult) -> list[dict]:
    """The summary.json "results" rows: retriever, chunk_size and each metric as {"mean", "ci"}."""
    rows = []
    for run in result.runs:
        row = {"retriever": run.retriever, "chunk_size": run.chunk_size}
        row.update(result.summaries[run.key])
        row["seconds"] = round(run.seconds, 3)
        row["recall_curve"] = metrics.recall_curve(run.scores["rank"], result.config.depth)
        tuned = result.tuned.get(f"{run.retriever}@{run.chunk_size}")
        if tuned:
            row["tuned_weight"] = tuned["weight"]
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- tuning the app's defaults


def mode_retrievers(weight: float) -> dict[str, str]:
    """The app's retrieval in each ragcore.retrieval mode (weighted at the given weight)."""
    return {"lexical": "production-lexical", "dense": "production-dense", "rrf": "production-rrf",
            "weighted": f"production-weighted-w{weight}"}


def tune_fusion(settings, ws: Workspace, size: int = 1000, train_questions: int = 1000,
                dev_limit: int | None = None, weights: Sequence[float] | None = None) -> dict:
    """What `RETRIEVAL_MODE=auto` should use for the workspace's default embedder, from TQuAD train,
    measured on the app's own retrieval (`ragcore.retrieval.search` over the corpus stored once in
    the size's namespace).

    The dense weight comes from `eval.retrievers.tune_production_weight` (the one tuning
    function); the mode is the best of the four production modes on the same train questions
    (Recall@5, then MRR@10; ties → the earlier of weighted, rrf, lexical, dense). Dev is only
    reported: the four at the chosen weight and `production` as it ships today (mode and weight
    of ragcore/measured/retrieval.json), with bootstrap CIs and paired tests against the chosen
    mode; each production run carries its exact numpy reference (`extras`). Returns the report
    and the `ragcore/measured/retrieval.json` entry (`ragcore.retrieval.measurements.write_measured`)."""
    from datetime import date

    from eval.retrievers import WEIGHT_GRID, tune_production_weight
    from eval.tquad import sample_train_questions
    from ragcore.retrieval import retrieval_default

    if not ws.corpus.train_questions:
        raise ValueError("tuning needs TQuAD train questions, and this corpus has none")
    embedder = ws.embedder("default")
    shipped = retrieval_default(embedder.name)
    tuning = tune_production_weight(ws, size, train_questions, tuple(weights) if weights else WEIGHT_GRID,
                                    keep_namespace=True)
    weight = tuning["weight"]
    train = sample_train_questions(ws.corpus, train_questions)
    rel = relevance(ws.chunks(size), train)
    names = mode_retrievers(weight)
    on_train = {}
    for mode in ("weighted", "rrf", "lexical", "dense"):
        retriever = make_retriever(names[mode])
        retriever.keep_namespace = True
        scores = metrics.per_question(retriever.rank(ws, size, train, "train", DEPTH).tolist(), rel)
        on_train[mode] = {m: float(scores[m].mean()) for m in metrics.METRICS}
    mode = max(on_train, key=lambda m: (on_train[m]["recall@5"], on_train[m]["mrr@10"]))
    result = run_sweep(settings, SweepConfig(retrievers=[*names.values(), "production"], chunk_sizes=[size],
                                             limit=dev_limit, baseline=names[mode], train_questions=train_questions),
                       ws.progress, workspace=ws)
    dev = {run.retriever: result.summaries[run.key] for run in result.runs}
    chosen = dev[names[mode]]["recall@5"]
    n_dev = len(result.questions)
    entry = {
        "mode": mode,
        "weight": weight,
        "measured": (f"weight tuned through the app's retrieval (eval.retrievers.tune_production_weight: "
                     f"ragcore.retrieval.search, sentence windows {'on' if settings.dense_windows else 'off'}) on {tuning['train_questions']:,} TQuAD train "
                     f"questions, grid {min(g['weight'] for g in tuning['grid']):.2f}-"
                     f"{max(g['weight'] for g in tuning['grid']):.2f}, Recall@5 then MRR@10: w = {weight}; mode chosen "
                     f"on the same train questions (Recall@5 " + ", ".join(f"{m} {v['recall@5']:.3f}" for m, v in on_train.items())
                     + f"); reported on {n_dev} dev questions at {size} chars: {mode} Recall@5 {chosen['mean']:.3f} "
                     f"[{chosen['ci'][0]:.3f}-{chosen['ci'][1]:.3f}] (python -m eval fit retrieval)"),
        "when": date.today().isoformat(),
        "on": (f"TQuAD v0.1 train (tuning) / dev (report), {size}-char chunks, {embedder.name}"
               + (f", first {dev_limit} dev questions only" if dev_limit else "")),
    }
    return {"embedder": embedder.name, "chunk_size": size, "tuning": tuning, "train_modes": on_train,
            "mode": mode, "weight": weight, "shipped": {"mode": shipped.mode, "weight": shipped.weight},
            "dev": dev, "dev_questions": n_dev, "dev_comparisons": result.comparisons,
            "production": {k: v for k, v in result.extras.items() if v}, "entry": entry}
