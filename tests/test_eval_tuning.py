"""The fitting tools (`python -m eval fit`) that write ragcore/measured/*.json: one weight tuner, a tuning/reporting split for
the refusal threshold, and the bench's write path being the upload's."""

from __future__ import annotations

import importlib
import shutil

import numpy as np
import pytest

from eval import metrics, tquad
from eval import retrievers as rv
from eval.fit import FITS, subset
from eval.relevance import relevance
from eval.sweep import make_workspace, mode_retrievers, tune_fusion
from ragcore.retrieval import (
    MEASURED_DIR,
    RETRIEVAL_FILE,
    THRESHOLDS_FILE,
    Evidence,
    retrieval_default,
    threshold_default,
    write_measured,
)
from tests.conftest import TQUAD_DIR
from tests.test_eval_retrievers import HashEmbedder

needs_tquad = pytest.mark.needs_data("tquad")


def _script(name: str):
    """The fitting tool `python -m eval fit <name>` runs."""
    return importlib.import_module(FITS[name])


@needs_tquad
def test_tune_fusion_uses_the_one_weight_tuner_and_writes_a_readable_entry(settings, tmp_path, session_db):
    corpus = subset(tquad.cached_corpus(str(TQUAD_DIR)), 12)
    assert corpus.train_questions and corpus.dev_questions
    assert all(corpus.articles[q.article].split == "train" for q in corpus.train_questions)
    ws = make_workspace(settings, cache_db=session_db, embedder_factory=lambda s: HashEmbedder(), corpus=corpus)
    report = tune_fusion(settings, ws, 1000, train_questions=40, dev_limit=30, weights=(0.0, 0.3, 0.6, 1.0))
    # the weight is tuned through the app's retrieval: each grid point is production-weighted at that weight
    train = tquad.sample_train_questions(corpus, 40)
    rel = relevance(ws.chunks(1000), train)
    for point in report["tuning"]["grid"]:
        top = rv.make_retriever(f"production-weighted-w{point['weight']}").rank(ws, 1000, train, "train", 10)
        assert metrics.per_question(top.tolist(), rel)["recall@5"].mean() == pytest.approx(point["recall@5"])
    best_weight = max(report["tuning"]["grid"], key=lambda g: (g["recall@5"], g["mrr@10"], -g["weight"]))["weight"]
    assert report["weight"] == best_weight and "ragcore.retrieval.search" in report["tuning"]["path"]
    best = max(report["train_modes"], key=lambda m: (report["train_modes"][m]["recall@5"],
                                                     report["train_modes"][m]["mrr@10"]))
    assert report["mode"] == best
    assert set(report["dev"]) == {*mode_retrievers(report["weight"]).values(), "production"}
    assert report["dev_questions"] == 30
    assert report["production"]["production@1000"]["exact_counterpart"]  # each run with its numpy reference
    with session_db.connection() as conn:  # the tuning's namespace is dropped after the report
        assert conn.execute("SELECT to_regnamespace('eval_tquad_1000') IS NULL").fetchone()[0]
    for file in (RETRIEVAL_FILE, THRESHOLDS_FILE):
        shutil.copy(MEASURED_DIR / file, tmp_path / file)
    write_measured(RETRIEVAL_FILE, "hash-bow-64", report["entry"], tmp_path)
    got = retrieval_default("hash-bow-64", tmp_path)
    assert got.tuned and (got.mode, got.weight) == (report["mode"], report["weight"])
    assert "30 dev questions" in got.measured


def test_tuning_refuses_a_corpus_without_train_questions(settings, session_db):
    corpus = tquad.Corpus([], [], [], 0, 0, 0, {})
    ws = make_workspace(settings, cache_db=session_db, embedder_factory=lambda s: HashEmbedder(), corpus=corpus)
    with pytest.raises(ValueError, match="train questions"):
        tune_fusion(settings, ws)


def _cases(rng: np.random.Generator) -> list[dict]:
    cases = []
    for kind, n, centre in (("answerable", 40, 0.7), ("offtopic", 30, 0.2), ("other-law", 20, 0.35), ("tquad", 30, 0.1)):
        for _ in range(n):
            cosine, coverage = np.clip(rng.normal(centre, 0.12, 2), 0, 1)
            cases.append({"question": "?", "role": "isg", "kind": kind,
                          "evidence": Evidence(float(cosine), 1.0, float(coverage), 5)})
    return cases


