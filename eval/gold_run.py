"""A gold run: the company's own questions through the app's own code, per configuration.

A configuration is embedder × mode × chunk size × k. Its index (embedder × chunk size: mode and
k are query-time settings of the same index) is built in a namespace of this run by the upload's
own path (`eval.lab_corpus`, `ragcore.documents.ingest.ingest_pdf`). Then every gold question is asked by
every role that asks it:

1. `ragcore.retrieval.hybrid.retrieve` with that role (the app's SQL, role predicate inside) at depth
   max(10, k), for the ranking metrics, the evidence and the leak check;
2. `ragcore.answer.service.AnswerService.ask` as a user of that role — the refusal gate
   (`ragcore.retrieval.calibration`), the prompt, the generator and the post-generation policy (`finalize_answer`),
   exactly as a user meets them, with the gate's outcome (answer, closest passages, refusal) and
   its probability; when the gate held the answer back, once more with the gate open
   (REFUSAL_THRESHOLD below every score), so the abstention and three-outcome curves know the
   answer behind it.

Each finished case is stored at once (`eval.lab_runs.store_result`), so a cancelled, failed or
interrupted run resumes without asking it again; a configuration whose cases are all stored does
not even rebuild its index. Namespaces are dropped in `finally`. The summary, the per-question
table and the HTML report are written by `eval.gold_report`.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eval import lab_runs
from eval.answers import exact_match, is_refused
from eval.gold_cases import case_key, cases_of
from eval.gold_stats import ChunkInfo, case_scores, relevant_chunks
from eval.goldset import GoldQuestion
from eval.goldstore import SAMPLE_CORPUS, questions
from eval.lab_corpus import (
    CorpusDocument,
    Index,
    company_corpus,
    drop_index,
    ingest_corpus,
    open_index,
    sample_corpus,
)
from ragcore.answer import AnswerService, without_lead
from ragcore.core import (
    ANSWER_POLICIES,
    STATUS_ANSWERED,
    STATUS_FALLBACK,
    STATUS_NEEDS_REVIEW,
    Answer,
    Settings,
    Source,
)
from ragcore.retrieval import MODES, AbstentionModel, QuoteSignals, retrieve
from ragcore.store import Database

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]
EmbedderFactory = Callable[[str], object]
GeneratorFactory = Callable[[Settings, object], object]

EMBEDDERS = ("e5", "use")
DEPTH = 10
OPEN_GATE = -1.0  # below every evidence score: the gate only refuses when nothing is permitted
SNIPPET_CHARS = 600
MODE_LABELS = {"weighted": "ağırlıklı", "lexical": "sözcük", "dense": "vektör", "rrf": "sıra birleştirme"}
STAGES = ("index", "ask", "report")
INGEST_STEPS = {"extract": "sayfalar", "chunk": "parçalar", "embed": "gömme", "store": "kayıt"}
PROGRESS_WRITE_S = 1.0

POLICY_LABELS = {"rules": "kurallar", "reader": "okuyucu"}  # in run labels


class GoldRunError(ValueError):
    """A gold run that cannot start or go on; the message is Turkish."""


@dataclass(frozen=True)
class Configuration:
    embedder: str
    mode: str
    chunk_size: int
    k: int

    @property
    def key(self) -> str:
        return f"{self.embedder}·{self.mode}·{self.chunk_size}·k{self.k}"

    @property
    def index_key(self) -> str:
        return f"index·{self.embedder}·{self.chunk_size}"

    @property
    def label(self) -> str:
        return f"{self.embedder} · {MODE_LABELS.get(self.mode, self.mode)} · {self.chunk_size} karakter · k={self.k}"

    @property
    def depth(self) -> int:
        return max(DEPTH, self.k)


@dataclass(frozen=True)
class GoldRunSpec:
    """What the analyst asked for; stored with the run, so a retry runs exactly the same."""

    gold_set_id: int
    gold_version: int
    embedders: tuple[str, ...] = ("use",)
    modes: tuple[str, ...] = ("weighted",)
    chunk_sizes: tuple[int, ...] = (1000,)
    ks: tuple[int, ...] = (5,)
    corpus: str = "company"
    primary: str = "ndcg@10"
    limit: int | None = None  # only the first N questions (quick looks; not comparable)
    policy: str = "reader"  # the answering policy asked with (Settings.answer_policy; the app's default)

    def configurations(self) -> list[Configuration]:
        return [Configuration(e, m, s, k) for e, m, s, k in
                itertools.product(self.embedders, self.modes, self.chunk_sizes, self.ks)]

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GoldRunSpec:
        data = {"policy": "rules", **data}  # a spec stored before it named its policy was asked with the rules
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

    def check(self) -> None:
        problems = []
        if not self.embedders:
            problems.append("en az bir gömme modeli seçin")
        bad_modes = [m for m in self.modes if m not in MODES]
        if not self.modes or bad_modes:
            problems.append(f"arama modları şunlardan olmalı: {', '.join(MODES)}")
        if not self.chunk_sizes or any(s < 100 for s in self.chunk_sizes):
            problems.append("parça boyutları en az 100 karakter olmalı")
        if not self.ks or any(k < 1 or k > 50 for k in self.ks):
            problems.append("k 1 ile 50 arasında olmalı")
        if self.policy not in ANSWER_POLICIES:
            problems.append(f"cevaplama yolu şunlardan olmalı: {', '.join(ANSWER_POLICIES)}")
        if self.corpus not in ("company", "sample"):
            problems.append("derlem “company” ya da “sample” olmalı")
        if problems:
            raise GoldRunError("Çalıştırma ayarları geçersiz: " + "; ".join(problems) + ".")


def default_embedder_factory(settings: Settings) -> EmbedderFactory:
    """"e5", "use", or "ollama:<model>" → a new embedder (the caller puts it behind the cache)."""

    def make(spec: str) -> object:
        from ragcore.embed import make_embedder

        if spec in EMBEDDERS:
            return make_embedder(settings.replace(embed_backend=spec))
        if spec.startswith("ollama:"):
            return make_embedder(settings.replace(embed_backend="ollama", embed_model=spec.partition(":")[2]))
        raise GoldRunError(f"Bilinmeyen gömme modeli: {spec!r} (e5, use ya da ollama:<model>).")

    return make


def default_generator_factory(settings: Settings, embedder: object) -> object:
    from ragcore.answer import make_generator

    return make_generator(settings, embedder)


# --------------------------------------------------------------------------- progress


class Reporter:
    """One progress call for both listeners: the job's (stage, done, total) — which raises
    `JobCancelled` when the run is to stop — and the run row's detailed line for the page."""

    def __init__(self, db: Database, run_id: int, progress: Progress | None) -> None:
        self.db, self.run_id, self.progress = db, run_id, progress
        self.started = time.monotonic()
        self._last = float("-inf")
        self._stage: str | None = None

    def __call__(self, stage: str, done: int, total: int, configuration: str = "") -> None:
        if self.progress is not None:
            self.progress(stage, done, total)
        now = time.monotonic()
        if stage == self._stage and done < total and now - self._last < PROGRESS_WRITE_S:
            return
        self._stage, self._last = stage, now
        lab_runs.write_progress(self.db, self.run_id, {
            "stage": stage, "done": done, "total": total, "configuration": configuration,
            "elapsed_s": round(now - self.started, 1)})


