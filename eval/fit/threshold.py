"""Calibrate the refusal threshold for the configured embedder: `python -m eval fit threshold`.

1. Modes on the laws: Laws 6331 (isg, personel) and 4857 (ik, personel) ingested as an upload
   puts them (`ragcore.documents.ingest.ingest_pdf`); the hand-written questions of
   eval/gold/law_questions.json asked by each role that may read the answer; hit = the right
   article on one of the right pages in the top 5.
2. Refusal: the evidence signals (ragcore.retrieval.hybrid.Evidence, from the app's retrieval SQL) of
   answerable questions versus unanswerable ones — off-topic company questions (roles isg, ik,
   personel), law questions asked by a role that cannot read that law, and TQuAD dev history
   questions. The cases are split in two, stratified by kind (seed 0): the *tuning* half picks
   the signal (highest AUC) and the threshold (the highest cut that still answers at least
   `--min-answered` of the tuning half's answerable cases: we prefer answering, because a weak
   but permitted context still goes to the model, whose own refusal is the second line); the
   *reporting* half says how that threshold does on cases it was not chosen on.

Prints a JSON report (and writes it with --out); with `--write` the signal and value become the
embedder's entry in ragcore/measured/thresholds.json. Runs on the configured embedder
(EMBED_BACKEND=e5 for the embedded e5, use, ollama), in throw-away namespaces of the app's
database, whose embedding cache makes reruns cheap:

    EMBED_BACKEND=e5 python -m eval fit threshold --write

The fusion mode and dense weight are tuned elsewhere, by `python -m eval fit retrieval`.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import numpy as np

from eval.fit.setup import cached_embedder
from eval.metrics import auc
from eval.report import write_card
from ragcore import store as dbmod
from ragcore.core import Settings
from ragcore.documents import ingest_pdf
from ragcore.retrieval import MEASURED_DIR, MODES, SIGNALS, THRESHOLDS_FILE, retrieve, write_measured

HISTORY_QUESTIONS = 150
SPLIT_SEED = 0
MIN_ANSWERED = 0.95
LAW_QUESTIONS = Path(__file__).resolve().parent.parent / "gold" / "law_questions.json"


def _fresh(url: str, namespace: str) -> dbmod.Database:
    db = dbmod.Database(url, namespace)
    dbmod.drop_namespace(db, namespace)
    db.close()
    db = dbmod.Database(url, namespace)
    dbmod.migrate(db)
    return db


# ----------------------------------------------------------------------------- laws


def load_laws(db: dbmod.Database, settings: Settings, embedder, spec: dict) -> None:
    """The laws go in as an upload puts them (the same ingest the app runs)."""
    for filename, meta in spec["documents"].items():
        data = (settings.documents_dir / filename).read_bytes()
        ingest_pdf(db, settings, embedder, data, filename=filename, roles=meta["roles"])


def _readers(filename: str, spec: dict) -> list[str]:
    return [r for r in spec["documents"][filename]["roles"]]


def law_cases(spec: dict, settings: Settings, history: int = HISTORY_QUESTIONS, law_questions: int | None = None
              ) -> tuple[list[tuple], list[tuple]]:
    """(question, role, expected) answerable cases and (question, role, kind) unanswerable ones."""
    from eval.tquad import load_corpus

    answerable, unanswerable = [], []
    all_roles = ("isg", "ik", "personel")
    for item in spec["answerable"][:law_questions]:
        readers = _readers(item["document"], spec)
        for role in all_roles:
            if role in readers:
                answerable.append((item["question"], role, item))
            else:
                unanswerable.append((item["question"], role, "other-law"))
    for question in spec["offtopic"][:law_questions]:
        for role in all_roles:
            unanswerable.append((question, role, "offtopic"))
    if history:
        corpus = load_corpus(settings.tquad_dir)
        rng = random.Random(0)
        for q in rng.sample(corpus.dev_questions, history):
            unanswerable.append((q.question, "personel", "tquad"))
    return answerable, unanswerable


def _is_hit(source, item: dict) -> bool:
    pages = set(range(source.page_start, source.page_end + 1))
    return source.filename == item["document"] and source.article == item["article"] and bool(pages & set(item["pages"]))


def split(kinds: list[str], seed: int = SPLIT_SEED) -> list[str]:
    """"tuning" or "reporting" per case: each kind's cases shuffled (seeded), the first half
    (rounded up) tunes, the rest reports."""
    out = [""] * len(kinds)
    rng = random.Random(seed)
    for kind in sorted(set(kinds)):
        members = [i for i, k in enumerate(kinds) if k == kind]
        rng.shuffle(members)
        half = (len(members) + 1) // 2
        for n, i in enumerate(members):
            out[i] = "tuning" if n < half else "reporting"
    return out


def _cuts(pos: list[float], neg: list[float]) -> list[float]:
    values = sorted(set(pos) | set(neg))
    return [(a + b) / 2 for a, b in zip(values, values[1:], strict=False)] or values


def rates(pos: list[float], neg: list[float], cut: float) -> dict:
    return {"answerable_answered": round(sum(p >= cut for p in pos) / len(pos), 3) if pos else None,
            "unanswerable_refused": round(sum(n < cut for n in neg) / len(neg), 3) if neg else None}


def best_threshold(pos: list[float], neg: list[float]) -> dict:
    """The cut (midpoint between neighbouring values) with the highest balanced accuracy."""
    best = None
    for cut in _cuts(pos, neg):
        answered = sum(p >= cut for p in pos) / len(pos)
        refused = sum(n < cut for n in neg) / len(neg)
        key = (answered + refused, answered)
        if best is None or key > best[0]:
            best = (key, cut)
    return {"threshold": round(best[1], 4), **rates(pos, neg, best[1])}


def answering_threshold(pos: list[float], neg: list[float], min_answered: float = MIN_ANSWERED) -> dict:
    """The highest cut that answers at least `min_answered` of the answerable cases (the most
    refusals that policy allows)."""
    ok = [cut for cut in _cuts(pos, neg) if sum(p >= cut for p in pos) / len(pos) >= min_answered]
    cut = math.floor((max(ok) if ok else min(pos)) * 1e4) / 1e4  # rounded down: never refuses more
    return {"threshold": cut, **rates(pos, neg, cut)}


def laws(url: str, settings: Settings, embedder, *, history: int = HISTORY_QUESTIONS,
         law_questions: int | None = None) -> dict:
    """Mode hit rates on the laws and the evidence of every case (the modes' first, rrf)."""
    spec = json.loads(LAW_QUESTIONS.read_text(encoding="utf-8"))
    db = _fresh(url, "calibration_laws")
    try:
        dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
        load_laws(db, settings, embedder, spec)
        answerable, unanswerable = law_cases(spec, settings, history, law_questions)
        report: dict = {"answerable": len(answerable), "unanswerable": len(unanswerable), "modes": {}}
        cases = []
        for mode in MODES:
            hits1 = hits5 = 0
            for question, role, item in answerable:
                result = retrieve(db, embedder, question, role, k=5, mode=mode, windows=settings.dense_windows)
                flags = [_is_hit(s, item) for s in result.sources]
                hits1 += bool(flags[:1] and flags[0])
                hits5 += any(flags)
                if mode == MODES[0]:
                    cases.append({"question": question, "role": role, "kind": "answerable",
                                  "evidence": result.evidence})
            report["modes"][mode] = {"hit@1": round(hits1 / len(answerable), 3),
                                     "hit@5": round(hits5 / len(answerable), 3)}
        for question, role, kind in unanswerable:
            cases.append({"question": question, "role": role, "kind": kind,
                          "evidence": retrieve(db, embedder, question, role, k=5, mode=MODES[0],
                                                       windows=settings.dense_windows).evidence})
        report["cases"] = cases
        return report
    finally:
        dbmod.drop_namespace(db, "calibration_laws")
        db.close()


def calibrate(cases: list[dict], min_answered: float = MIN_ANSWERED, seed: int = SPLIT_SEED) -> dict:
    """Signal and threshold from the tuning half, their figures on the reporting half."""
    halves = split([c["kind"] for c in cases], seed)
    for case, half in zip(cases, halves, strict=True):
        case["split"] = half
    signals = {}
    for name, fn in SIGNALS.items():
        entry = {}
        for half in ("tuning", "reporting"):
            pos = [fn(c["evidence"]) for c in cases if c["split"] == half and c["kind"] == "answerable"]
            neg = [fn(c["evidence"]) for c in cases if c["split"] == half and c["kind"] != "answerable"]
            entry[half] = {"n_answerable": len(pos), "n_unanswerable": len(neg), "auc": round(auc(pos, neg), 3),
                           "answerable_median": round(float(np.median(pos)), 3),
                           "unanswerable_median": round(float(np.median(neg)), 3)}
        tune_pos = [fn(c["evidence"]) for c in cases if c["split"] == "tuning" and c["kind"] == "answerable"]
        tune_neg = [fn(c["evidence"]) for c in cases if c["split"] == "tuning" and c["kind"] != "answerable"]
        entry["tuning"]["balanced_optimum"] = best_threshold(tune_pos, tune_neg)
        chosen = answering_threshold(tune_pos, tune_neg, min_answered)
        entry["tuning"]["chosen"] = chosen
        cut = chosen["threshold"]
        rep = [c for c in cases if c["split"] == "reporting"]
        entry["reporting"].update(rates([fn(c["evidence"]) for c in rep if c["kind"] == "answerable"],
                                        [fn(c["evidence"]) for c in rep if c["kind"] != "answerable"], cut))
        entry["reporting"]["by_kind_refused"] = {
            kind: round(sum(fn(c["evidence"]) < cut for c in rep if c["kind"] == kind)
                        / max(1, sum(c["kind"] == kind for c in rep)), 3)
            for kind in sorted({c["kind"] for c in rep} - {"answerable"})}
        signals[name] = entry
    best = max(signals, key=lambda n: (signals[n]["tuning"]["auc"], n == "mean"))
    return {"signal": best, "value": signals[best]["tuning"]["chosen"]["threshold"], "signals": signals,
            "min_answered": min_answered, "split_seed": seed}


def measured_entry(embedder_name: str, result: dict, n_answerable: int, n_unanswerable: int) -> dict:
    """The thresholds.json entry: the values and how they were measured."""
    from datetime import date

    s = result["signals"][result["signal"]]
    t, r = s["tuning"], s["reporting"]
    return {
        "signal": result["signal"],
        "value": result["value"],
        "measured": (f"laws 6331+4857, {n_answerable} answerable vs {n_unanswerable} unanswerable cases split by kind "
                     f"(seed {result['split_seed']}); tuning half ({t['n_answerable']}/{t['n_unanswerable']}): "
                     f"signal by AUC ({t['auc']}), highest cut answering >= {result['min_answered']:.0%}; "
                     f"reporting half ({r['n_answerable']}/{r['n_unanswerable']}): AUC {r['auc']}, "
                     f"{r['answerable_answered']:.1%} answered, {r['unanswerable_refused']:.1%} refused"),
        "when": date.today().isoformat(),
        "on": f"Laws 6331 + 4857, {embedder_name}, default chunks (python -m eval fit threshold)",
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path)
    parser.add_argument("--min-answered", type=float, default=MIN_ANSWERED,
                        help="share of the tuning half's answerable cases the threshold must answer")
    parser.add_argument("--history-questions", type=int, default=HISTORY_QUESTIONS,
                        help="TQuAD dev history questions as unanswerable cases")
    parser.add_argument("--law-questions", type=int, help="first N law and off-topic questions only (quick look)")
    parser.add_argument("--write", action="store_true", help="record the entry in thresholds.json")
    parser.add_argument("--measured-dir", type=Path, help="folder of the measured files (default ragcore/measured)")


def run(args: argparse.Namespace, settings: Settings) -> int:
    partial = args.law_questions is not None or args.history_questions != HISTORY_QUESTIONS
    if args.write and partial and args.measured_dir is None:
        raise ValueError("a partial run (--law-questions/--history-questions) may only --write into --measured-dir")
    # The app's database (embedded under DATA_DIR unless DATABASE_URL is set): its embedding cache
    # makes reruns cheap; the work happens in a throw-away namespace, dropped at the end.
    url = dbmod.database_url(settings)
    cache_db = dbmod.open_database(settings)
    embedder = cached_embedder(settings, cache_db)
    started = time.perf_counter()
    try:
        law = laws(url, settings, embedder, history=args.history_questions, law_questions=args.law_questions)
    finally:
        cache_db.close()
    result = calibrate(law["cases"], args.min_answered)
    entry = measured_entry(embedder.name, result, law["answerable"], law["unanswerable"])
    if partial:
        entry["on"] += (f", partial run: {args.law_questions or 'all'} law questions, "
                        f"{args.history_questions} history questions")
    law["cases"] = [{**{k: v for k, v in c.items() if k != "evidence"}, **c["evidence"].as_dict()}
                    for c in law["cases"]]
    report = {"embedder": embedder.name, "laws": law, "calibration": result, "entry": entry,
              "seconds": round(time.perf_counter() - started, 1), "embedding_cache": embedder.stats()}
    if args.write:
        path = write_measured(THRESHOLDS_FILE, embedder.name, entry,
                                           args.measured_dir or MEASURED_DIR)
        report["written"] = str(path)
    print(json.dumps(report, ensure_ascii=False, indent=1))
    if args.out:
        write_card(args.out, report)  # the report with its run card (commit, dirty, machine, date, command)
    return 0
