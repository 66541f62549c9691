"""The three-outcome gate (ragcore.retrieval.abstention) and what each outcome does in the
answer service: a cited answer, the closest passages (labelled, no quote, to review), or the
fixed refusal without any model call. The gate decides under ANSWER_POLICY=rules, which these
services ask for; under the reader, the default, it still refuses (tests/test_answer.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ragcore.access import create_user, get_user
from ragcore.answer import AnswerService, ExtractiveGenerator, choose_quote, review_queue
from ragcore.core import (
    CLOSEST_LEAD,
    FALLBACK_ANSWER,
    OUTCOME_ANSWER,
    OUTCOME_CLOSEST,
    OUTCOME_REFUSED,
    STATUS_NEEDS_REVIEW,
    Settings,
)
from ragcore.embed import EmbeddingError
from ragcore.retrieval import (
    ABSTENTION_FEATURE_NAMES,
    ABSTENTION_FILE,
    ANSWER,
    CLOSEST,
    QUOTE_FEATURE_NAMES,
    REFUSED,
    AbstentionModel,
    Evidence,
    QuoteCheck,
    QuoteSignals,
    Retrieval,
    abstention_features,
    decide,
    measurements,
    model_for,
    quote_features,
    retrieve,
    threshold_for,
)
from tests.abstention_support import gate_model, gate_retrieval, with_quote_cut
from tests.conftest import LAW_6331, require_data
from tests.questions_support import logged_questions
from tests.retrieval_support import clean, ingest_law, make_test_embedder

RISK_QUESTION = "İşveren risk değerlendirmesi yapmakla yükümlü müdür?"


def test_features_read_the_legs_scores():
    values = abstention_features(gate_retrieval([0.9, 0.8, None], [12.0, None, 6.0], coverage=0.75))
    assert "bm25" not in values  # absolute BM25 grows with the corpus: not a transferable signal
    assert values["cosine"] == pytest.approx(0.9)
    assert values["coverage"] == pytest.approx(0.75)
    assert values["dense_margin"] == pytest.approx(0.1)
    assert values["lexical_ratio"] == pytest.approx(0.5)
    assert values["legs_agree"] == 1.0  # the best dense hit is also the best lexical one
    assert set(values) == set(ABSTENTION_FEATURE_NAMES)
    assert abstention_features(gate_retrieval([0.9, 0.8], [1.0, 5.0]))["legs_agree"] == 0.0


@pytest.mark.parametrize(("cosine", "outcome"), [(0.95, ANSWER), (0.80, CLOSEST), (0.60, REFUSED)])
def test_three_outcomes_by_probability(cosine, outcome):
    model = gate_model(answer_at=0.9, closest_at=0.2)
    decision = decide(gate_retrieval([cosine], [3.0], coverage=0.1), model, threshold_for("", "weighted"))
    assert decision.outcome == outcome
    assert decision.probability == pytest.approx(model.probability(decision.signals))


def test_no_flat_refusal_where_the_single_threshold_would_answer():
    """The model says refuse, but the calibrated threshold sees enough evidence: closest passages."""
    model = gate_model(answer_at=0.9, closest_at=0.2)
    threshold = threshold_for("", "weighted")  # coverage >= 0.45 answers
    assert decide(gate_retrieval([0.60], [3.0], coverage=0.1), model, threshold).outcome == REFUSED
    assert decide(gate_retrieval([0.60], [3.0], coverage=0.9), model, threshold).outcome == CLOSEST


def test_nothing_permitted_is_always_refused():
    empty = Retrieval("soru", "isg", "weighted", [], Evidence(None, None, 0.0, 0), 1.0, {})
    assert decide(empty, gate_model(0.0, 0.0), threshold_for("", "weighted")).outcome == REFUSED


def test_without_a_model_the_single_threshold_decides():
    threshold = threshold_for("", "weighted")  # the model-independent coverage threshold
    assert decide(gate_retrieval([0.9], [3.0], coverage=threshold.value + 0.1), None, threshold).outcome == ANSWER
    assert decide(gate_retrieval([0.9], [3.0], coverage=threshold.value - 0.1), None, threshold).outcome == REFUSED


def test_model_file_entries_are_checked(tmp_path):
    data = measurements.load(ABSTENTION_FILE)
    entry = {**gate_model(0.9, 0.2).as_entry(), "measured": "t", "when": "t", "on": "t"}
    good = {**data, "entries": {"x": entry}}
    (tmp_path / ABSTENTION_FILE).write_text(json.dumps(good), encoding="utf-8")
    assert model_for("x", tmp_path) == gate_model(0.9, 0.2, ).__class__(**{
        **gate_model(0.9, 0.2).__dict__, "measured": "t"})
    assert model_for("not-measured", tmp_path) is None
    broken = {**data, "entries": {"x": {**entry, "features": ["cosine", "mystery"]}}}
    (tmp_path / ABSTENTION_FILE).write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(measurements.MeasuredDataError, match="does not match"):
        model_for("x", tmp_path)


# --------------------------------------------------------------------------- in the answer service


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


@pytest.fixture(scope="module")
def law_db(session_db, embedder, tmp_path_factory, pg_url):
    require_data("laws")
    clean(session_db)
    settings = Settings(database_url=pg_url, data_dir=tmp_path_factory.mktemp("abstention") / "data",
                        embed_backend="use")
    ingest_law(session_db, settings, embedder, Path(LAW_6331), ["isg", "personel"])
    create_user(session_db, "mehmet", "isg", "parola-123", "Mehmet")
    return session_db


class CountingGenerator(ExtractiveGenerator):
    def __init__(self, embedder) -> None:
        super().__init__(embedder)
        self.calls = 0

    def stream(self, messages, sources, question, **kwargs):
        self.calls += 1
        yield from super().stream(messages, sources, question, **kwargs)


def _service(law_db, embedder, model: AbstentionModel | None) -> tuple[AnswerService, CountingGenerator]:
    generator = CountingGenerator(embedder)
    service = AnswerService(law_db, Settings(embed_backend="use", answer_policy="rules"), embedder, generator)
    service.abstention = model
    return service, generator


def _mehmet(law_db):
    return get_user(law_db, "mehmet")


def test_closest_outcome_shows_passages_and_goes_to_review(law_db, embedder):
    service, generator = _service(law_db, embedder, gate_model(answer_at=1.01, closest_at=0.0))
    answer = service.ask(_mehmet(law_db), RISK_QUESTION)
    assert answer.outcome == OUTCOME_CLOSEST
    assert answer.status == STATUS_NEEDS_REVIEW and not answer.llm_called and generator.calls == 0
    assert answer.text.startswith(CLOSEST_LEAD)
    assert 1 <= len(answer.sources) <= 3 and answer.cited == tuple(s.rank for s in answer.sources)
    lines = answer.text.splitlines()
    for number, source in enumerate(answer.sources, start=1):  # cited by document, article and page, not quoted
        assert f"Yakın parça {number}: {source.title}, {source.article}, {source.page_label} [{source.rank}]" in lines
        assert source.text[:60] not in answer.text
    assert "göre:" not in answer.text and "> “" not in answer.text  # nothing that reads like an answer
    # each passage's sentence nearest the question, to mark where it is shown: verbatim from it
    assert len(answer.nearest) == len(answer.sources) and all(answer.nearest)
    for sentence, source in zip(answer.nearest, answer.sources, strict=True):
        assert sentence in " ".join(source.text.split()) and sentence not in answer.text
    context = retrieve(law_db, embedder, RISK_QUESTION, _mehmet(law_db).role, k=service.settings.top_k,
                       mode=service.mode, windows=service.settings.dense_windows)
    ranked = choose_quote(RISK_QUESTION, context.sources, embedder, context.query_vector).ranked
    assert answer.nearest[0] == next(p.text for p in ranked if p.number == 1)  # the quoter's own ranking
    row = logged_questions(law_db, "mehmet")[0]
    assert row.outcome == OUTCOME_CLOSEST
    queued = [q for q in review_queue(law_db) if q.public_id == answer.question_id]
    assert queued and queued[0].outcome == OUTCOME_CLOSEST and queued[0].sources


class SentencesFail:
    """The embedder, except that embedding passages (the quoter's sentences) fails."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.kind, self.model, self.name, self.dim = inner.kind, inner.model, inner.name, inner.dim

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts):
        raise EmbeddingError("model server gone")


