"""The statistics a gold run adds (eval/gold_stats.py) on hand-computed cases: relevance of a
source, the abstention curve, the three-outcome curve, latency percentiles, the AUC of the gate's score (against
scikit-learn), the recommendation and its intervals and p-values (against scipy.stats) — and Turkish
number formatting (eval/numbers.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from eval import gold_stats as gs
from eval import metrics
from eval.goldset import Expected
from eval.numbers import ci_text, number, percent, signed, with_ci
from tests.gold_stats_support import ANSWER_AT, CLOSEST_AT, PAYLOADS, GoldConfig, payload

DOCS = {"s1": "isg.pdf", "s2": "ik.pdf", "s3": "ISG.pdf"}
CHUNKS = [
    gs.ChunkInfo(1, "s1", "isg.pdf", 1, 1, "Madde 1"),
    gs.ChunkInfo(2, "s1", "isg.pdf", 1, 2, "Madde 2"),
    gs.ChunkInfo(3, "s1", "isg.pdf", 2, 2, "Madde 3"),
    gs.ChunkInfo(4, "s2", "ik.pdf", 2, 2, "Madde 3"),
]


def test_relevance_pages_overlap_or_article_matches_within_expected_documents() -> None:
    readable = {"s1", "s2"}
    assert gs.relevant_chunks(CHUNKS, [Expected("isg.pdf", pages=(2,))], DOCS, readable) == {2, 3}
    assert gs.relevant_chunks(CHUNKS, [Expected("isg.pdf", article="MADDE  1")], DOCS, readable) == {1}
    assert gs.relevant_chunks(CHUNKS, [Expected("isg.pdf", article="Madde 1", pages=(2,))], DOCS, readable) == {1, 2, 3}
    assert gs.relevant_chunks(CHUNKS, [Expected("ik.pdf")], DOCS, readable) == {4}  # no pages, no article: whole doc
    assert gs.relevant_chunks(CHUNKS, [Expected("yok.pdf", pages=(2,))], DOCS, readable) == set()
    # several expected documents: either one answers
    both = [Expected("isg.pdf", article="Madde 3"), Expected("ik.pdf", article="Madde 3")]
    assert gs.relevant_chunks(CHUNKS, both, DOCS, readable) == {3, 4}
    # a document the asking role cannot read never counts as a right source
    assert gs.relevant_chunks(CHUNKS, both, DOCS, {"s2"}) == {4}


def test_documents_match_by_sha256_then_name_then_case_folded_name() -> None:
    assert gs.matching_documents(Expected("isg.pdf"), DOCS) == {"s1"}
    assert gs.matching_documents(Expected("Ik.PDF"), DOCS) == {"s2"}
    assert gs.matching_documents(Expected("isg.pdf", sha256="s3"), DOCS) == {"s3"}
    assert gs.matching_documents(Expected("isg.pdf", sha256="s9"), DOCS) == set()


def test_case_scores_are_eval_metrics_own() -> None:
    scores = gs.case_scores([9, 3, 2], {2, 3})
    assert scores["rank"] == 2 and scores["recall@1"] == 0 and scores["recall@5"] == 1
    assert scores["mrr@10"] == 0.5
    assert scores["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))


def _case(score, answerable, answered, correct):
    return gs.AbstentionCase(score, answerable, answered, correct)


def test_abstention_point_by_hand() -> None:
    cases = [_case(0.9, True, True, True), _case(0.7, True, True, False), _case(0.3, True, True, True),
             _case(0.6, False, True, False), _case(0.2, False, True, False), _case(float("-inf"), False, False, False),
             _case(0.8, True, False, False)]  # the last: answerable, the model itself refused
    p = gs.abstention_point(cases, 0.5)
    # answered: 0.9, 0.7, 0.6 (0.8 passed the gate but the answer was a refusal) → 3 of 7
    assert p["answered"] == 3 and p["coverage"] == pytest.approx(3 / 7)
    assert p["selective_accuracy"] == pytest.approx(1 / 3)  # only 0.9 is right; 0.6 is an unanswerable answered
    # right: 0.9 (correct), 0.2 and -inf (unanswerable, refused) → 3 of 7
    assert p["accuracy"] == pytest.approx(3 / 7)
    assert gs.abstention_point(cases, 10.0)["coverage"] == 0 and gs.abstention_point(cases, 10.0)["selective_accuracy"] is None


def test_abstention_curve_covers_every_score_and_marks_the_operating_point() -> None:
    cases = [_case(0.9, True, True, True), _case(0.4, False, True, False), _case(0.6, True, True, False)]
    curve = gs.abstention_curve(cases, 0.5)
    thresholds = [p["threshold"] for p in curve["points"]]
    assert {0.0, 0.4, 0.5, 0.6, 0.9} <= set(thresholds) and thresholds == sorted(thresholds)
    assert curve["points"][-1]["coverage"] == 0.0  # above the highest score nothing is answered
    assert curve["operating_point"]["threshold"] == 0.5 and curve["operating_point"]["coverage"] == pytest.approx(2 / 3)
    coverages = [p["coverage"] for p in curve["points"]]
    assert coverages == sorted(coverages, reverse=True)  # raising the threshold never answers more


# --------------------------------------------------------------------------- three outcomes



def _gate(p, answerable, result, rescued=False):
    return gs.GateCase(p, answerable, rescued, result)


# Answerable: 0.9 correct, 0.85 wrong, 0.6 (closest today; correct if answered), 0.3 rescued by the
# single threshold (closest today; wrong if answered), 0.2 refused (correct if answered), nothing
# permitted (refused whatever the cut). Unanswerable: 0.95 answered, 0.5 closest, 0.1 refused,
# 0.9 whose answer is itself a refusal.
GATE_CASES = [_gate(0.9, True, "correct"), _gate(0.85, True, "wrong"), _gate(0.6, True, "correct"),
              _gate(0.3, True, "wrong", rescued=True), _gate(0.2, True, "correct"), _gate(None, True, "refused"),
              _gate(0.95, False, "wrong"), _gate(0.5, False, "wrong"), _gate(0.1, False, "wrong"),
              _gate(0.9, False, "refused")]


def test_outcome_point_by_hand() -> None:
    today = gs.outcome_point(GATE_CASES, ANSWER_AT, CLOSEST_AT)
    assert today["answer_at"] == ANSWER_AT
    assert today["answerable"] == {"n": 6, "correct": 1 / 6, "wrong": 1 / 6, "closest": 2 / 6, "refused": 2 / 6}
    assert today["unanswerable"] == {"n": 4, "correct": 0.0, "wrong": 1 / 4, "closest": 1 / 4, "refused": 2 / 4}
    # a lower answer cut answers 0.6 (correct) and 0.5 (an unanswerable, wrong); the rescued 0.3 stays closest
    low = gs.outcome_point(GATE_CASES, 0.45, CLOSEST_AT)
    assert low["answerable"] == {"n": 6, "correct": 2 / 6, "wrong": 1 / 6, "closest": 1 / 6, "refused": 2 / 6}
    assert low["unanswerable"]["wrong"] == 2 / 4 and low["unanswerable"]["closest"] == 0.0
    # below closest_at: answered from the cut down; a refusal stays a refusal only where p < cut
    assert gs.outcome_point(GATE_CASES, 0.0, CLOSEST_AT)["answerable"] == {
        "n": 6, "correct": 3 / 6, "wrong": 2 / 6, "closest": 0.0, "refused": 1 / 6}
    # nothing above the cut: every case with something permitted is closest (p ≥ closest_at, or rescued) or refused
    top = gs.outcome_point(GATE_CASES, 1.0, CLOSEST_AT)
    assert top["answerable"] == {"n": 6, "correct": 0.0, "wrong": 0.0, "closest": 4 / 6, "refused": 2 / 6}
    assert gs.outcome_point([], ANSWER_AT, CLOSEST_AT)["answerable"] == {
        "n": 0, "correct": None, "wrong": None, "closest": None, "refused": None}


def test_outcome_curve_moves_the_answer_cut_over_every_probability() -> None:
    curve = gs.outcome_curve(GATE_CASES, ANSWER_AT, CLOSEST_AT)
    cuts = [p["answer_at"] for p in curve["points"]]
    assert cuts == sorted(cuts) and {0.0, 1.0, ANSWER_AT, 0.1, 0.2, 0.3, 0.5, 0.6, 0.85, 0.9, 0.95} == set(cuts)
    assert (curve["answer_at"], curve["closest_at"]) == (ANSWER_AT, CLOSEST_AT)
    assert curve["operating_point"] == gs.outcome_point(GATE_CASES, ANSWER_AT, CLOSEST_AT)
    for point in curve["points"]:  # four shares that cover every case of the group
        for group in ("answerable", "unanswerable"):
            assert sum(point[group][r] for r in gs.RESULTS) == pytest.approx(1.0)
    answered = [p["answerable"]["correct"] + p["answerable"]["wrong"] for p in curve["points"]]
    assert answered == sorted(answered, reverse=True)  # raising the answer cut never answers more


def test_the_quote_check_turns_unsure_quotes_into_closest_passages_along_the_curve() -> None:
    sure, unsure = 0.9, 0.2
    cases = [gs.GateCase(0.9, True, False, "correct", sure), gs.GateCase(0.85, True, False, "wrong", unsure),
             gs.GateCase(0.6, True, False, "wrong", unsure), gs.GateCase(0.95, False, False, "wrong", unsure),
             gs.GateCase(0.9, True, False, "correct", None)]  # None: not quoted (a language model's answer)
    point = gs.outcome_point(cases, ANSWER_AT, CLOSEST_AT, quote_at=0.5)
    assert point["answerable"] == {"n": 4, "correct": 2 / 4, "wrong": 0.0, "closest": 2 / 4, "refused": 0.0}
    assert point["unanswerable"]["closest"] == 1.0
    assert gs.outcome_point(cases, ANSWER_AT, CLOSEST_AT)["answerable"]["wrong"] == 1 / 4  # no check: quoted
    # a lower answer cut lets the 0.6 case past the gate, and the check still holds its unsure quote back
    assert gs.outcome_point(cases, 0.5, CLOSEST_AT, quote_at=0.5)["answerable"]["wrong"] == 0.0
    curve = gs.outcome_curve(cases, ANSWER_AT, CLOSEST_AT, quote_at=0.5)
    assert curve["quote_at"] == 0.5 and curve["operating_point"] == point


def test_gate_score_separation_is_the_roc_auc() -> None:
    rng = np.random.default_rng(3)
    scores = rng.random(40)
    labels = rng.random(40) < 0.6
    cases = [_case(float(s), bool(a), True, True) for s, a in zip(scores, labels, strict=True)]
    assert gs.score_separation(cases) == pytest.approx(roc_auc_score(labels, scores))
    assert gs.score_separation([_case(0.5, True, True, True)]) is None


def test_latency_percentiles_and_rates() -> None:
    values = [10.0, 20.0, 30.0, 40.0, 1000.0]
    out = gs.latency(values)
    assert out["p50"] == 30.0 and out["p95"] == pytest.approx(np.percentile(values, 95)) and out["n"] == 5
    assert gs.latency([])["p95"] is None
    r = gs.rate([True, False, True, True])
    assert r["mean"] == 0.75 and r["count"] == 3 and r["n"] == 4 and r["ci"][0] <= 0.75 <= r["ci"][1]


def _systems(values: dict[str, list[float]]) -> dict[str, dict[str, np.ndarray]]:
    return {k: {"ndcg@10": np.array(v, dtype=float)} for k, v in values.items()}


def test_recommendation_picks_the_cheapest_configuration_tied_with_the_best() -> None:
    n = 60
    rng = np.random.default_rng(0)
    best = rng.random(n)
    near = best.copy()
    near[:3] -= 0.05  # loses a little on 3 of 60 questions, wins none
    noisy = best + rng.normal(0, 0.05, n) - 0.005  # differs up and down: not separable from the best
    poor = best - 0.3  # clearly worse
    systems = _systems({"best": best, "noisy": noisy, "poor": poor, "near": near})
    costs = {"best": gs.Cost(900.0, 100.0), "noisy": gs.Cost(300.0, 50.0), "poor": gs.Cost(10.0, 1.0),
             "near": gs.Cost(200.0, 10.0)}
    labels = {k: k.upper() for k in systems}
    idx = metrics.bootstrap_indices(n)
    r = gs.recommend(systems, costs, labels, "ndcg@10", idx)
    assert r["best"] == "best"
    cmp = r["comparisons"]
    # the rule, stated by the numbers it uses
    tied = {k for k, m in cmp.items() if m["ci"][0] <= 0 <= m["ci"][1]}
    assert tied == set(r["tied_with_best"]) and "noisy" in tied and "poor" not in tied
    cheapest = min(tied | {"best"}, key=lambda k: costs[k].key())
    assert r["chosen"] == cheapest
    text = r["text"]
    assert text.startswith(f"Önerilen yapılandırma: {labels[cheapest]}.")
    m = cmp[cheapest]
    assert signed(m["diff"]) in text and ci_text(m["ci"], signed_values=True) in text
    assert "Ucuz: bu çalıştırmada ölçülen en yavaş %5 cevap süresi" in text


def test_recommendation_when_the_best_is_also_the_cheapest_or_alone() -> None:
    systems = _systems({"a": [1.0] * 20, "b": [0.0] * 20})
    r = gs.recommend(systems, {"a": gs.Cost(1.0, 1.0), "b": gs.Cost(0.5, 0.5)}, {"a": "A", "b": "B"}, "ndcg@10")
    assert r["chosen"] == "a" and r["tied_with_best"] == []
    assert "diğer bütün yapılandırmalar ondan anlamlı biçimde ayrılıyor" in r["text"]
    alone = gs.recommend(_systems({"a": [0.5, 1.0]}), {"a": gs.Cost(1.0, 1.0)}, {"a": "A"}, "ndcg@10")
    assert alone["chosen"] == "a" and "Tek yapılandırma ölçüldü (A): Sıralama kalitesi (ilk 10) 0,750" in alone["text"]


def test_turkish_numbers() -> None:
    assert number(0.926) == "0,926" and number(1234.5, 1) == "1.234,5" and number(None) == "—"
    assert number(-0.0004) == "0,000" and number(-0.25, 2) == "−0,25"
    assert signed(0.004) == "+0,004" and signed(-0.012) == "−0,012" and signed(0.0) == "±0,000"
    assert percent(0.125) == "%12,5"
    assert ci_text([0.886, 0.924]) == "[0,886–0,924]" and ci_text([-0.041, 0.015], signed_values=True) == "[−0,041; +0,015]"
    assert with_ci({"mean": 0.9, "ci": [0.8, 0.95]}) == "0,900 [0,800–0,950]"


def test_the_recommendations_intervals_and_p_values_agree_with_scipy() -> None:
    """The paired interval and p-value behind each comparison, computed again by
    `scipy.stats.bootstrap` and `scipy.stats.permutation_test` on fixed seeds: the same within
    Monte-Carlo error (different random draws), and Holm over the family exactly as defined."""
    from scipy import stats

    n = 60
    rng = np.random.default_rng(8)  # p ≈ 0.38 and ≈ 0.003: one tie, one clear loss
    best = rng.random(n)
    systems = _systems({"best": best, "close": best + rng.normal(0, 0.12, n) - 0.02,
                        "worse": best + rng.normal(0, 0.12, n) - 0.05})
    costs = {"best": gs.Cost(900.0, 100.0), "close": gs.Cost(300.0, 50.0), "worse": gs.Cost(10.0, 1.0)}
    r = gs.recommend(systems, costs, {k: k for k in systems}, "ndcg@10", metrics.bootstrap_indices(n))
    assert r["best"] == "best"
    pvalues = {}
    for name in ("close", "worse"):
        ours = r["comparisons"][name]
        system, base = systems[name]["ndcg@10"], systems["best"]["ndcg@10"]
        d = system - base
        assert ours["diff"] == pytest.approx(d.mean(), abs=1e-12)
        boot = stats.bootstrap((d,), np.mean, n_resamples=20000, confidence_level=0.95, method="percentile",
                               random_state=np.random.default_rng(1))
        assert ours["ci"] == pytest.approx([boot.confidence_interval.low, boot.confidence_interval.high], abs=0.004)
        perm = stats.permutation_test((system, base), lambda x, y, axis: np.mean(x - y, axis=axis),
                                      permutation_type="samples", vectorized=True, n_resamples=20000,
                                      alternative="two-sided", random_state=np.random.default_rng(2))
        assert 0.001 < perm.pvalue < 0.5  # a p-value where the comparison means something
        assert ours["p"] == pytest.approx(perm.pvalue, abs=0.01)
        pvalues[name] = ours["p"]
    low, high = sorted(pvalues, key=pvalues.get)
    assert r["comparisons"][low]["p_holm"] == pytest.approx(min(1.0, 2 * pvalues[low]))
    assert r["comparisons"][high]["p_holm"] == pytest.approx(max(min(1.0, 2 * pvalues[low]), pvalues[high]))
    assert r["tied_with_best"] == ["close"] and r["chosen"] == "close"  # the cheaper "worse" is separable


# --------------------------------------------------------------------------- the summary's three outcomes


def test_the_summary_gives_each_group_the_shares_of_what_the_user_met() -> None:
    from eval import gold_report

    block, _ = gold_report.configuration_summary(GoldConfig(), PAYLOADS, None, None)
    shown = block["gate_outcomes"]
    answerable, unanswerable = shown["answerable"]["rates"], shown["unanswerable"]["rates"]
    assert shown["answerable"]["n"] == 6 and shown["unanswerable"]["n"] == 4
    assert [answerable[r]["count"] for r in gs.RESULTS] == [1, 1, 2, 2]
    assert [unanswerable[r]["count"] for r in gs.RESULTS] == [0, 1, 1, 2]
    assert unanswerable["answered"]["mean"] == 0.25 and answerable["answered"]["mean"] == pytest.approx(2 / 6)
    lo, hi = answerable["refused"]["ci"]
    assert lo <= answerable["refused"]["mean"] <= hi  # each with its bootstrap interval
    # the old figures keep their meaning: "fallback" is the closest passages and the refusals together
    assert block["answers"]["answerable"]["rates"]["fallback"]["count"] == 4
    curve = block["outcome_curve"]
    assert curve == gs.outcome_curve(GATE_CASES, ANSWER_AT, CLOSEST_AT)  # read off the stored cases
    op = curve["operating_point"]
    for group in ("answerable", "unanswerable"):
        assert [op[group][r] for r in gs.RESULTS] == pytest.approx([shown[group]["rates"][r]["mean"] for r in gs.RESULTS])
    assert (block["threshold"]["answer_at"], block["threshold"]["closest_at"]) == (ANSWER_AT, CLOSEST_AT)
    assert block["threshold"]["quote_at"] is None  # these payloads come from a gate without a quote check
    row = gold_report.results_rows({"configurations": [{**block, "index": {}}]})[0]
    assert row["En yakın parçalar (cevaplanabilir)"].startswith("%33,3")
    assert row["Cevap verildi (cevaplanamaz)"].startswith("%25,0")


def test_a_run_without_a_model_or_from_before_the_three_outcomes_still_summarises() -> None:
    from eval import gold_report

    no_model = [{**p, "gate": {**p["gate"], "answer_at": None, "closest_at": None}} for p in PAYLOADS]
    block, _ = gold_report.configuration_summary(GoldConfig(), no_model, None, None)
    assert block["outcome_curve"] is None and block["gate_outcomes"]["answerable"]["n"] == 6
    older = [{**p, "answer": {k: v for k, v in p["answer"].items() if k not in ("gate_outcome", "probability")}}
             for p in PAYLOADS]
    block, _ = gold_report.configuration_summary(GoldConfig(), older, None, None)
    assert block["outcome_curve"] is None and block["gate_outcomes"] is None
    row = gold_report.results_rows({"configurations": [{**block, "index": {}}]})[0]
    assert row["Reddedildi (cevaplanabilir)"] == "—" and row["Doğru (cevaplanabilir)"] != "—"


def test_the_summary_says_how_often_the_closest_passages_mark_the_asked_fact() -> None:
    """The closest outcome marks a sentence per passage; the summary counts, of the answerable
    cases shown it, those whose marks carry the key facts, and the cases that met the fact at all."""
    from eval import gold_report

    payloads = [payload(True, "answer", 0.9, "correct"), payload(True, "answer", 0.85, "wrong"),
                payload(True, "closest", 0.6, "fallback", nearest=["a"], nearest_found=True),
                payload(True, "closest", 0.5, "fallback", nearest=["b"], nearest_found=False),
                payload(True, "closest", 0.4, "fallback", nearest=[], nearest_found=None),  # no key facts to find
                payload(True, "refused", 0.2, "fallback"),
                payload(False, "closest", 0.5, "fallback", nearest=["c"], nearest_found=None)]
    block, _ = gold_report.configuration_summary(GoldConfig(), payloads, None, None)
    marks = block["gate_outcomes"]["answerable"]["closest_marks"]
    assert (marks["of_closest"]["count"], marks["of_closest"]["n"]) == (1, 2)
    assert (marks["fact_met"]["count"], marks["fact_met"]["n"]) == (2, 6)  # the right quote and the right mark
    row = gold_report.results_rows({"configurations": [{**block, "index": {}}]})[0]
    assert row["İşaretli cümlede bilgi (en yakın parçalar)"].startswith("%50,0")
    older, _ = gold_report.configuration_summary(GoldConfig(), PAYLOADS, None, None)  # stored before the marks
    assert older["gate_outcomes"]["answerable"]["closest_marks"]["fact_met"]["count"] == 1


def test_marked_facts_needs_every_key_fact_in_some_mark() -> None:
    from eval.gold_run import marked_facts
    from eval.goldset import GoldQuestion

    question = GoldQuestion("q", "Kaza kaç günde bildirilir?", True, (), ("isg",), ("üç iş günü", "Kuruma"))
    assert marked_facts(question, ["kazadan sonraki üç iş günü içinde", "Kuruma bildirir"]) is True
    assert marked_facts(question, ["kazadan sonraki üç iş günü içinde", "İşveren bildirir"]) is False
    assert marked_facts(question, []) is None
    unanswerable = GoldQuestion("u", "KVKK ne der?", False, (), ("isg",))
    assert marked_facts(unanswerable, ["Kuruma"]) is None
