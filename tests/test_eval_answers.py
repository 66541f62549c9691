"""Deterministic Turkish answer scoring, the sampling protocol, and a tiny resumable answer run."""

from __future__ import annotations

import json

import pytest

from eval import answers as ans
from eval import tquad
from ragcore.core import FALLBACK_ANSWER
from tests.conftest import TQUAD_DIR

needs_tquad = pytest.mark.needs_data("tquad")


@pytest.mark.parametrize(
    ("gold", "answer", "expected"),
    [
        ("Buzgan kasabası", "Olay Buzgan kasabasında yaşandı.", True),  # suffix after the last word
        ("Buzgan kasabası", "Buzgankasabası", False),
        ("kasabası", "Buzgan kasabasında", True),
        ("kasaba", "Buzgankasabası", False),  # must start on a word boundary
        ("12", "1200 yılında", False),  # nothing may follow a final digit
        ("12", "12'de başladı", True),  # apostrophe suffix is punctuation, then a new word
        ("12", "12,5 kilometre", False),  # no decimal part either
        ("12", "yaş 12.", True),
        ("1156", "1156 Musul doğumlu", True),
        ("İbn-i Yunus", "ibn-i yunus diye bilinir", True),  # Turkish lowercasing, punctuation between words
        ("IĞDIR", "Iğdır'a gitti", True),
        ("Ankara", "Ankara[1] başkenttir", True),
        ("1", "Ankara [1] başkenttir", False),  # citation markers are not answer text
        ("", "anything", False),
    ],
)
def test_exact_match_rules(gold, answer, expected):
    assert ans.exact_match(gold, answer) is expected


def test_token_recall_on_five_character_prefixes():
    assert ans.token_recall("Buzgan kasabası", "buzgan kasabasında") == 1.0
    assert ans.token_recall("Mustafa Kemal Atatürk", "Kemal Paşa") == pytest.approx(1 / 3)
    assert ans.token_recall("", "x") == 0.0


@pytest.mark.parametrize(
    ("answer", "refused"),
    [
        (FALLBACK_ANSWER, True),
        ("Bu bilgi bağlamda bulunmamaktadır.", True),
        ("Metinde bu konuda bir bilgi yer almıyor.", True),
        ("Kale 1200 yılında yapıldı [1].", False),
        ("« " + "Bölgede su kaynağı bulunmuyor ve köyler uzak. " * 6 + "» [1]", False),  # a long quote
    ],
)
def test_refusal_detection(answer, refused):
    assert ans.is_refused(answer) is refused


def test_score_outcomes():
    ctx = ["Olay Buzgan kasabasında yaşandı."]
    good = ans.score_answer("Buzgan kasabası", "Buzgan kasabasında [1].", ctx, [True])
    assert good.outcome == "correct" and good.exact and good.cited and good.cited_gold
    memory = ans.score_answer("Buzgan kasabası", "Buzgan kasabası.", ["başka metin"], [])
    assert memory.outcome == "correct_not_in_context" and not memory.cited
    recall_only = ans.score_answer("Mustafa Kemal", "Kemal", ["x"], [False])
    assert recall_only.correct and not recall_only.exact and recall_only.cited and not recall_only.cited_gold
    fallback = ans.score_answer("Buzgan", FALLBACK_ANSWER, ctx, [])
    assert fallback.outcome == "fallback" and not fallback.correct
    wrong = ans.score_answer("Buzgan kasabası", "Mardin ilinde [1].", ctx, [False])
    assert wrong.outcome == "wrong"


def test_what_the_user_met_splits_the_fallback_into_closest_and_refused():
    ctx = ["Olay Buzgan kasabasında yaşandı."]
    closest_text = "Sorunuza doğrudan cevap veren bir parça bulamadım; en yakın parçalar şunlar:"
    gated = ans.score_answer("Buzgan", closest_text, ctx, [], "refusal")
    assert ans.result_of("closest", gated) == "closest" and gated.outcome == "fallback"
    assert ans.result_of("refused", ans.score_answer("Buzgan", FALLBACK_ANSWER, ctx, [], "refusal")) == "refused"
    # an answer the gate let through that says the information is not there is a refusal to the user
    assert ans.result_of("answer", ans.score_answer("Buzgan", "Bu bilgi bulunmuyor.", ctx, [])) == "refused"
    assert ans.result_of("answer", ans.score_answer("Buzgan kasabası", "Buzgan kasabası.", ["x"], [])) == "correct"
    assert ans.result_of("answer", ans.score_answer("Buzgan kasabası", "Mardin ilinde [1].", ctx, [False])) == "wrong"


def _row(group: str, outcome: str, result: str, gate_outcome: str, probability: float | None) -> dict:
    """A per-question row as eval.answers._row makes it (only what the summary reads)."""
    refused = result in ("closest", "refused")
    return {"group": group, "outcome": outcome, "result": result, "gate_outcome": gate_outcome,
            "probability": probability, "exact": outcome == "correct", "correct": result == "correct",
            "refused": refused, "gated": gate_outcome != "answer", "gold_in_context": True, "cited": not refused,
            "cited_gold": result == "correct", "quoted_sentences": 0 if refused else 1, "answer_chars": 40,
            "seconds": 0.1}


