"""The answer service: question → retrieval → refusal check → prompt → stream → citations → log.

The user's role is re-read from the database on every question, so a role change or a
deactivation takes effect on the next question, not the next login. The gate
(ragcore.retrieval.abstention) decides among three outcomes before any generator runs: an
answer, the closest passages (cited, no quote, to review) or the fixed refusal; neither of the
last two calls the generator. Without a language model an answer is a quote, shown only when
the gate's quote check finds the quote likely to carry the asked fact; otherwise the closest passages.

A language model's answer cut by one of its bounds (`ragcore.answer.bounds`: time, length, a
loop, an echo of the prompt) is handled like a failed one: the Turkish note, then the extractive
answer, logged as an error with the note (and the reason in `Answer.extra["cut"]`).

When the database does not answer (`DatabaseUnavailable`, within a few seconds), the question
fails with a Turkish message and is kept in the local spool (`ragcore.answer.spool`); the next question
that reaches the database writes the spooled ones into the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ragcore.access import get_user
from ragcore.answer.backends import Generator
from ragcore.answer.extractive import (
    ExtractiveGenerator,
    Passage,
    QuoteChoice,
    answer_passages,
    choose_quote,
    quote,
)
from ragcore.answer.extractive_model import ExtractiveModelError
from ragcore.answer.llm_clients import AnswerCut, GeneratorError
from ragcore.answer.postprocess import (
    KIND_ANSWER,
    KIND_REFUSAL,
    FinishedAnswer,
    finalize,
    renumber,
    renumbered_pieces,
)
from ragcore.answer.prompt import build_messages
from ragcore.answer.questions import insert_question, question_record
from ragcore.answer.reading import ANSWER as READ_ANSWER
from ragcore.answer.reading import CLOSEST as READ_CLOSEST
from ragcore.answer.reading import ReaderCuts, Reading, read
from ragcore.answer.sentences import clip
from ragcore.answer.spool import QuestionSpool, spool_path
from ragcore.core import (
    CLOSEST_LEAD,
    FALLBACK_ANSWER,
    OUTCOME_ANSWER,
    OUTCOME_CLOSEST,
    OUTCOME_REFUSED,
    STATUS_ANSWERED,
    STATUS_ERROR,
    STATUS_FALLBACK,
    STATUS_NEEDS_REVIEW,
    Answer,
    Settings,
    Source,
    User,
    sanitize,
)
from ragcore.documents import Scope
from ragcore.embed import EmbeddingError
from ragcore.reader import Reader, loaded_reader
from ragcore.retrieval import (
    CLOSEST,
    REFUSED,
    Decision,
    QuoteSignals,
    Retrieval,
    decide,
    model_for,
    quote_held_back,
    resolve_mode,
    retrieve,
    threshold_for,
)
from ragcore.store import Database, DatabaseUnavailable

log = logging.getLogger(__name__)

UNRELIABLE_NOTICE = "Modelin cevabı güvenilir bulunmadı; en ilgili parça kaynağıyla birlikte alıntılandı."
UNCITED_NOTICE = ("Modelin cevabı hiçbir kaynak göstermediği için güvenilir bulunmadı; "
                  "en ilgili parça kaynağıyla birlikte alıntılandı.")
DATABASE_DOWN = ("Veritabanına şu anda ulaşılamıyor, soru cevaplanamadı. Sorunuz kaydedildi; "
                 "birkaç saniye sonra tekrar deneyin. Sorun sürerse yöneticinize başvurun.")


class QuestionError(ValueError):
    """The question cannot be asked as given; the message is Turkish and safe to show."""


def validate_question(question: str, max_chars: int) -> str:
    """The question as it will be answered and logged: control characters and lone surrogates
    removed (PostgreSQL cannot store them), then checked for emptiness and length."""
    text = sanitize(question or "").strip()
    if not text:
        raise QuestionError("Lütfen bir soru yazın; boş soru gönderilemez.")
    if len(text) > max_chars:
        raise QuestionError(f"Soru çok uzun: en fazla {max_chars} karakter olabilir (şu an {len(text)}). "
                            "Lütfen kısaltıp tekrar sorun.")
    return text


def _scope_extra(scope: Scope | None) -> dict:
    """The answer's record of its restriction (nothing when it had none)."""
    if scope is None or scope.everything:
        return {}
    return {"scope": {"collection": scope.collection, "document": scope.document}}


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


