"""Fit the three-outcome gate for the configured embedder: `python -m eval fit abstention`.

1. The three sample laws go in as an upload puts them (`eval.lab_corpus`, the roles of
   eval/gold/paraphrase_laws.corpus.json) in a namespace of the app's database.
2. Every (question, asking role) case of the everyday development set
   (eval/gold/everyday_laws.jsonl) is retrieved through the app (`ragcore.retrieval.retrieve`,
   the mode and k the chat uses); `ragcore.retrieval.abstention.features` reads its signals.
3. On the TRAIN half only (eval.gold_split, seed 0): a logistic regression (scikit-learn, L2,
   standardised features) of answerable vs unanswerable; `answer_at` is the lowest cut that
   answers at most `--max-answered-unanswerable` of the train half's unanswerable cases;
   `closest_at` the highest cut that refuses at most `--max-refused-answerable` of its answerable
   cases; unless `--no-quote-check`, the quote check (`fit_quote_check`) — a second logistic model
   of "the extractive quote carries the asked fact" over the gate's and the quoter's signals —
   and its cut, chosen together with a (lower) answer cut of its own (`QuoteCheck.answer_at`): an
   answer outcome whose quote falls below the check's cut is shown as the closest passages rather
   than a quote. The gate's own `answer_at` stays for a language model, whose answers have no check.
   With `--fit-tquad`, TQuAD *train* questions join the train half as a second domain
   (`collect_tquad`: 300 answerable, 150 unanswerable with their article withdrawn, as the answer
   evaluation asks them, through the same retrieval and quoter over the lab's TQuAD corpus): each
   domain weighs the same in both fits, gets its own limit on unanswerable cases answered
   (`--max-answered-unanswerable-tquad`), and counts once in the quote check's right-minus-wrong
   (its cases' share, not their number). Measured and not adopted: TQuAD's unanswerable cases
   look like answerable ones to these signals, so its limit lifts the cuts until few law
   questions are answered (docs/eval_runs/abstention-e5-fit-tquad.json).
4. Reported, never tuned on: the dev half, the paraphrase set (eval/gold/paraphrase_laws.jsonl)
   and, unless `--no-tquad`, the answer evaluation's TQuAD dev sample (`eval.answers.sample_groups`,
   the same 300 + 150 questions `python -m eval answers` asks) and the same-sized TQuAD train sample.

Prints a JSON report (written with --out); with `--write` the model becomes the embedder's entry
in ragcore/measured/abstention.json. The embedding cache makes reruns cheap:

    EMBED_BACKEND=e5 python -m eval fit abstention --write --out docs/eval_runs/abstention-e5.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from eval.fit.setup import cached_embedder, sample_laws
from eval.gold_run import index_chunks
from eval.gold_run import outcome as gold_outcome
from eval.gold_split import DEV, TRAIN, everyday_split, kind_of
from eval.gold_stats import relevant_chunks
from eval.goldset import GoldQuestion, parse_jsonl
from eval.goldstore import SAMPLE_FILE
from eval.report import provenance, write_card
from ragcore import store as dbmod
from ragcore.answer import choose_quote, quote_passages
from ragcore.core import STATUS_ANSWERED, Settings
from ragcore.retrieval import (
    ABSTENTION_FEATURE_NAMES,
    ABSTENTION_FILE,
    ANSWER,
    CLOSEST,
    QUOTE_FEATURE_NAMES,
    REFUSED,
    AbstentionModel,
    QuoteCheck,
    QuoteSignals,
    abstention_features,
    decide,
    quote_features,
    quote_held_back,
    resolve_mode,
    retrieve,
    threshold_for,
    write_measured,
)

NAMESPACE = "calibrate_abstention"
TQUAD_NAMESPACE = "calibrate_abstention_tquad"
LAWS, TQUAD = "laws", "tquad"
MAX_ANSWERED_UNANSWERABLE = 0.03
MAX_ANSWERED_UNANSWERABLE_TQUAD = 0.10  # the TQuAD target
MAX_REFUSED_ANSWERABLE = 0.05
TQUAD_ANSWERABLE, TQUAD_UNANSWERABLE = 300, 150  # the answer evaluation's sample sizes


def collect(index, embedder, questions: list[GoldQuestion], documents, *, k: int, mode: str,
            windows: bool) -> list[dict]:
    """One record per (question, role): label, kind, features, and whether a right chunk was in top k.

    `windows` as the app retrieves (`Settings.dense_windows`): the gate reads the dense scores
    of the retrieval the chat runs, so it must be fitted on that same retrieval."""
    chunks = index_chunks(index)
    names = {d.sha256: d.filename for d in documents}
    out = []
    for question in questions:
        for role in question.roles:
            readable = {d.sha256 for d in documents if d.readable_by(role)}
            relevant = relevant_chunks(chunks, question.expected, names, readable) if question.answerable else set()
            retrieval = retrieve(index.db, embedder, question.question, role, k=k, mode=mode, windows=windows)
            found = any(s.chunk_id in relevant for s in retrieval.sources)
            quoted, correct = quote_check(question, retrieval, embedder)
            out.append(case_record(question.id, role, question.answerable, kind_of(question), found, retrieval,
                                   quoted, correct))
    return out


def case_record(qid: str, role: str, answerable: bool, kind: str, found: bool, retrieval, quoted: QuoteSignals,
                correct: bool, domain: str = LAWS) -> dict:
    """One case as the fits and `outcomes` read it, whichever question set it comes from."""
    return {"qid": qid, "role": role, "answerable": answerable, "kind": kind, "domain": domain, "found": found,
            "features": abstention_features(retrieval), "retrieval": retrieval, "quote_signals": quoted,
            "quote_correct": correct}


def quote_check(question: GoldQuestion, retrieval, embedder) -> tuple[QuoteSignals, bool]:
    """What the extractive answer would quote from this retrieval: the quoter's signals, and whether
    the quote carries every key fact (the gold lab's own scoring)."""
    choice = choose_quote(question.question, retrieval.sources, embedder, retrieval.query_vector)
    if not choice.passages:
        return choice.signals(), False
    text = quote_passages(list(choice.passages), retrieval.sources)
    return choice.signals(), question.answerable and gold_outcome(question, text, STATUS_ANSWERED)[0] == "correct"


def collect_tquad(settings: Settings, embedder, splits: tuple[str, ...], *, k: int, mode: str,
                  windows: bool) -> dict[str, list[dict]]:
    """TQuAD cases per question split ("train", "dev"), asked as the answer evaluation asks them
    (`eval.answers`): `sample_groups` of the split's questions, the answerable ones over the whole lab corpus, the unanswerable
    ones with their own article withdrawn; the retrieval as the chat runs it (role admin of the
    corpus's namespace), the quote the extractive answer would give, scored by `score_answer`."""
    from eval.answers import sample_groups, score_answer
    from eval.relevance import relevance
    from eval.retrievers import make_retriever
    from eval.sweep import make_workspace
    from ragcore.answer import without_lead

    ws = make_workspace(settings, embedder_factory=lambda spec: embedder)
    production = make_retriever("production")
    production.namespace = lambda size: TQUAD_NAMESPACE
    db = production._open(ws, settings.chunk_size)
    out: dict[str, list[dict]] = {}
    try:
        index = production.chunk_index(db, ws, settings.chunk_size)
        for split in splits:
            pool = ws.corpus.questions(split)
            out[split] = []
            for group, picked in sample_groups(pool, TQUAD_ANSWERABLE, TQUAD_UNANSWERABLE).items():
                questions = [pool[i] for i in picked]
                answerable = group == "answerable"
                for q, relevant in zip(questions, relevance(ws.chunks(settings.chunk_size), questions), strict=True):
                    if answerable:
                        retrieval = retrieve(db, embedder, q.question, "admin", k=k, mode=mode, windows=windows)
                    else:
                        with production.withdrawn(db, ws, settings.chunk_size, q.article, index):
                            retrieval = retrieve(db, embedder, q.question, "admin", k=k, mode=mode, windows=windows)
                    choice = choose_quote(q.question, retrieval.sources, embedder, retrieval.query_vector)
                    text = without_lead(quote_passages(list(choice.passages), retrieval.sources)) if choice.passages else ""
                    correct = answerable and bool(text) and score_answer(q.answer, text, [], [], "answer").correct
                    found = bool({index.get(s.chunk_id) for s in retrieval.sources} & set(relevant))
                    out[split].append(case_record(f"{group}:{q.qid}", "admin", answerable,
                                                  TQUAD if answerable else f"unanswerable:{TQUAD}", found, retrieval,
                                                  choice.signals(), correct, TQUAD))
    finally:
        dbmod.drop_namespace(db, TQUAD_NAMESPACE)
        db.close()
        ws.close()
    return out


def _domain(case: dict) -> str:
    return case.get("domain", LAWS)


def _limit(limits: float | dict[str, float], domain: str) -> float:
    """The share of a domain's unanswerable train cases that may be answered."""
    return limits if isinstance(limits, float | int) else limits[domain]


def _domain_weights(cases: list[dict]) -> np.ndarray:
    """1 / the number of its domain's cases: each domain weighs the same, however many it has."""
    sizes: dict[str, int] = {}
    for case in cases:
        sizes[_domain(case)] = sizes.get(_domain(case), 0) + 1
    return np.array([1.0 / sizes[_domain(c)] for c in cases])


def _matrix(cases: list[dict]) -> np.ndarray:
    return np.array([[c["features"][n] for n in ABSTENTION_FEATURE_NAMES] for c in cases], dtype=float)


def fit(train: list[dict], max_answered_unanswerable: float | dict[str, float], max_refused_answerable: float,
        measured: str) -> AbstentionModel:
    """The gate's logistic model (each domain weighing the same) and its cuts, each domain's
    limits held: `max_answered_unanswerable` (one share, or one per domain) and `max_refused_answerable`."""
    from sklearn.linear_model import LogisticRegression

    x = _matrix(train)
    y = np.array([c["answerable"] for c in train], dtype=int)
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales == 0] = 1.0
    weights = _domain_weights(train)
    model = LogisticRegression(C=1.0, max_iter=1000).fit((x - means) / scales, y, sample_weight=weights / weights.mean())
    probe = AbstentionModel(ABSTENTION_FEATURE_NAMES, tuple(float(c) for c in model.coef_[0]),
                            float(model.intercept_[0]), tuple(map(float, means)), tuple(map(float, scales)),
                            1.0, 0.0, measured)
    p = np.array([probe.probability(c["features"]) for c in train])
    domains = np.array([_domain(c) for c in train])
    answer_cuts, closest_cuts = [], []
    for domain in sorted(set(domains)):
        unanswerable, answerable = np.sort(p[(y == 0) & (domains == domain)]), np.sort(p[(y == 1) & (domains == domain)])
        # answer_at: above all but the allowed share of the domain's unanswerable train cases.
        allowed = int(np.floor(_limit(max_answered_unanswerable, domain) * unanswerable.size))
        answer_cuts.append(float(unanswerable[unanswerable.size - allowed - 1]) + 1e-9 if unanswerable.size else 0.5)
        # closest_at: below all but the allowed share of the domain's answerable train cases.
        allowed = int(np.floor(max_refused_answerable * answerable.size))
        closest_cuts.append(float(answerable[allowed]) - 1e-9 if answerable.size else 0.0)
    answer_at = max(answer_cuts)
    closest_at = min(min(closest_cuts), answer_at)
    return AbstentionModel(probe.names, probe.coefficients, probe.intercept, probe.means, probe.scales,
                           answer_at, closest_at, measured)