ROWS = [_row("answerable", "correct", "correct", "answer", 0.9),
        _row("answerable", "correct_not_in_context", "correct", "answer", 0.85),
        _row("answerable", "wrong", "wrong", "answer", 0.95),
        _row("answerable", "fallback", "closest", "closest", 0.5),
        _row("answerable", "fallback", "refused", "refused", 0.1),
        _row("unanswerable", "wrong", "wrong", "answer", 0.9),
        _row("unanswerable", "fallback", "closest", "closest", 0.6),
        _row("unanswerable", "fallback", "closest", "closest", 0.3),
        _row("unanswerable", "fallback", "refused", "refused", None)]


def test_groups_report_correct_wrong_closest_and_refused_with_intervals():
    groups = ans.summarise_groups(ROWS)
    answerable, unanswerable = groups["answerable"]["results"], groups["unanswerable"]["results"]
    assert [answerable[r]["count"] for r in ans.RESULTS] == [2, 1, 1, 1]
    assert [unanswerable[r]["count"] for r in ans.RESULTS] == [0, 1, 2, 1]
    assert answerable["refused"]["mean"] == 0.2 and unanswerable["answered"]["mean"] == 0.25
    assert answerable["correct"]["mean"] == 0.4 and answerable["answered"]["count"] == 3
    for rate in (*answerable.values(), *unanswerable.values()):
        assert rate["ci"][0] <= rate["mean"] <= rate["ci"][1]
    # the older figures keep their meaning: fallback = closest or refused
    assert groups["answerable"]["rates"]["fallback"]["count"] == 2
    assert groups["unanswerable"]["rates"]["fallback"]["mean"] == 0.75
    table = ans.answers_markdown({"groups": groups})
    assert "| closest passages | refused |" in table
    assert "| answerable | 5 | 0.400 [" in table.split("correct answer")[1]


def test_rows_cached_before_the_gate_outcome_are_asked_again(tmp_path):
    """The cached row's layout is in the fingerprint: an older row (no outcome, no probability)
    does not match and is answered anew rather than misread."""
    config = ans.AnswerConfig()
    fingerprint = config.fingerprint("extractive")
    old = f"{config.retriever}|{config.chunk_size}|{config.k}|{config.gate}|extractive"  # the fingerprint before
    cache = tmp_path / ans.ANSWERS_FILE
    cache.write_text(json.dumps({"key": "answerable:1", "fingerprint": old, "kind": "gate"}) + "\n"
                     + json.dumps({"key": "answerable:2", "fingerprint": fingerprint, "outcome": "closest"}) + "\n",
                     encoding="utf-8")
    assert list(ans.load_cache(cache, fingerprint)) == ["answerable:2"]


def test_quoted_sentences_counts_the_extractive_quote_lines():
    assert ans.quoted_sentences("> “Birinci cümle.” [1]\n> “İkinci cümle.” [3]") == 2
    assert ans.quoted_sentences("Kale 1200 yılında yapıldı [1].") == 0
    assert ans.quoted_sentences("⚠️ Sunucu yok.\n\n> “Tek cümle.” [2]") == 1


def test_samples_are_disjoint_fixed_and_sized():
    questions = list(range(892))
    groups = ans.sample_groups(questions, 300, 150)
    assert len(groups["answerable"]) == 300 and len(groups["unanswerable"]) == 150
    assert not set(groups["answerable"]) & set(groups["unanswerable"])
    assert groups == ans.sample_groups(questions, 300, 150)


class ScriptedGenerator:
    """Answers with the first sentence of context [1] and cites it; counts calls (resume check)."""

    kind = "scripted"
    model = "scripted"
    label = "scripted"

    def __init__(self):
        self.calls = 0

    def stream(self, messages, sources, question, **_):
        self.calls += 1
        yield sources[0].text.split(".")[0] + " [1]."


@needs_tquad
def test_tiny_answer_run_resumes_from_cache(settings, tmp_path, session_db):
    from eval.sweep import make_workspace
    from tests.lab_support import small_corpus
    from tests.test_eval_retrievers import HashEmbedder

    corpus = small_corpus(tquad.cached_corpus(str(TQUAD_DIR)))
    ws = make_workspace(settings, cache_db=session_db, embedder_factory=lambda s: HashEmbedder(), corpus=corpus)
    config = ans.AnswerConfig(retriever="production-rrf", answerable=6, unanswerable=4, gate=False)
    gen = ScriptedGenerator()
    out = tmp_path / "run"
    summary = ans.run_answers(settings, config, out, workspace=ws, generator=gen, questions=corpus.dev_questions[:40],
                              namespace="eval_answers_resume")
    assert gen.calls == 10
    assert summary["groups"]["answerable"]["n"] == 6 and summary["groups"]["unanswerable"]["n"] == 4
    unanswerable = summary["groups"]["unanswerable"]["rates"]
    assert unanswerable["gold_in_context"]["mean"] <= 0.25  # own article removed from the context
    assert sum(summary["groups"]["answerable"]["rates"][o]["count"] for o in ans.OUTCOMES) == 6
    answered = summary["groups"]["answerable"]["answered"]
    assert answered["n"] == 6 and answered["quoted_sentences_max"] == 0 and answered["chars_mean"] > 0
    lines = (out / ans.ANSWERS_FILE).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 10 and json.loads(lines[0])["fingerprint"].endswith("scripted")
    again = ScriptedGenerator()
    ans.run_answers(settings, config, out, workspace=ws, generator=again, questions=corpus.dev_questions[:40],
                    namespace="eval_answers_resume")
    assert again.calls == 0
    assert (out / "per_question.csv").read_text(encoding="utf-8").count("\n") == 11