@dataclass
class _AnswerInProgress:
    """Mutable state of one answer while it streams."""

    user: User
    question: str
    started: float
    scope: Scope | None = None  # the question's restriction (a collection or one document); None: everything
    retrieval: Retrieval | None = None
    decision: Decision | None = None
    quote_signals: QuoteSignals | None = None  # the extractive quoter's ranking (None: a language model)
    quote_probability: float | None = None  # the gate's quote check on them (None: no check)
    reading: Reading | None = None  # the reader's ordering and scores (the reader policy)
    evidence_refused: bool = False  # the reader policy: the evidence gate found nothing related
    first_token_ms: float | None = None


class AnswerStream:
    """Iterate for text pieces (st.write_stream); `.answer` is set once the stream is exhausted.

    `replaced` is True when the final `answer.text` differs from the concatenated pieces
    (a refusal or an unreliable model answer was replaced): the UI should then show `answer.text`.
    """

    def __init__(self, pieces: Iterator[str]) -> None:
        self._pieces = pieces
        self.answer: Answer | None = None
        self.replaced = False
        self.streamed = ""

    def __iter__(self) -> Iterator[str]:
        for piece in self._pieces:
            self.streamed += piece
            yield piece


def quoted_answer(question: str, sources: list[Source], embedder: object,
                  query_vector: np.ndarray | None = None) -> FinishedAnswer:
    """Replacement for an unreliable answer: what the extractive answerer quotes, with its sources."""
    passages = answer_passages(question, sources, embedder, query_vector)
    if not passages:
        return FinishedAnswer(FALLBACK_ANSWER, KIND_REFUSAL, ())
    return FinishedAnswer(quote(passages, sources), KIND_ANSWER, tuple(dict.fromkeys(p.number for p in passages)))


def finalize_answer(raw: str, sources: list[Source], question: str, embedder: object, *, llm: bool,
                    query_vector: np.ndarray | None = None) -> tuple[FinishedAnswer, str | None]:
    """The post-generation policy, shared with the evaluation lab: parse citations, keep real
    refusals, and replace an instruction echo — or, from a language model, an answer without
    one valid [n] — by quoted passages with their sources. Returns (result, notice or None)."""
    result = finalize(raw, sources)
    if result.kind not in (KIND_ANSWER, KIND_REFUSAL):
        return quoted_answer(question, sources, embedder, query_vector), UNRELIABLE_NOTICE
    if result.kind == KIND_ANSWER and not result.cited and llm:
        # No valid [n]: nothing ties the text to the context (a model following an injected
        # "do not cite" instruction, or answering from memory) — never shown as grounded.
        return quoted_answer(question, sources, embedder, query_vector), UNCITED_NOTICE
    return result, None


def _failure_extra(exc: GeneratorError, fallback: str) -> dict:
    """What the answer's `extra` says of a failed model answer: what replaced it, and why it was cut."""
    return {"fallback_generator": fallback, **({"cut": exc.reason} if isinstance(exc, AnswerCut) else {})}


CLOSEST_PASSAGES = 3  # passages the closest outcome shows
CLOSEST_ITEM = "Yakın parça"  # each passage's label in the closest outcome ("Yakın parça 1: …")


def closest_passages_text(sources: list[Source]) -> str:
    """The "closest passages" outcome: a lead that says no section answers directly, then one
    cited line per passage ("Yakın parça 1: <title>, <article>, <page> [1]") — no quote and no
    "…'e göre:" lead that could pass for an answer."""
    lines = [CLOSEST_LEAD, ""]
    for number, source in enumerate(sources, start=1):
        where = ", ".join(part for part in (source.title, source.article, source.locator_label) if part)
        lines.append(f"{CLOSEST_ITEM} {number}: {where} [{source.rank}]")
    return "\n".join(lines)