def test_closest_passages_without_marks_when_the_sentences_cannot_be_embedded(law_db, embedder):
    service, generator = _service(law_db, SentencesFail(embedder), gate_model(answer_at=1.01, closest_at=0.0))
    answer = service.ask(_mehmet(law_db), RISK_QUESTION)
    assert answer.outcome == OUTCOME_CLOSEST and answer.sources and answer.nearest == ()  # the passages, unmarked
    assert answer.text.startswith(CLOSEST_LEAD) and generator.calls == 0


def test_refused_outcome_says_the_fixed_sentence_without_a_model(law_db, embedder):
    service, generator = _service(law_db, embedder, gate_model(answer_at=1.01, closest_at=1.01))
    answer = service.ask(_mehmet(law_db), "Yemekhane bugün saat kaçta açılıyor?")
    assert (answer.outcome, answer.text, answer.sources, generator.calls) == (OUTCOME_REFUSED, FALLBACK_ANSWER, (), 0)
    assert logged_questions(law_db, "mehmet")[0].outcome == OUTCOME_REFUSED


def test_answer_outcome_answers_with_citations(law_db, embedder):
    service, generator = _service(law_db, embedder, gate_model(answer_at=0.0, closest_at=0.0))
    answer = service.ask(_mehmet(law_db), RISK_QUESTION)
    assert answer.outcome == OUTCOME_ANSWER and generator.calls == 1 and answer.cited
    # the gate's probability rides on an answered answer too (the lab's three-outcome curve reads it)
    assert 0.0 < answer.extra["probability"] <= 1.0
    assert logged_questions(law_db, "mehmet")[0].outcome == OUTCOME_ANSWER