# --------------------------------------------------------------------------- preparing


def create_gold_run(db: Database, settings: Settings, spec: GoldRunSpec, *, created_by: str | None,
                    folder: Path) -> lab_runs.LabRun:
    """The run row (and its folder name) for a spec; the work is `run_gold`."""
    spec.check()
    version, _ = questions(db, spec.gold_set_id, spec.gold_version)
    label = (f"{version.name} s{version.version} · {len(spec.configurations())} yapılandırma · "
             f"{'şirket dokümanları' if spec.corpus == 'company' else 'örnek kanunlar'} · "
             f"{POLICY_LABELS.get(spec.policy, spec.policy)}")
    return lab_runs.create_run(db, "gold", label=label, configuration=spec.as_dict(), folder=str(folder),
                               created_by=created_by, gold_set_id=spec.gold_set_id, gold_version=spec.gold_version)


def corpus_documents(db: Database, settings: Settings, spec: GoldRunSpec) -> list[CorpusDocument]:
    return company_corpus(db, settings) if spec.corpus == "company" else sample_corpus(settings, SAMPLE_CORPUS)


def corpus_warnings(gold: Sequence[GoldQuestion], documents: Sequence[CorpusDocument]) -> list[str]:
    """Gold lines that cannot be right in this corpus: a missing document, or a role that reads none."""
    from eval.gold_stats import matching_documents

    by_sha = {d.sha256: d.filename for d in documents}
    roles = {d.sha256: d for d in documents}
    out = []
    for q in gold:
        found: set[str] = set()
        for entry in q.expected:
            shas = matching_documents(entry, by_sha)
            if not shas:
                out.append(f"{q.id}: beklenen belge “{entry.document}” bu derlemde yok")
            found |= shas
        if q.answerable and found:
            for role in q.roles:
                if not any(roles[s].readable_by(role) for s in found):
                    out.append(f"{q.id}: “{role}” rolü beklenen belgelerin hiçbirini okuyamıyor")
    return out