READER_QUOTE_CHARS = 600  # a quoted window longer than this is clipped around the question's words


def reader_quote(reading: Reading, question: str, sources: Sequence[Source]) -> str:
    """The extractive answer under the reader: its best window of the first source, verbatim, led by
    where it comes from and cited [1]. Quoted on one line: a window can span the document's line
    breaks, and a line of it opening with ">" or "#" would otherwise be drawn as Markdown."""
    window = " ".join(reading.windows[0].split())
    return quote([Passage(1, clip(window, question, READER_QUOTE_CHARS), reading.top)], sources)


class AnswerService:
    def __init__(self, db: Database, settings: Settings, embedder: object, generator: Generator, *,
                 read_db: Database | None = None, reader: Reader | None = None) -> None:
        """`reader`: the reader model (default: the shipped one, loaded here so a missing or damaged
        model file stops the start with its message, never an answer later)."""
        self.db = db
        self.read_db = read_db or db  # retrieval may run on a read replica (DATABASE_READ_URL)
        self.settings = settings
        self.embedder = embedder
        self.generator = generator
        self.mode = resolve_mode(settings, embedder)
        self.threshold = threshold_for(getattr(embedder, "name", ""), self.mode, settings)
        # None: the single threshold decides — also when REFUSAL_THRESHOLD is set, since an operator
        # (or the lab looking behind the gate) who sets a cut means that cut, not the model's.
        self.abstention = None if settings.refusal_threshold is not None else model_for(getattr(embedder, "name", ""))
        self.reader: Reader | None = None
        self.cuts: ReaderCuts | None = None
        if settings.reads_with_reader:
            self.reader = reader or loaded_reader(settings.reader_model_dir)
            # REFUSAL_THRESHOLD, when set, is the reader's one cut (the lab's open gate sets it below every score).
            self.cuts = (ReaderCuts(settings.refusal_threshold, settings.refusal_threshold)
                         if settings.refusal_threshold is not None else ReaderCuts.of(self.reader))
        self.spool = QuestionSpool(spool_path(settings))

    # ------------------------------------------------------------------ public

    def ask(self, user: User, question: str, *, scope: Scope | None = None) -> Answer:
        stream = self.stream(user, question, scope=scope)
        for _ in stream:
            pass
        assert stream.answer is not None
        return stream.answer

    def stream(self, user: User, question: str, *, scope: Scope | None = None) -> AnswerStream:
        """Validate now (raising QuestionError), answer lazily while the caller iterates.

        `scope`: search one collection or one document only (inside the retrieval SQL, beside the
        role predicate; a scope the role cannot read finds nothing, and the question is refused)."""
        text = validate_question(question, self.settings.max_question_chars)
        started = time.perf_counter()
        try:
            current = self._current_user(user)
        except DatabaseUnavailable as exc:
            raise self._database_down(_AnswerInProgress(user, text, started, scope), exc) from exc
        self._write_spooled()
        stream = AnswerStream(iter(()))
        stream._pieces = self._answer_pieces(stream, _AnswerInProgress(current, text, started, scope))
        return stream

    # ------------------------------------------------------------------ steps

    @property
    def _llm(self) -> bool:
        """Whether the generator is a language model (the extractive quoter is not)."""
        return getattr(self.generator, "kind", "") != "extractive"

    @property
    def answer_cut(self) -> float | None:
        """The score an answer needs with this generator (None: no three-outcome model): the reader's
        top score under the reader policy, the gate's probability under the rules."""
        if self.cuts is not None:
            return self.cuts.closest if self._llm else self.cuts.answer
        return None if self.abstention is None else self.abstention.answer_cut(quoting=not self._llm)

    @property
    def closest_cut(self) -> float | None:
        if self.cuts is not None:
            return self.cuts.closest
        return None if self.abstention is None else self.abstention.closest_at

    def _retrieve(self, role: str, question: str, k: int, scope: Scope | None = None) -> Retrieval:
        return retrieve(self.read_db, self.embedder, question, role, k=k, mode=self.mode,
                        windows=self.settings.dense_windows, scope=scope,
                        postings_budget=self.settings.lexical_postings_budget)

    def ranked_sources(self, role: str, question: str, depth: int) -> list[Source]:
        """The first `depth` passages in the order the answer path puts them (the lab's ranking):
        the reader's order of its candidates, or retrieval's under the rules."""
        if self.reader is None:
            return self._retrieve(role, question, depth).sources
        retrieval = self._retrieve(role, question, max(depth, self.settings.reader_candidates))
        head = read(self.reader, question, retrieval.sources[:self.settings.reader_candidates])
        tail = [replace(s, rank=len(head.sources) + i) for i, s in
                enumerate(retrieval.sources[self.settings.reader_candidates:], start=1)]
        return [*head.sources, *tail][:depth]

    def _current_user(self, user: User) -> User:
        """The role comes from the database at call time, never from a cached session."""
        try:
            current = get_user(self.db, user.username)
        except DatabaseUnavailable:
            # A pooled connection whose server has just died can pass the pool's check and break
            # on its first statement. This read is idempotent: one more try, which finds the dead
            # connections discarded and the server restarted (or says it is down).
            current = get_user(self.db, user.username)
        if current is None or not current.active:
            raise QuestionError("Hesabınız bulunamadı ya da devre dışı; soru soramazsınız.")
        return current

    def _database_down(self, answering: _AnswerInProgress, exc: DatabaseUnavailable) -> QuestionError:
        """Keep the unanswered question in the spool; the Turkish error for the caller to raise."""
        log.warning("question of %s not answered, database unavailable: %s", answering.user.username, exc)
        self.spool.append(question_record(
            answering.user, answering.question, answer=None, status=STATUS_ERROR, generator=None, llm_called=False,
            total_ms=_ms(answering.started), error=f"veritabanına ulaşılamadı: {exc}"))
        return QuestionError(DATABASE_DOWN)

    def _write_spooled(self) -> None:
        """The database answers again: log the questions kept while it did not."""
        if not self.spool.pending():
            return
        try:
            self.spool.flush(self.db)
        except DatabaseUnavailable as exc:  # down again already; they stay in the spool
            log.warning("spooled questions not written yet: %s", exc)

    def _answer_pieces(self, stream: AnswerStream, answering: _AnswerInProgress) -> Iterator[str]:
        if self.cuts is not None:  # the reader policy: the reader decides too
            yield from self._reader_pieces(stream, answering)
            return
        try:
            answering.retrieval = self._retrieve(answering.user.role, answering.question, self.settings.top_k,
                                                 answering.scope)
        except DatabaseUnavailable as exc:
            raise self._database_down(answering, exc) from exc
        decision = decide(answering.retrieval, self.abstention, self.threshold, quoting=not self._llm)
        answering.decision = decision
        if decision.outcome == REFUSED:
            yield FALLBACK_ANSWER
            stream.answer = self._refused(answering)
            return
        if decision.outcome == CLOSEST:
            yield from self._closest_pieces(stream, answering)
            return
        sources = answering.retrieval.sources
        query_vector = answering.retrieval.query_vector
        quoting: dict = {}  # the extractive generator is handed the passages ranked here
        if not self._llm:  # a language model's answer is checked for its citations instead (finalize_answer)
            # Ranked here, not in the generator, so the quoter's signals are on record even behind the
            # gate (the lab's three-outcome curve moves the cuts over them, eval/gold_stats.py).
            choice = choose_quote(answering.question, sources, self.embedder, query_vector)
            answering.quote_signals = choice.signals()
            if self.abstention is not None and decision.probability is not None:
                answering.quote_probability = self.abstention.quote_probability(
                    decision.probability, decision.signals, answering.quote_signals)
            if self.abstention is not None and quote_held_back(answering.quote_probability, self.abstention.quote_at):
                answering.decision = Decision(CLOSEST, decision.probability, decision.signals)
                yield from self._closest_pieces(stream, answering, choice)
                return
            quoting = {"passages": list(choice.passages)}
        messages = build_messages(answering.question, sources)
        pieces: list[str] = []

        def generated() -> Iterator[str]:
            for piece in self.generator.stream(messages, sources, answering.question, query_vector=query_vector,
                                               **quoting):
                if piece and answering.first_token_ms is None:
                    answering.first_token_ms = _ms(answering.started)
                pieces.append(piece)
                yield piece

        try:
            yield from renumbered_pieces(generated(), len(sources))  # shown as [1] first while it streams
        except GeneratorError as exc:
            yield from self._generator_failed(stream, answering, sources, exc)
            return
        result, notice = finalize_answer("".join(pieces), sources, answering.question, self.embedder, llm=self._llm,
                                         query_vector=query_vector)
        stream.answer = self._finish(answering, result, sources, notice)
        stream.replaced = stream.answer.text != stream.streamed

    def _reader_pieces(self, stream: AnswerStream, answering: _AnswerInProgress) -> Iterator[str]:
        """The reader policy (ragcore.answer.reading): read the candidates, then one cut pair decides."""
        assert self.reader is not None and self.cuts is not None
        try:
            answering.retrieval = self._retrieve(answering.user.role, answering.question,
                                                 max(self.settings.reader_candidates, self.settings.top_k),
                                                 answering.scope)
        except DatabaseUnavailable as exc:
            raise self._database_down(answering, exc) from exc
        reading = read(self.reader, answering.question, answering.retrieval.sources)
        answering.reading = reading
        outcome = self.cuts.outcome(reading.top, llm=self._llm) if reading.sources else REFUSED
        if outcome != REFUSED and self._nothing_related(answering.retrieval):
            answering.evidence_refused = True
            outcome = REFUSED
        answering.decision = Decision(outcome, reading.top, {})
        if outcome == REFUSED:
            yield FALLBACK_ANSWER
            stream.answer = self._refused(answering)
            return
        if outcome == READ_CLOSEST:
            yield from self._reading_closest_pieces(stream, answering, reading)
            return
        assert outcome == READ_ANSWER
        sources = list(reading.sources[:self.settings.top_k])
        if not self._llm:
            text = reader_quote(reading, answering.question, sources)
            yield text
            stream.answer = self._finish(answering, finalize(text, sources), sources, None)
            return
        pieces: list[str] = []

        def generated() -> Iterator[str]:
            for piece in self.generator.stream(build_messages(answering.question, sources), sources,
                                               answering.question, query_vector=answering.retrieval.query_vector):
                if piece and answering.first_token_ms is None:
                    answering.first_token_ms = _ms(answering.started)
                pieces.append(piece)
                yield piece

        try:
            yield from renumbered_pieces(generated(), len(sources))
        except GeneratorError as exc:
            self._log_failure(exc)
            yield f"\n\n⚠️ {exc}\n\n"
            quoted = reader_quote(reading, answering.question, sources)
            yield quoted
            result = finalize(quoted, sources)
            text, cited, numbered = renumber(result.text, result.cited, sources)
            stream.answer = self._record(answering, f"⚠️ {exc}\n\n{text}", STATUS_ERROR, numbered, cited,
                                         llm_called=True, generator=self.generator.label, notice=str(exc),
                                         error=str(exc), outcome=None,
                                         extra={**self._gate_extra(answering), **_failure_extra(exc, "reader")})
            stream.replaced = True
            return
        result = finalize("".join(pieces), sources)
        notice = None
        if result.kind not in (KIND_ANSWER, KIND_REFUSAL) or (result.kind == KIND_ANSWER and not result.cited):
            # An echo of the instructions, or an answer with no valid [n]: never shown as grounded.
            notice = UNRELIABLE_NOTICE if result.kind not in (KIND_ANSWER, KIND_REFUSAL) else UNCITED_NOTICE
            result = finalize(reader_quote(reading, answering.question, sources), sources)
        stream.answer = self._finish(answering, result, sources, notice)
        stream.replaced = stream.answer.text != stream.streamed

    def _closest_pieces(self, stream: AnswerStream, answering: _AnswerInProgress,
                        choice: QuoteChoice | None = None) -> Iterator[str]:
        """`choice`: the quoter's ranking of this context when the quote check already made it."""
        closest = answering.retrieval.sources[:CLOSEST_PASSAGES]
        text = closest_passages_text(closest)
        yield text
        stream.answer = self._closest(answering, closest, text, self._nearest(answering, closest, choice))

    def _nothing_related(self, retrieval: Retrieval) -> bool:
        """The evidence gate's refusal, kept under the reader (round 24): the reader's scores for
        questions the documents do not answer sit just above its closest cut, so its one cut no
        longer refuses them ("Ankara'dan İzmir'e uçakla kaç saat?" was shown law passages), while
        the gate, on retrieval's own evidence, refuses such questions and almost no answerable one
        (docs/reader.md, round 24)."""
        return decide(retrieval, self.abstention, self.threshold, quoting=not self._llm).outcome == REFUSED

    def _reading_closest_pieces(self, stream: AnswerStream, answering: _AnswerInProgress,
                                reading: Reading) -> Iterator[str]:
        """The closest passages in the reader's order, each with its best window marked."""
        closest = list(reading.sources[:CLOSEST_PASSAGES])
        text = closest_passages_text(closest)
        yield text
        stream.answer = self._closest(answering, closest, text, reading.windows[:CLOSEST_PASSAGES])

    def _nearest(self, answering: _AnswerInProgress, closest: list[Source],
                 choice: QuoteChoice | None) -> tuple[str, ...]:
        """The sentence of each closest passage the quoter ranks highest, marked where it is shown.
        Ranked over the whole context, as a quote would be; with a language model too (the marks
        need only the embedder). A broken sentence-model file or an embedder that fails here costs
        the marks, not the answer."""
        if choice is None:
            try:
                choice = choose_quote(answering.question, answering.retrieval.sources, self.embedder,
                                      answering.retrieval.query_vector)
            except (ExtractiveModelError, EmbeddingError) as exc:
                log.warning("closest passages shown without marks: %s", exc)
                return ()
        return choice.nearest(len(closest))

    def _gate_extra(self, answering: _AnswerInProgress) -> dict:
        if answering.reading is not None and self.cuts is not None:
            return {"policy": "reader", "evidence": answering.retrieval.evidence.as_dict(),
                    "evidence_refused": answering.evidence_refused,
                    "probability": answering.reading.top, "reading": answering.reading.as_dict(),
                    "cuts": {"answer": self.cuts.answer, "closest": self.cuts.closest}}
        decision = answering.decision
        return {"evidence": answering.retrieval.evidence.as_dict(), "threshold": self.threshold.value,
                "probability": None if decision is None else decision.probability,
                "signals": None if decision is None else decision.signals,
                "quote_confidence": None if answering.quote_signals is None else answering.quote_signals.best,
                "quote_signals": None if answering.quote_signals is None else answering.quote_signals.as_dict(),
                "quote_probability": answering.quote_probability}

    def _refused(self, answering: _AnswerInProgress) -> Answer:
        """Nothing permitted is related: fallback, no sources, generator untouched, needs review."""
        return self._record(answering, FALLBACK_ANSWER, STATUS_NEEDS_REVIEW, (), (), llm_called=False,
                            generator=None, outcome=OUTCOME_REFUSED, extra=self._gate_extra(answering))

    def _closest(self, answering: _AnswerInProgress, closest: list[Source], text: str,
                 nearest: tuple[str, ...]) -> Answer:
        """Related passages but no direct answer: show them, labelled, no quote or model; needs review."""
        return self._record(answering, text, STATUS_NEEDS_REVIEW, tuple(closest), tuple(s.rank for s in closest),
                            llm_called=False, generator=None, outcome=OUTCOME_CLOSEST,
                            extra=self._gate_extra(answering), nearest=nearest)

    def _finish(self, answering: _AnswerInProgress, result: FinishedAnswer, sources: list[Source],
                notice: str | None) -> Answer:
        # The gate's probability rides on every answer, not only the gated ones: the lab draws its
        # three-outcome curve from it (eval/gold_stats.py, eval/answers.py).
        if result.kind == KIND_REFUSAL:
            return self._record(answering, FALLBACK_ANSWER, STATUS_FALLBACK, (), (), llm_called=self._llm,
                                generator=self.generator.label, outcome=OUTCOME_REFUSED,
                                extra=self._gate_extra(answering))
        text, cited, numbered = renumber(result.text, result.cited, sources)
        return self._record(answering, text, STATUS_ANSWERED, numbered, cited, llm_called=self._llm,
                            generator=self.generator.label, notice=notice, extra=self._gate_extra(answering))

    def _log_failure(self, exc: GeneratorError) -> None:
        if isinstance(exc, AnswerCut):
            log.warning("answer of generator %s cut (%s): %s", self.generator.label, exc.reason, exc)
        else:
            log.warning("generator %s failed: %s", self.generator.label, exc)

    def _generator_failed(self, stream: AnswerStream, answering: _AnswerInProgress, sources: list[Source],
                          exc: GeneratorError) -> Iterator[str]:
        """Say what failed (or why the answer was cut), then quote the best passages instead; logged
        as an error with that message, so the admin sees it in the questions log."""
        self._log_failure(exc)
        message = str(exc)
        yield f"\n\n⚠️ {message}\n\n"
        fallback = ExtractiveGenerator(self.embedder)
        quoted = "".join(fallback.stream([], sources, answering.question,
                                         query_vector=answering.retrieval.query_vector))
        yield from renumbered_pieces([quoted], len(sources))
        result = finalize(quoted, sources)
        text, cited, numbered = renumber(result.text, result.cited, sources)
        stream.answer = self._record(answering, f"⚠️ {message}\n\n{text}", STATUS_ERROR, numbered,
                                     cited, llm_called=self._llm, generator=self.generator.label,
                                     notice=message, error=message, outcome=None,
                                     extra={**self._gate_extra(answering), **_failure_extra(exc, "extractive")})
        stream.replaced = True

    def _record(self, answering: _AnswerInProgress, text: str, status: str, sources: tuple[Source, ...],
                cited: tuple[int, ...], *, llm_called: bool, generator: str | None, notice: str | None = None,
                error: str | None = None, outcome: str | None = OUTCOME_ANSWER, extra: dict | None = None,
                nearest: tuple[str, ...] = ()) -> Answer:
        total = _ms(answering.started)
        retrieval_ms = answering.retrieval.ms if answering.retrieval else None
        record = question_record(
            answering.user, answering.question, answer=text, status=status, generator=generator,
            llm_called=llm_called, sources=sources, cited=cited, retrieval_ms=retrieval_ms,
            first_token_ms=answering.first_token_ms, total_ms=total, error=error, outcome=outcome,
        )
        question_id: str | None  # its public id
        try:
            question_id = insert_question(self.db, record)
        except DatabaseUnavailable as exc:  # the answer stands; its log row waits in the spool
            log.warning("answer to %s not logged yet, database unavailable: %s", answering.user.username, exc)
            self.spool.append(record)
            question_id = None
        return Answer(
            question=answering.question, text=text, status=status, generator=generator or "none",
            llm_called=llm_called, sources=sources, cited=cited, question_id=question_id,
            retrieval_ms=retrieval_ms, first_token_ms=answering.first_token_ms, total_ms=total, notice=notice,
            outcome=outcome, nearest=nearest, extra={"mode": self.mode, "role": answering.user.role,
                                                     **_scope_extra(answering.scope), **(extra or {})},
        )