def _quote_matrix(cases: list[dict], gate_probabilities: np.ndarray) -> np.ndarray:
    rows = [quote_features(float(p), c["features"], c["quote_signals"])
            for c, p in zip(cases, gate_probabilities, strict=True)]
    return np.array([[row[n] for n in QUOTE_FEATURE_NAMES] for row in rows], dtype=float)


def fit_quote_check(train: list[dict], gate: AbstentionModel, max_answered_unanswerable: float | dict[str, float]
                    ) -> AbstentionModel:
    """The quote check and the answer cut together, on the train half.

    The check: a logistic regression of "the quote carries every key fact" (an unanswerable case's
    quote never does) over `QUOTE_FEATURE_NAMES`, on the cases the gate does not refuse. The cuts:
    the check's `answer_at` (from `closest_at` up to the gate's own) and its `at`, the pair with the
    most right minus wrong quotes among the train cases it answers — a wrong quote costs what a
    right one gains, since the closest passages are there for both — while answering at most
    `max_answered_unanswerable` of the unanswerable ones (per domain; a domain's right and wrong
    quotes count by its share of the cases, so each domain counts once). The cuts are chosen on out-of-fold
    probabilities (5 folds grouped by question), so the check is not judged on the cases it was
    fitted on. Ties: the lower answer cut, then the lower quote cut (answer more)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    p_all = np.array([gate.probability(c["features"]) for c in train])
    not_refused = p_all >= gate.closest_at
    pool = [c for c, keep in zip(train, not_refused, strict=True) if keep]
    p = p_all[not_refused]
    x = _quote_matrix(pool, p)
    y = np.array([bool(c["answerable"] and c["quote_correct"]) for c in pool], dtype=int)
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales == 0] = 1.0
    z = (x - means) / scales
    weights = _domain_weights(train)[not_refused]  # by the domain's size in train, not in the pool

    def fitted(rows: np.ndarray) -> tuple[np.ndarray, float]:
        """Coefficients and intercept; with one class only, a constant at its (clipped) log-odds."""
        if len(set(y[rows])) < 2:
            rate = min(max(float(y[rows].mean()), 1e-6), 1 - 1e-6)
            return np.zeros(z.shape[1]), float(np.log(rate / (1 - rate)))
        w = weights[rows]
        model = LogisticRegression(C=1.0, max_iter=1000).fit(z[rows], y[rows], sample_weight=w / w.mean())
        return model.coef_[0], float(model.intercept_[0])

    def predicted(weights: tuple[np.ndarray, float], rows: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(z[rows] @ weights[0] + weights[1])))

    out_of_fold = np.zeros(len(pool))
    groups = [c["qid"] for c in pool]
    for fit_rows, held_rows in GroupKFold(n_splits=min(5, len(set(groups)))).split(z, y, groups):
        out_of_fold[held_rows] = predicted(fitted(fit_rows), held_rows)
    coefficients, intercept = fitted(np.arange(len(pool)))
    domains = np.array([_domain(c) for c in pool])
    allowed = {d: int(np.floor(_limit(max_answered_unanswerable, d) * sum(
        not c["answerable"] and _domain(c) == d for c in train))) for d in set(domains)}
    unanswerable = np.array([not c["answerable"] for c in pool])
    right = y.astype(bool)
    signed = np.where(right, weights, -weights)  # a right quote gains its weight, any other loses it
    best = (gate.answer_at, float(np.nextafter(out_of_fold.max(), np.inf)), 0.0)  # no quote at all: gain 0
    answer_cuts = sorted({float(gate.closest_at), float(gate.answer_at), *map(float, p[p <= gate.answer_at])})
    quote_cuts = sorted({0.0, *map(float, out_of_fold)})
    for answer_at in answer_cuts:
        past_gate = p >= answer_at
        for quote_at in quote_cuts:
            answered = past_gate & (out_of_fold >= quote_at)
            if any(int((answered & unanswerable & (domains == d)).sum()) > n for d, n in allowed.items()):
                continue
            gain = float(signed[answered].sum())
            if gain > best[2] + 1e-12:
                best = (answer_at, quote_at, gain)
    check = QuoteCheck(QUOTE_FEATURE_NAMES, tuple(float(c) for c in coefficients), intercept,
                       tuple(map(float, means)), tuple(map(float, scales)), best[1], best[0])
    return dataclasses.replace(gate, quote_check=check)  # the gate's own cut stays for a language model


def final_outcome(case: dict, model: AbstentionModel | None, threshold) -> str:
    """The outcome the chat gives with the extractive quoter: the gate's, then the quote check."""
    decision = decide(case["retrieval"], model, threshold, quoting=True)
    if decision.outcome == ANSWER and model is not None and decision.probability is not None:
        q = model.quote_probability(decision.probability, decision.signals, case["quote_signals"])
        if quote_held_back(q, model.quote_at):
            return CLOSEST
    return decision.outcome