# --------------------------------------------------------------------------- one case


def _source_record(source: Source, relevant: set[int], readable: bool) -> dict[str, Any]:
    return {"rank": source.rank, "chunk_id": source.chunk_id, "filename": source.filename, "title": source.title,
            "pages": source.page_label, "page_start": source.page_start, "page_end": source.page_end,
            "article": source.article, "score": source.score, "relevant": source.chunk_id in relevant,
            "readable": readable, "text": source.text[:SNIPPET_CHARS]}


def outcome(question: GoldQuestion, text: str, status: str) -> tuple[str, list[bool]]:
    """correct / fallback / wrong (/ unscored: answerable without key facts), and which facts were found.

    For an unanswerable question the fallback is the right outcome and any answer is wrong.
    """
    text = without_lead(text)  # what the quotes say; the lead line only names their source
    refused = status in (STATUS_FALLBACK, STATUS_NEEDS_REVIEW) or is_refused(text)
    found = [] if refused else [exact_match(fact, text) for fact in question.key_facts]
    if not question.answerable:
        return ("fallback" if refused else "wrong"), found
    if refused:
        return "fallback", found
    if not question.key_facts:
        return "unscored", found
    return ("correct" if all(found) else "wrong"), found


@dataclass
class ConfigurationContext:
    """Everything one configuration asks with: built once per configuration, per run."""

    configuration: Configuration
    index: Index
    embedder: object
    service: AnswerService
    open_service: AnswerService
    chunks: list[ChunkInfo]
    documents: dict[str, CorpusDocument]  # sha256 -> document
    by_id: dict[int, str] = field(default_factory=dict)  # namespace document id -> sha256


def marked_facts(question: GoldQuestion, nearest: Sequence[str]) -> bool | None:
    """Whether the closest outcome's marked sentences, together, carry every key fact (None: no
    marks, or nothing to find — an unanswerable question or one without key facts). Not an
    answer: the reader is shown where to look, and this says whether that place is right."""
    if not nearest or not question.answerable or not question.key_facts:
        return None
    return all(any(exact_match(fact, sentence) for sentence in nearest) for fact in question.key_facts)


def _quote_probability(model: AbstentionModel | None, gated: dict, behind: dict) -> float | None:
    """The gate's quote check on the quote behind the gate: the gated answer's probability and
    signals (the same retrieval) with the ungated quoter's signals, as the chat would combine them
    had its answer cut let the question through."""
    quoted, probability = behind.get("quote_signals"), gated.get("probability")
    if model is None or quoted is None or probability is None or gated.get("signals") is None:
        return None
    return model.quote_probability(probability, gated["signals"], QuoteSignals(**quoted))


def ask_case(ctx: ConfigurationContext, question: GoldQuestion, role: str) -> dict[str, Any]:
    """One gold question asked by one role through the app (see the module docstring)."""
    return ask_case_answer(ctx, question, role)[0]


