"""Fit the three-outcome gate for the configured embedder: `python scripts/calibrate_abstention.py`.

1. The three sample laws go in as an upload puts them (`eval.lab_corpus`, the roles of
   eval/gold/paraphrase_laws.corpus.json) in a namespace of the app's database.
2. Every (question, asking role) case of the everyday development set
   (eval/gold/everyday_laws.jsonl) is retrieved through the app (`ragcore.retrieval.retrieve`,
   the mode and k the chat uses); `ragcore.retrieval.abstention.features` reads its signals.
3. On the TRAIN half only (eval.gold_split, seed 0): a logistic regression (scikit-learn, L2,
   standardised features) of answerable vs unanswerable; `answer_at` is the lowest cut that
   answers at most `--max-answered-unanswerable` of the train half's unanswerable cases;
   `closest_at` the highest cut that refuses at most `--max-refused-answerable` of its answerable
   cases; with `--quote-check`, `quote_at` (`fit_quote_cut`) the quoter confidence from which the cases the gate
   answers were quoted right more often than wrong: below it the chat shows the closest
   passages rather than a quote.
4. Reported, never tuned on: the dev half and the paraphrase set (eval/gold/paraphrase_laws.jsonl).

Prints a JSON report (written with --out); with `--write` the model becomes the embedder's entry
in ragcore/measured/abstention.json. The embedding cache makes reruns cheap:

    EMBED_BACKEND=e5 python scripts/calibrate_abstention.py --write --out docs/eval_runs/abstention-e5.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from eval.gold_run import index_chunks
from eval.gold_run import outcome as gold_outcome
from eval.gold_split import DEV, TRAIN, everyday_split, kind_of
from eval.gold_stats import relevant_chunks
from eval.goldset import GoldQuestion, parse_jsonl
from eval.goldstore import SAMPLE_CORPUS, SAMPLE_FILE
from eval.lab_corpus import drop_index, ingest_corpus, open_index, sample_corpus
from eval.report import provenance, write_card
from ragcore import store as dbmod
from ragcore.answer.extractive import answer_passages, quote
from ragcore.core import STATUS_ANSWERED, Settings
from ragcore.retrieval import (
    ANSWER,
    CLOSEST,
    REFUSED,
    AbstentionModel,
    abstention,
    decide,
    measurements,
    quote_held_back,
    resolve_mode,
    retrieve,
    threshold_for,
)

NAMESPACE = "calibrate_abstention"
MAX_ANSWERED_UNANSWERABLE = 0.03
MAX_REFUSED_ANSWERABLE = 0.05


def _embedder(settings: Settings, cache_db: dbmod.Database):
    from ragcore.embed import CachedEmbedder, make_embedder

    class LabCachedEmbedder(CachedEmbedder):
        """Keeps the quoter's sentence vectors in the lab's cache too. The app never stores them (a
        user's question chose them); here the questions are the fixed gold sets, and the same
        article sentences come back for many questions and every rerun."""

        def embed_passages(self, texts, *, write: bool = True):
            return super().embed_passages(texts, write=True)

    return LabCachedEmbedder(make_embedder(settings), cache_db, cache_questions=True)


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
            confidence, correct = quote_check(question, retrieval, embedder)
            out.append({"qid": question.id, "role": role, "answerable": question.answerable, "kind": kind_of(question),
                        "found": found, "features": abstention.features(retrieval), "retrieval": retrieval,
                        "quote_confidence": confidence, "quote_correct": correct})
    return out


def quote_check(question: GoldQuestion, retrieval, embedder) -> tuple[float, bool]:
    """What the extractive answer would quote from this retrieval: the quoter's confidence in its
    best sentence, and whether the quote carries every key fact (the gold lab's own scoring)."""
    passages = answer_passages(question.question, retrieval.sources, embedder, retrieval.query_vector)
    if not passages:
        return 0.0, False
    text = quote(passages, retrieval.sources)
    return passages[0].score, question.answerable and gold_outcome(question, text, STATUS_ANSWERED)[0] == "correct"


def _matrix(cases: list[dict]) -> np.ndarray:
    return np.array([[c["features"][n] for n in abstention.FEATURE_NAMES] for c in cases], dtype=float)


def fit(train: list[dict], max_answered_unanswerable: float, max_refused_answerable: float, measured: str
        ) -> AbstentionModel:
    from sklearn.linear_model import LogisticRegression

    x = _matrix(train)
    y = np.array([c["answerable"] for c in train], dtype=int)
    means, scales = x.mean(axis=0), x.std(axis=0)
    scales[scales == 0] = 1.0
    model = LogisticRegression(C=1.0, max_iter=1000).fit((x - means) / scales, y)
    probe = AbstentionModel(abstention.FEATURE_NAMES, tuple(float(c) for c in model.coef_[0]),
                            float(model.intercept_[0]), tuple(map(float, means)), tuple(map(float, scales)),
                            1.0, 0.0, measured)
    p = np.array([probe.probability(c["features"]) for c in train])
    unanswerable, answerable = np.sort(p[y == 0]), np.sort(p[y == 1])
    # answer_at: above all but the allowed share of unanswerable train cases.
    allowed = int(np.floor(max_answered_unanswerable * unanswerable.size))
    answer_at = float(unanswerable[unanswerable.size - allowed - 1]) + 1e-9 if unanswerable.size else 0.5
    # closest_at: below all but the allowed share of answerable train cases.
    allowed = int(np.floor(max_refused_answerable * answerable.size))
    closest_at = float(answerable[allowed]) - 1e-9 if answerable.size else 0.0
    closest_at = min(closest_at, answer_at)
    return AbstentionModel(probe.names, probe.coefficients, probe.intercept, probe.means, probe.scales,
                           answer_at, closest_at, measured)


def fit_quote_cut(train: list[dict], model: AbstentionModel, threshold) -> float:
    """`quote_at`: the quoter confidence from which the train cases the gate answers were quoted
    right more often than wrong — the cut maximising (right quotes − wrong quotes) among the quoted
    ones, an unanswerable case's quote counting as wrong; on a tie the lower cut (quote more).
    A cut above every confidence (quote nothing) is allowed: a quoter wrong everywhere gets none."""
    answered = [c for c in train if decide(c["retrieval"], model, threshold).outcome == ANSWER]
    confidence = np.array([c["quote_confidence"] for c in answered], dtype=float)
    right = np.array([c["quote_correct"] for c in answered], dtype=bool)
    best_cut, best_gain = 0.0, int(right.sum()) - int((~right).sum())
    above_all = [float(np.nextafter(confidence.max(), np.inf))] if confidence.size else []  # quote none
    for cut in [*np.unique(confidence), *above_all]:
        kept = confidence >= cut
        gain = int(right[kept].sum()) - int((~right[kept]).sum())
        if gain > best_gain:
            best_cut, best_gain = float(cut), gain
    return best_cut


def final_outcome(case: dict, model: AbstentionModel | None, threshold) -> str:
    """The outcome the chat gives with the extractive quoter: the gate's, then the quote check."""
    decided = decide(case["retrieval"], model, threshold).outcome
    if decided == ANSWER and model is not None and quote_held_back(case["quote_confidence"], model.quote_at):
        return CLOSEST
    return decided


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the model in ragcore/measured/abstention.json")
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    parser.add_argument("--max-answered-unanswerable", type=float, default=MAX_ANSWERED_UNANSWERABLE)
    parser.add_argument("--max-refused-answerable", type=float, default=MAX_REFUSED_ANSWERABLE)
    # Off by default: fitted on the quoter's best-sentence confidence alone, the cut traded most
    # right quotes for fewer wrong ones on the dev half (docs/eval_runs notes, issue 20).
    parser.add_argument("--quote-check", action="store_true",
                        help="also fit quote_at, the quoter confidence an extractive answer needs")
    args = parser.parse_args(argv)

    settings = Settings.from_env()
    started = time.time()
    public = dbmod.open_database(settings)
    embedder = _embedder(settings, public)
    documents = sample_corpus(settings, SAMPLE_CORPUS)
    dbmod.drop_namespace(public, NAMESPACE)
    index = open_index(settings, NAMESPACE, settings.data_dir / "lab" / NAMESPACE,
                       embedder_spec=embedder.name, chunk_size=settings.chunk_size)
    try:
        ingest_corpus(index, embedder, documents)
        mode = resolve_mode(settings, embedder)
        k = settings.top_k
        halves = everyday_split()
        paraphrase = parse_jsonl(SAMPLE_FILE.read_text(encoding="utf-8"))
        windows = settings.dense_windows
        cases = {name: collect(index, embedder, qs, documents, k=k, mode=mode, windows=windows) for name, qs in
                 ((TRAIN, halves[TRAIN]), (DEV, halves[DEV]), ("paraphrase", paraphrase))}
        run = provenance()  # before --write touches ragcore/measured: the card describes the code that ran
        commit = run["code"]["commit"]
        measured_on = (f"everyday dev set train half ({len(cases[TRAIN])} cases), {embedder.name}, mode {mode}, "
                       f"k {k}, sentence windows {'on' if windows else 'off'}, commit {commit}")
        model = fit(cases[TRAIN], args.max_answered_unanswerable, args.max_refused_answerable, measured_on)
        threshold = threshold_for(embedder.name, mode, settings)
        without_check = model
        if args.quote_check:
            model = dataclasses.replace(model, quote_at=fit_quote_cut(cases[TRAIN], model, threshold))
        report = {
            "run": run, "script": "scripts/calibrate_abstention.py", "embedder": embedder.name, "mode": mode, "k": k, "windows": windows,
            "seconds": round(time.time() - started, 1),
            "model": model.as_entry(),
            "results": {name: {"three_outcomes": outcomes(cs, model, threshold),
                               "without_quote_check": outcomes(cs, without_check, threshold),
                               "single_threshold_before": outcomes(cs, None, threshold)} for name, cs in cases.items()},
        }
        if args.write:
            entry = {**model.as_entry(), "measured": measured_on, "when": time.strftime("%Y-%m-%d"),
                     "on": "eval/gold/everyday_laws.jsonl train half; reported on its dev half and paraphrase_laws"}
            measurements.write_measured(abstention.ABSTENTION_FILE, embedder.name, entry)
    finally:
        drop_index(index, public)
        public.close()
    if args.out:
        write_card(args.out, report)
    print(json.dumps(report, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