def quote_check_auc(cases: list[dict], model: AbstentionModel) -> float | None:
    """ROC AUC of the quote check's probability, right quotes against the rest, over the cases the
    gate does not refuse (how well it tells them apart, whatever the cut)."""
    from sklearn.metrics import roc_auc_score

    if model.quote_check is None:
        return None
    q, right = [], []
    for case in cases:
        p = model.probability(case["features"])
        if p < model.closest_at:
            continue
        q.append(model.quote_probability(p, case["features"], case["quote_signals"]))
        right.append(bool(case["answerable"] and case["quote_correct"]))
    return round(float(roc_auc_score(right, q)), 4) if 0 < sum(right) < len(right) else None


def outcomes(cases: list[dict], model: AbstentionModel | None, threshold) -> dict:
    """Shares of each outcome by kind, and the headline rates the issue's targets name."""
    decided = [final_outcome(c, model, threshold) for c in cases]
    by_kind: dict[str, dict[str, int]] = {}
    for case, outcome in zip(cases, decided, strict=True):
        counts = by_kind.setdefault(case["kind"].split(":")[0] if case["answerable"] else case["kind"], {})
        counts[outcome] = counts.get(outcome, 0) + 1
    answerable = [o for c, o in zip(cases, decided, strict=True) if c["answerable"]]
    unanswerable = [o for c, o in zip(cases, decided, strict=True) if not c["answerable"]]
    offtopic = [o for c, o in zip(cases, decided, strict=True) if c["kind"] == "unanswerable:konu dışı"]
    found_answered = [c["found"] for c, o in zip(cases, decided, strict=True) if c["answerable"] and o == ANSWER]

    def share(values: list[str], which: str) -> float | None:
        return round(sum(v == which for v in values) / len(values), 4) if values else None

    quoted_right = [o == ANSWER and c["quote_correct"] for c, o in zip(cases, decided, strict=True) if c["answerable"]]
    quoted_wrong = [o == ANSWER and not c["quote_correct"] for c, o in zip(cases, decided, strict=True)
                    if c["answerable"]]
    return {
        "cases": len(cases),
        "answerable_refused": share(answerable, REFUSED), "answerable_closest": share(answerable, CLOSEST),
        "answerable_answered": share(answerable, ANSWER),
        "answerable_quoted_right": round(sum(quoted_right) / len(quoted_right), 4) if quoted_right else None,
        "answerable_quoted_wrong": round(sum(quoted_wrong) / len(quoted_wrong), 4) if quoted_wrong else None,
        "answered_with_right_source_in_top_k": round(sum(found_answered) / len(found_answered), 4)
        if found_answered else None,
        "unanswerable_answered": share(unanswerable, ANSWER), "unanswerable_closest": share(unanswerable, CLOSEST),
        "unanswerable_refused": share(unanswerable, REFUSED),
        "offtopic_refused": share(offtopic, REFUSED),
        "by_kind": by_kind,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--write", action="store_true", help="record the model in ragcore/measured/abstention.json")
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    parser.add_argument("--max-answered-unanswerable", type=float, default=MAX_ANSWERED_UNANSWERABLE)
    parser.add_argument("--max-refused-answerable", type=float, default=MAX_REFUSED_ANSWERABLE)
    parser.add_argument("--max-answered-unanswerable-tquad", type=float, default=MAX_ANSWERED_UNANSWERABLE_TQUAD)
    parser.add_argument("--tquad", action=argparse.BooleanOptionalAction, default=True,
                        help="report on TQuAD train and dev samples too (--no-tquad: the law questions alone)")
    parser.add_argument("--fit-tquad", action="store_true",
                        help="fit on the TQuAD train sample too, as a second domain (measured, not adopted)")
    parser.add_argument("--quote-check", action=argparse.BooleanOptionalAction, default=True,
                        help="also fit the quote check an extractive answer needs (the e5 entry has one; "
                             "--no-quote-check fits the gate alone)")


def run(args: argparse.Namespace, settings: Settings) -> int:
    started = time.time()
    with dbmod.open_database(settings) as public:
        embedder = cached_embedder(settings, public)
        with sample_laws(settings, public, embedder, NAMESPACE) as (index, documents):
            mode = resolve_mode(settings, embedder)
            k = settings.top_k
            halves = everyday_split()
            paraphrase = parse_jsonl(SAMPLE_FILE.read_text(encoding="utf-8"))
            windows = settings.dense_windows
            cases = {name: collect(index, embedder, qs, documents, k=k, mode=mode, windows=windows) for name, qs in
                     ((TRAIN, halves[TRAIN]), (DEV, halves[DEV]), ("paraphrase", paraphrase))}
        if args.tquad or args.fit_tquad:
            tquad = collect_tquad(settings, embedder, ("train", "dev"), k=k, mode=mode, windows=windows)
            cases.update({"tquad_train": tquad["train"], "tquad_dev": tquad["dev"]})
    run = provenance()  # before --write touches ragcore/measured: the card describes the code that ran
    commit = run["code"]["commit"]
    train = cases[TRAIN] + (cases["tquad_train"] if args.fit_tquad else [])
    on_tquad = f" + TQuAD train ({len(cases['tquad_train'])} cases)" if args.fit_tquad else ""
    measured_on = (f"everyday dev set train half ({len(cases[TRAIN])} cases){on_tquad}, {embedder.name}, mode {mode}, "
                   f"k {k}, sentence windows {'on' if windows else 'off'}, commit {commit}")
    limits = {LAWS: args.max_answered_unanswerable, TQUAD: args.max_answered_unanswerable_tquad}
    model = fit(train, limits, args.max_refused_answerable, measured_on)
    threshold = threshold_for(embedder.name, mode, settings)
    without_check = model
    if args.quote_check:
        model = fit_quote_check(train, model, limits)
    report = {
        "run": run, "script": "python -m eval fit abstention", "embedder": embedder.name, "mode": mode, "k": k, "windows": windows,
        "limits": {"max_answered_unanswerable": limits, "max_refused_answerable": args.max_refused_answerable},
        "seconds": round(time.time() - started, 1),
        "model": model.as_entry(),
        "results": {name: {"three_outcomes": outcomes(cs, model, threshold),
                           "quote_check_auc": quote_check_auc(cs, model),
                           "without_quote_check": outcomes(cs, without_check, threshold),
                           "single_threshold_before": outcomes(cs, None, threshold)} for name, cs in cases.items()},
    }
    if args.write:
        entry = {**model.as_entry(), "measured": measured_on, "when": time.strftime("%Y-%m-%d"),
                 "on": ("eval/gold/everyday_laws.jsonl train half" + (" and TQuAD train" if args.fit_tquad else "")
                        + "; reported on its dev half, paraphrase_laws" + (" and TQuAD dev" if args.tquad else ""))}
        write_measured(ABSTENTION_FILE, embedder.name, entry)
    if args.out:
        write_card(args.out, report)
    print(json.dumps(report, ensure_ascii=False, indent=2))
    return 0