def ask_case_answer(ctx: ConfigurationContext, question: GoldQuestion, role: str) -> tuple[dict[str, Any], Answer]:
    """`ask_case` and the app's answer itself: a conversation run chains the answer into the next
    turn's history (`ragcore.conversations.turn_of`), as the chat does."""
    config = ctx.configuration
    readable = {sha for sha, doc in ctx.documents.items() if doc.readable_by(role)}
    names = {sha: doc.filename for sha, doc in ctx.documents.items()}
    relevant = relevant_chunks(ctx.chunks, question.expected, names, readable) if question.answerable else set()
    retrieval = retrieve(ctx.index.db, ctx.embedder, question.question, role, k=config.depth, mode=config.mode,
                         windows=ctx.service.settings.dense_windows,
                         postings_budget=ctx.service.settings.lexical_postings_budget)

    # The ranking measured is the answer path's own (the reader's order of its candidates under the
    # reader policy); retrieval's order alone is kept beside it, so one run shows what the reader adds.
    ranked = ctx.service.ranked_sources(role, question.question, config.depth)

    def is_readable(source: Source) -> bool:
        return ctx.by_id.get(source.document_id) in readable

    sources = [_source_record(s, relevant, is_readable(s)) for s in ranked]
    user = ctx.index.users[role]
    answer = ctx.service.ask(user, question.question)  # type: ignore[arg-type]
    answer_outcome, found = outcome(question, answer.text, answer.status)
    threshold = ctx.service.threshold
    model = ctx.service.abstention
    evidence = retrieval.evidence
    gated = answer.status == STATUS_NEEDS_REVIEW
    ungated = None
    if gated and evidence.permitted_hits > 0:
        behind = ctx.open_service.ask(user, question.question)  # type: ignore[arg-type]
        behind_outcome, behind_found = outcome(question, behind.text, behind.status)
        ungated = {"text": behind.text, "status": behind.status, "outcome": behind_outcome, "facts_found": behind_found,
                   "total_ms": behind.total_ms, "quote_confidence": behind.extra.get("quote_confidence"),
                   "quote_probability": _quote_probability(model, answer.extra, behind.extra)}
    answer_sources = [_source_record(s, relevant, is_readable(s)) for s in answer.sources]
    leaks = (sum(not s["readable"] for s in sources) + sum(not s["readable"] for s in answer_sources)
             + sum(not is_readable(s) for s in retrieval.sources))
    agreement = None
    if answer.status == STATUS_ANSWERED:
        # The same context (the answer lists it in order of first citation, `renumber`).
        agreement = sorted(s.chunk_id for s in answer.sources) == sorted(s.chunk_id for s in ranked[:config.k])
    payload: dict[str, Any] = {
        "qid": question.id, "role": role, "question": question.question, "answerable": question.answerable,
        "key_facts": list(question.key_facts), "relevant_total": len(relevant),
        "ranking": [s.chunk_id for s in ranked], "sources": sources,
        "retrieval_ranking": [s.chunk_id for s in retrieval.sources], "policy": ctx.service.settings.answer_policy,
        "retrieval_ms": retrieval.ms, "leaks": leaks,
        "gate": {"signal": threshold.signal, "value": threshold.value, "measured": threshold.measured,
                 "score": threshold.score(evidence) if evidence.permitted_hits else None,
                 "permitted_hits": evidence.permitted_hits, "evidence": evidence.as_dict(),
                 "answer_at": ctx.service.answer_cut, "closest_at": ctx.service.closest_cut,
                 "quote_at": model.quote_at if model else None},
        "answer": {"text": answer.text, "status": answer.status, "generator": answer.generator,
                   "llm_called": answer.llm_called, "cited": list(answer.cited), "sources": answer_sources,
                   "total_ms": answer.total_ms, "outcome": answer_outcome, "facts_found": found, "notice": answer.notice,
                   "gate_outcome": answer.outcome, "probability": answer.extra.get("probability"),
                   "quote_confidence": answer.extra.get("quote_confidence"),
                   "quote_probability": answer.extra.get("quote_probability"),
                   "nearest": list(answer.nearest), "nearest_found": marked_facts(question, answer.nearest),
                   "first_nearest_found": marked_facts(question, answer.nearest[:1]),
                   "reading": answer.extra.get("reading")},
        "ungated": ungated, "agreement": agreement,
    }
    if question.answerable:
        payload["scores"] = case_scores(payload["ranking"], relevant)
        payload["retrieval_scores"] = case_scores(payload["retrieval_ranking"], relevant)
    return payload, answer


# --------------------------------------------------------------------------- the run


def index_chunks(index: Index) -> list[ChunkInfo]:
    """What relevance needs of every chunk of a built index (shared with `python -m eval fit abstention`)."""
    with index.db.connection() as conn:
        rows = conn.execute("""SELECT c.id, d.sha256, d.filename, c.page_start, c.page_end, c.article
                               FROM chunks c JOIN documents d ON d.id = c.document_id ORDER BY c.id""").fetchall()
    return [ChunkInfo(*row) for row in rows]


@dataclass
class RunState:
    """Per-run state: the run's embedders and built indexes (nothing here outlives the run)."""

    embedders: dict[str, object] = field(default_factory=dict)
    indexes: dict[str, Index] = field(default_factory=dict)