def test_threshold_calibration_tunes_on_one_half_and_reports_on_the_other(tmp_path):
    cal = _script("threshold")
    cases = _cases(np.random.default_rng(0))
    halves = cal.split([c["kind"] for c in cases])
    assert halves == cal.split([c["kind"] for c in cases])  # seeded
    for kind in ("answerable", "offtopic", "other-law", "tquad"):
        mine = [h for h, c in zip(halves, cases, strict=True) if c["kind"] == kind]
        assert mine.count("tuning") == (len(mine) + 1) // 2
    result = cal.calibrate(cases, min_answered=0.95)
    chosen = result["signals"][result["signal"]]
    assert result["signal"] == max(result["signals"], key=lambda n: (result["signals"][n]["tuning"]["auc"], n == "mean"))
    assert chosen["tuning"]["chosen"]["answerable_answered"] >= 0.95
    # the value is the highest cut that still answers 95 % of the tuning half's answerable cases
    signal = cal.SIGNALS[result["signal"]]
    tune_pos = [signal(c["evidence"]) for c in cases if c["split"] == "tuning" and c["kind"] == "answerable"]
    weakest_answered = min(p for p in tune_pos if p >= result["value"])
    assert sum(p >= result["value"] for p in tune_pos) / len(tune_pos) >= 0.95
    assert sum(p > weakest_answered for p in tune_pos) / len(tune_pos) < 0.95  # one more refusal breaks it
    assert chosen["reporting"]["n_answerable"] == 20 and chosen["reporting"]["answerable_answered"] is not None
    entry = cal.measured_entry("hash-bow-64", result, 40, 80)
    shutil.copy(MEASURED_DIR / THRESHOLDS_FILE, tmp_path / THRESHOLDS_FILE)
    write_measured(THRESHOLDS_FILE, "hash-bow-64", entry, tmp_path)
    got = threshold_default("hash-bow-64", tmp_path)
    assert got.calibrated and (got.signal, got.value) == (result["signal"], result["value"])
    assert "reporting half" in got.measured


def test_bench_loads_documents_through_the_upload_write_path(pg_url):
    from bench.retrieval import load_documents
    from ragcore import store as dbmod
    from ragcore.core import lexical_tokens

    db = dbmod.Database(pg_url, "test_bench_write")  # its own namespace: a 64-d index of its own
    try:
        dbmod.drop_namespace(db, "test_bench_write")
        db.close()
        db = dbmod.Database(pg_url, "test_bench_write")
        dbmod.migrate(db)
        dbmod.ensure_embedding_space(db, "hash-bow-64", 64)
        _load_and_check(db, load_documents, lexical_tokens)
    finally:
        dbmod.drop_namespace(db, "test_bench_write")
        db.close()


def _load_and_check(db, load_documents, lexical_tokens) -> None:
    embedder = HashEmbedder()
    texts = ["İş kazası üç gün içinde bildirilir.", "Yıllık izin on dört günden az olamaz.", "Yemekhane açıktır."]
    vectors = embedder.embed_passages(texts)
    batch = [(["isg"], [(texts[0], vectors[0]), (texts[1], vectors[1])]), (["ik", "personel"], [(texts[2], vectors[2])])]
    with db.connection() as conn:
        load_documents(conn, batch, 0)
    with db.connection() as conn:
        docs = conn.execute("SELECT title, allowed_roles FROM documents ORDER BY id").fetchall()
        postings = conn.execute("SELECT count(*) FROM postings").fetchone()[0]
        stats = dict(conn.execute("SELECT role, chunk_count FROM lex_stats").fetchall())
    assert docs == [("bench-0", ["isg"]), ("bench-1", ["ik", "personel"])]
    assert postings == sum(len(set(lexical_tokens(t))) for t in texts)
    assert stats["admin"] == 3 and stats["isg"] == 2 and stats["ik"] == 1


def test_the_quote_check_keeps_the_quotes_that_were_right_and_answers_no_more_unanswerables():
    from ragcore.retrieval import ANSWER, CLOSEST, QuoteSignals, Threshold, abstention
    from tests.abstention_support import gate_model, gate_retrieval

    cal = _script("abstention")
    gate = gate_model(answer_at=0.9, closest_at=0.0)
    threshold = Threshold(0.5, "cosine", "test")
    # Ten questions: the quoter's best sentence is sure for the right quotes and unsure for the
    # wrong ones and for the unanswerable cases; the gate's probability alone separates nothing.
    train = []
    for i in range(10):
        sure = i % 2 == 0
        retrieval = gate_retrieval([0.79 + 0.002 * i, 0.7], [3.0, 1.0])
        signals = QuoteSignals(0.9 if sure else 0.2, 0.1, 1)
        train.append({"qid": f"a{i}", "answerable": True, "retrieval": retrieval, "quote_signals": signals,
                      "quote_correct": sure, "features": abstention.features(retrieval)})
        train.append({"qid": f"u{i}", "answerable": False, "retrieval": retrieval, "quote_signals": QuoteSignals(0.2, 0.1, 1),
                      "quote_correct": False, "features": abstention.features(retrieval)})
    assert {cal.final_outcome(c, gate, threshold) for c in train} == {CLOSEST}  # the gate alone answers none
    checked = cal.fit_quote_check(train, gate, max_answered_unanswerable=0.0)
    assert checked.quote_check is not None and checked.answer_cut(quoting=True) < gate.answer_at  # a lower cut to quote
    assert checked.answer_at == gate.answer_at  # a language model's answers keep the gate's own cut
    got = [cal.final_outcome(c, checked, threshold) for c in train]
    assert [g for c, g in zip(train, got, strict=True) if c["quote_correct"]] == [ANSWER] * 5  # every right quote is answered
    assert {g for c, g in zip(train, got, strict=True) if not c["quote_correct"]} == {CLOSEST}  # no wrong one, no unanswerable
    all_wrong = [{**c, "quote_correct": False} for c in train]
    never = cal.fit_quote_check(all_wrong, gate, max_answered_unanswerable=0.0)
    assert {cal.final_outcome(c, never, threshold) for c in all_wrong} == {CLOSEST}  # no quote at all