def test_quote_features_combine_the_gate_and_the_quoter():
    signals = abstention_features(gate_retrieval([0.9, 0.8], [12.0, 6.0], coverage=0.75))
    values = quote_features(0.5, signals, QuoteSignals(0.7, 0.2, 2))
    assert set(values) == set(QUOTE_FEATURE_NAMES)
    assert values["gate_logit"] == pytest.approx(0.0) and values["best_sentence"] == 0.7
    assert values["sentence_margin"] == pytest.approx(0.5) and values["source_rank"] == 0.5
    assert values["coverage"] == 0.75 and values["legs_agree"] == 1.0
    assert quote_features(1.0, signals, QuoteSignals(0.0, 0.0, 0))["gate_logit"] < 20  # finite at p = 1
    model = with_quote_cut(gate_model(0.5, 0.2), 0.5)
    sure, unsure = (model.quote_probability(0.9, signals, QuoteSignals(b, 0.1, 1)) for b in (0.9, 0.1))
    assert sure > 0.5 > unsure  # the check reads the quoter's confidence through its fitted weight
    assert gate_model(0.5, 0.2).quote_probability(0.9, signals, QuoteSignals(0.9, 0.1, 1)) is None  # no check


def test_an_unsure_quote_becomes_the_closest_passages(law_db, embedder):
    service, generator = _service(law_db, embedder, with_quote_cut(gate_model(answer_at=0.0, closest_at=0.0), 1.01))
    answer = service.ask(_mehmet(law_db), RISK_QUESTION)
    assert answer.outcome == OUTCOME_CLOSEST and answer.text.startswith(CLOSEST_LEAD) and generator.calls == 0
    assert 0.0 < answer.extra["quote_confidence"] < 1.01
    assert 0.0 < answer.extra["quote_probability"] < 1.01  # recorded for the lab's curve
    assert answer.extra["quote_signals"]["source"] >= 1 and answer.extra["signals"].keys() == set(
        ABSTENTION_FEATURE_NAMES)
    quoted = answer.extra["quote_signals"]  # the best sentence's own signals, on record for the lab
    assert 0.0 < quoted["sentence_cosine"] <= 1.0 and 0.0 < quoted["sentence_overlap4"] <= 1.0
    assert quoted["asks_type"] == 0.0  # RISK_QUESTION asks what, not how many, when or who
    assert logged_questions(law_db, "mehmet")[0].outcome == OUTCOME_CLOSEST


class LanguageModelDouble:
    """A generator that is not the extractive quoter (its answers get no quote check)."""

    kind, model, label = "ollama", "double", "ollama/double"

    def __init__(self) -> None:
        self.calls = 0

    def stream(self, messages, sources, question, **kwargs):
        self.calls += 1
        yield "Risk değerlendirmesi yapmak işverenin yükümlülüğüdür [1]."