@needs_tquad
def test_answer_run_is_the_answer_service_and_withdraws_the_article(settings, tmp_path, session_db):
    """Exact equality: every row of a run is what AnswerService.ask answers in the same namespace,
    and an unanswerable question's own article is out of the corpus only while it is asked."""
    from eval.retrievers import ProductionRetriever
    from eval.sweep import make_workspace
    from ragcore import store as dbmod
    from ragcore.retrieval import retrieve
    from tests.lab_support import small_corpus
    from tests.test_eval_retrievers import HashEmbedder

    corpus = small_corpus(tquad.cached_corpus(str(TQUAD_DIR)), 8)
    ws = make_workspace(settings, cache_db=session_db, embedder_factory=lambda s: HashEmbedder(), corpus=corpus)
    config = ans.AnswerConfig(retriever="production", answerable=5, unanswerable=3, gate=True)
    out = tmp_path / "run"
    ans.run_answers(settings, config, out, workspace=ws, generator=ScriptedGenerator(),
                    questions=corpus.dev_questions, namespace="eval_answers_same", keep_namespace=True)
    cached = ans.load_cache(out / ans.ANSWERS_FILE, config.fingerprint("scripted"))
    database = dbmod.open_database(settings, "eval_answers_same")
    try:
        service, user = ans.answer_service(database, ans.service_settings(settings, config), ws.embedder("default"),
                                           ScriptedGenerator())
        index = ProductionRetriever.chunk_index(database, ws, config.chunk_size)
        assert len(index) == len(ws.chunks(config.chunk_size))  # every withdrawn article was stored again
        by_qid = {q.qid: q for q in corpus.dev_questions}
        for key, row in cached.items():
            q = by_qid[key.split(":", 1)[1]]
            if key.startswith("answerable:"):
                answer = service.ask(user, q.question)
                hits = retrieve(database, ws.embedder("default"), q.question, "admin", k=5, mode=service.mode,
                                windows=service.settings.dense_windows)
                # "cited" counts in the answer path's ranking (the reader's order, the default policy's)
                ranked = [s.chunk_id for s in service.ranked_sources("admin", q.question, ans.RANKING_DEPTH)]
                cited = [ranked.index(answer.sources[n - 1].chunk_id) + 1 for n in answer.cited]
                assert (row["answer"], row["cited"], row["kind"]) == (answer.text, cited, ans.KINDS[answer.status])
                assert row["ranking"] == [index[c] for c in ranked[:5]]
                assert row["retrieval_ranking"] == [index[s.chunk_id] for s in hits.sources]
                assert row["evidence"] == hits.evidence.as_dict()
            else:
                own = set(ws.chunks(config.chunk_size).by_article[q.article])
                assert not own & set(row["ranking"])
    finally:
        dbmod.drop_namespace(database, "eval_answers_same")
        database.close()


def test_answers_refuse_an_exact_retriever():
    with pytest.raises(ValueError, match="production"):
        ans.AnswerConfig(retriever="hybrid-weighted").mode()


def test_the_closest_outcomes_marks_are_scored_like_an_answer():
    """A closest case whose marked sentences hold the gold answer counts as marked, never as correct."""
    cached = {"outcome": "closest", "nearest": ["Kale, Buzgan kasabası yakınındadır.", "Başka bir cümle."]}
    assert ans.marks_answer("Buzgan kasabası", cached)
    assert not ans.marks_answer("Mardin", cached)
    assert not ans.marks_answer("Buzgan kasabası", {**cached, "outcome": "answer"})  # an answer is scored as one
    assert not ans.marks_answer("Buzgan kasabası", {"outcome": "closest"})  # rows without marks
    rows = [*ROWS[:3], {**ROWS[3], "closest_marked": True}, *ROWS[4:]]
    answerable = ans.summarise_groups(rows)["answerable"]["results"]
    assert answerable["closest_marked"]["count"] == 1 and answerable["correct"]["count"] == 2
    assert answerable["fact_met"]["count"] == 3
    assert ans.summarise_groups(ROWS)["answerable"]["results"]["closest_marked"]["count"] == 0  # older rows