def _gate_case(qid: str, cosine: float, answerable: bool, domain: str, *, right: bool = False, sure: float = 0.5):
    from ragcore.retrieval import QuoteSignals, abstention
    from tests.abstention_support import gate_retrieval

    retrieval = gate_retrieval([cosine, cosine - 0.05], [3.0, 1.0])
    return {"qid": qid, "answerable": answerable, "domain": domain, "retrieval": retrieval,
            "features": abstention.features(retrieval), "quote_signals": QuoteSignals(sure, 0.1, 1),
            "quote_correct": right}


def test_the_gate_holds_each_domains_limit_on_unanswerable_cases():
    """TQuAD's unanswerable cases overlap its answerable ones more than the laws' do; one pooled
    limit would let the larger domain's cases decide the cut for both."""
    from ragcore.retrieval import abstention

    cal = _script("abstention")
    # laws: unanswerable cosines 0.70–0.79, answerable 0.80–0.89; TQuAD (4× the cases): both spread over 0.75–0.95.
    train = [_gate_case(f"lu{i}", 0.70 + 0.01 * i, False, "laws") for i in range(10)]
    train += [_gate_case(f"la{i}", 0.80 + 0.01 * i, True, "laws") for i in range(10)]
    train += [_gate_case(f"tu{i}", 0.75 + 0.005 * i, False, "tquad") for i in range(40)]
    train += [_gate_case(f"ta{i}", 0.76 + 0.005 * i, True, "tquad") for i in range(40)]

    def answered_unanswerable(model, domain):
        return sum(not c["answerable"] and c["domain"] == domain and model.probability(c["features"]) >= model.answer_at
                   for c in train)

    strict_laws = cal.fit(train, {"laws": 0.0, "tquad": 0.5}, 0.05, "test")
    assert answered_unanswerable(strict_laws, "laws") == 0
    assert answered_unanswerable(strict_laws, "tquad") <= 20
    strict_tquad = cal.fit(train, {"laws": 0.5, "tquad": 0.0}, 0.05, "test")
    assert answered_unanswerable(strict_tquad, "tquad") == 0
    assert strict_tquad.answer_at > strict_laws.answer_at  # TQuAD's limit is the one that binds here
    one_limit = cal.fit(train, 0.0, 0.05, "test")
    assert one_limit.answer_at == cal.fit(train, {"laws": 0.0, "tquad": 0.0}, 0.05, "test").answer_at
    assert set(one_limit.names) == set(abstention.FEATURE_NAMES)


def test_the_quote_check_counts_each_domain_once_whatever_its_size():
    """Quoting where the quoter is sure: 4 right law quotes (of 10 law cases), 3 right and 9 wrong
    TQuAD quotes (of 40). Counted, that is 7 − 9 < 0 and nothing would be quoted; by each domain's
    share, 0.4 − 0.15 > 0, and the law domain's right quotes are kept."""
    from ragcore.retrieval import ANSWER, Threshold
    from tests.abstention_support import gate_model

    cal = _script("abstention")
    gate = gate_model(answer_at=0.0, closest_at=0.0)
    threshold = Threshold(0.5, "cosine", "test")
    train = [_gate_case(f"lr{i}", 0.9, True, "laws", right=True, sure=0.9) for i in range(4)]
    train += [_gate_case(f"lw{i}", 0.9, True, "laws", sure=0.1) for i in range(6)]
    train += [_gate_case(f"tr{i}", 0.9, True, "tquad", right=True, sure=0.9) for i in range(3)]
    train += [_gate_case(f"tw{i}", 0.9, True, "tquad", sure=0.9) for i in range(9)]
    train += [_gate_case(f"tu{i}", 0.9, True, "tquad", sure=0.1) for i in range(28)]
    weights = cal._domain_weights(train)
    assert weights[:10].sum() == pytest.approx(1.0) and weights[10:].sum() == pytest.approx(1.0)
    checked = cal.fit_quote_check(train, gate, max_answered_unanswerable=0.0)
    outcomes = {c["qid"]: cal.final_outcome(c, checked, threshold) for c in train}
    assert [outcomes[f"lr{i}"] for i in range(4)] == [ANSWER] * 4
    assert {outcomes[f"lw{i}"] for i in range(6)} | {outcomes[f"tu{i}"] for i in range(28)} == {"closest"}