def test_the_quote_checks_lower_answer_cut_is_for_quotes_only(law_db, embedder):
    """The quote check's gate cut is chosen together with it; a language model's answer has no
    such check, so the gate's own cut decides for it."""
    gate = gate_model(answer_at=1.01, closest_at=0.0)  # the gate alone answers nothing
    checked = with_quote_cut(gate, 0.0)
    checked = dataclasses.replace(checked, quote_check=dataclasses.replace(checked.quote_check, answer_at=0.0))
    assert checked.answer_cut(quoting=True) == 0.0 and checked.answer_cut(quoting=False) == 1.01
    quoting, _ = _service(law_db, embedder, checked)
    assert quoting.ask(_mehmet(law_db), RISK_QUESTION).outcome == OUTCOME_ANSWER
    llm = LanguageModelDouble()
    service = AnswerService(law_db, Settings(embed_backend="use", answer_policy="rules"), embedder, llm)
    service.abstention = checked
    answer = service.ask(_mehmet(law_db), RISK_QUESTION)
    assert answer.outcome == OUTCOME_CLOSEST and llm.calls == 0
    entry = checked.quote_check.as_entry()
    assert QuoteCheck.from_entry(entry).answer_at == 0.0  # it is kept in the model file
    assert QuoteCheck.from_entry({k: v for k, v in entry.items() if k != "answer_at"}).answer_at is None  # older files


def test_a_confident_quote_is_the_answer_and_reuses_the_checked_passages(law_db, embedder, monkeypatch):
    service, generator = _service(law_db, embedder, with_quote_cut(gate_model(answer_at=0.0, closest_at=0.0), 0.0))
    from ragcore.answer import extractive

    ranked = []
    real = extractive._ranked
    monkeypatch.setattr(extractive, "_ranked", lambda *a, **kw: ranked.append(1) or real(*a, **kw))
    answer = service.ask(_mehmet(law_db), RISK_QUESTION)
    assert answer.outcome == OUTCOME_ANSWER and generator.calls == 1 and answer.cited
    assert answer.extra["quote_confidence"] > 0.0
    assert len(ranked) == 1  # the quote check's ranking is the one quoted


def test_the_quote_check_is_read_from_the_model_file(tmp_path):
    data = measurements.load(ABSTENTION_FILE)
    entry = {**with_quote_cut(gate_model(0.9, 0.2), 0.42).as_entry(), "measured": "t", "when": "t", "on": "t"}
    (tmp_path / ABSTENTION_FILE).write_text(json.dumps({**data, "entries": {"x": entry}}), encoding="utf-8")
    read = model_for("x", tmp_path)
    assert read.quote_at == 0.42 and read.quote_check == with_quote_cut(gate_model(0.9, 0.2), 0.42).quote_check
    entry["quote_check"]["features"] = ["best_sentence", "unknown"]
    (tmp_path / ABSTENTION_FILE).write_text(json.dumps({**data, "entries": {"x": entry}}), encoding="utf-8")
    with pytest.raises(measurements.MeasuredDataError, match="quote check"):
        model_for("x", tmp_path)
    del entry["quote_check"]
    (tmp_path / ABSTENTION_FILE).write_text(json.dumps({**data, "entries": {"x": entry}}), encoding="utf-8")
    assert model_for("x", tmp_path).quote_at is None


# --------------------------------------------------------------------------- the shipped gate model

SHIPPED_CASES = [  # (question, outcome the shipped USE gate gives on law 6331, why)
    (RISK_QUESTION, OUTCOME_ANSWER),  # Madde 10 says it word for word
    ("Şirketimizin yıllık izin politikası nedir?", OUTCOME_CLOSEST),  # 6331 speaks of leave, not of a policy
    ("Yemekhane bugün saat kaçta açılıyor?", OUTCOME_REFUSED),  # nothing in the law is near it
]


@pytest.mark.parametrize(("question", "outcome"), SHIPPED_CASES)
def test_the_shipped_gate_model_gives_each_outcome(law_db, embedder, question, outcome):
    """The model in ragcore/measured/abstention.json, as the app loads it (no cuts of the test's
    own): each outcome is reached by a question that should reach it, and the recorded probability
    sits on the side of the shipped cut that the outcome says."""
    service = AnswerService(law_db, Settings(embed_backend="use", answer_policy="rules"), embedder, CountingGenerator(embedder))
    shipped = model_for(embedder.name)
    assert shipped is not None and service.abstention == shipped
    answer = service.ask(_mehmet(law_db), question)
    assert answer.outcome == outcome, answer.text
    assert logged_questions(law_db, "mehmet")[0].outcome == outcome
    if outcome == OUTCOME_ANSWER:
        assert answer.cited and answer.extra["probability"] >= shipped.answer_cut(quoting=True)
    elif outcome == OUTCOME_CLOSEST:
        assert answer.text.startswith(CLOSEST_LEAD) and answer.sources and service.generator.calls == 0
    else:
        assert (answer.text, answer.sources, service.generator.calls) == (FALLBACK_ANSWER, (), 0)