def run_gold(db: Database, settings: Settings, run_id: int, progress: Progress | None = None, *,
             embedder_factory: EmbedderFactory | None = None,
             generator_factory: GeneratorFactory | None = None) -> dict[str, Any]:
    """Run (or resume) gold run `run_id`; write its folder and return the summary."""
    from eval import gold_report
    from ragcore.embed import CachedEmbedder

    run = lab_runs.get_run(db, run_id)
    if run is None:
        raise GoldRunError(f"Çalıştırma #{run_id} yok.")
    spec = GoldRunSpec.from_dict(run.configuration)
    attempt = lab_runs.start_attempt(db, run_id)
    lab_runs.drop_run_namespaces(db, run_id)
    lab_runs.sweep_stale_namespaces(db)
    make_embedder = embedder_factory or default_embedder_factory(settings)
    make_generator = generator_factory or default_generator_factory
    report = Reporter(db, run_id, progress)
    version, gold = questions(db, spec.gold_set_id, spec.gold_version)
    if spec.limit:
        gold = gold[: spec.limit]
    documents = corpus_documents(db, settings, spec)
    warnings = corpus_warnings(gold, documents)
    cases = cases_of(gold)
    configs = spec.configurations()
    done = lab_runs.cached_results(db, run_id)
    todo = {c.key for c in configs if any((c.key, case_key(q, r)) not in done for q, r in cases)
            or (c.index_key, "index") not in done}
    state = RunState()
    folder = Path(run.folder)
    try:
        def embedder(spec_name: str) -> object:
            if spec_name not in state.embedders:
                state.embedders[spec_name] = CachedEmbedder(make_embedder(spec_name), db)
            return state.embedders[spec_name]

        # Phase 1: the indexes the unfinished configurations need.
        needed: list[Configuration] = []
        for c in configs:
            if c.key in todo and c.index_key not in {n.index_key for n in needed}:
                needed.append(c)
        total_docs, built = len(needed) * len(documents), 0
        report("index", 0, total_docs)
        for n, c in enumerate(needed):
            index = open_index(settings, lab_runs.namespace_name(run_id, attempt, n), folder / f"index-{n}",
                               embedder_spec=c.embedder, chunk_size=c.chunk_size)
            state.indexes[c.index_key] = index

            def tick(doc: CorpusDocument, c: Configuration = c) -> None:
                nonlocal built
                built += 1
                report("index", built, total_docs, f"{c.embedder} · {c.chunk_size} karakter: {doc.filename}")

            def step(doc: CorpusDocument, stage: str, done: int, total: int, c: Configuration = c) -> None:
                report("index", built, total_docs,
                       f"{c.embedder} · {c.chunk_size} karakter: {doc.filename} ({INGEST_STEPS.get(stage, stage)} "
                       f"{done}/{total})")

            ingest_corpus(index, embedder(c.embedder), documents, tick, step)
            info = {"namespace": index.namespace, "seconds": round(index.seconds, 3), "chunks": index.chunks,
                    "chunk_overlap": index.chunk_overlap, "documents": len(documents)}
            lab_runs.store_result(db, run_id, c.index_key, "index", info)
            done[(c.index_key, "index")] = info

        # Phase 2: every unfinished case of every configuration.
        remaining = sum((c.key, case_key(q, r)) not in done for c in configs for q, r in cases)
        asked = 0
        report("ask", 0, remaining)
        for c in configs:
            if c.key not in todo:
                continue
            ctx = configuration_context(c, state.indexes[c.index_key], embedder(c.embedder), documents, make_generator, spec.policy)
            for q, role in cases:
                key = case_key(q, role)
                if (c.key, key) in done:
                    continue
                payload = ask_case(ctx, q, role)
                lab_runs.store_result(db, run_id, c.key, key, payload)
                done[(c.key, key)] = payload
                asked += 1
                report("ask", asked, remaining, c.label)
    finally:
        for index in state.indexes.values():
            try:
                drop_index(index, db)
            except Exception:  # the sweep gets it later; the run's own outcome must not be hidden
                log.exception("could not drop lab namespace %s", index.namespace)
        lab_runs.drop_run_namespaces(db, run_id)

    report("report", 0, 1)
    summary = gold_report.write_run(folder, run=run, spec=spec, version=version, gold=gold, documents=documents,
                                    configs=configs, results=done, warnings=warnings,
                                    embedders=state.embedders, settings=settings)
    report("report", 1, 1)
    return summary


def configuration_context(c: Configuration, index: Index, embedder: object, documents: Sequence[CorpusDocument],
             make_generator: GeneratorFactory, policy: str) -> ConfigurationContext:
    """The services one configuration asks with, over a built index (also the conversation run's)."""
    settings = index.settings.replace(top_k=c.k, retrieval_mode=c.mode, answer_policy=policy)
    generator = make_generator(settings, embedder)
    service = AnswerService(index.db, settings, embedder, generator)  # type: ignore[arg-type]
    open_gate = AnswerService(index.db, settings.replace(refusal_threshold=OPEN_GATE), embedder, generator)  # type: ignore[arg-type]
    return ConfigurationContext(c, index, embedder, service, open_gate, index_chunks(index),
                                {d.sha256: d for d in documents}, dict(index.document_ids))
