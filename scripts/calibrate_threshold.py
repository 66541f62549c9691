"""Measure retrieval modes and calibrate the refusal threshold: `python scripts/calibrate_threshold.py`.

1. Modes on TQuAD (the evaluation lab's corpus: 697 articles, 1000-char chunks, 892 dev
   questions): Recall@5 and MRR@10 for dense, lexical, RRF and weighted fusion; the weighted
   mode's dense weight is tuned on 300 train questions and reported on dev.
2. Modes on the laws: Laws 6331 (isg, personel) and 4857 (ik, personel) ingested; the
   hand-written questions of scripts/law_questions.json asked by each role that may read
   the answer; hit = the right article on one of the right pages in the top 5.
3. Refusal: the evidence signals (ragcore.retrieval.Evidence) of answerable questions versus
   unanswerable ones — off-topic company questions (roles isg, ik, personel), law questions
   asked by a role that cannot read that law, and TQuAD dev history questions — with the
   separation (AUC) and the threshold that maximises balanced accuracy.

Prints a JSON report (and writes it with --out). Runs on the configured embedder
(EMBED_BACKEND: e5 without Ollama, EMBED_BACKEND=use for the USE, ollama for bge-m3), in
throw-away namespaces of the app's database, whose embedding cache makes reruns cheap.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.retrieval import bulk_insert  # noqa: E402
from ragcore import db as dbmod  # noqa: E402
from ragcore.calibration import SIGNALS  # noqa: E402
from ragcore.config import Settings  # noqa: E402
from ragcore.ingest import ingest_pdf  # noqa: E402
from ragcore.retrieval import MODES, retrieve  # noqa: E402

WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
HISTORY_QUESTIONS = 150


def _embedder(settings: Settings, cache_db: dbmod.Database):
    """The configured embedder behind the database's shared embedding cache."""
    from ragcore.embedding_cache import CachedEmbedder
    from ragcore.embeddings import make_embedder

    return CachedEmbedder(make_embedder(settings), cache_db)


def _fresh(url: str, namespace: str) -> dbmod.Database:
    db = dbmod.Database(url, namespace)
    dbmod.drop_namespace(db, namespace)
    db.close()
    db = dbmod.Database(url, namespace)
    dbmod.migrate(db)
    return db


# ----------------------------------------------------------------------------- TQuAD modes


def tquad_modes(url: str, settings: Settings, embedder) -> dict:
    from eval.tquad import chunk_corpus, load_corpus, sample_train_questions

    corpus = load_corpus(settings.tquad_dir)
    chunkset = chunk_corpus(corpus, 1000)
    db = _fresh(url, "calibration_tquad")
    try:
        dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
        vectors = embedder.embed_passages([c.text for c in chunkset.chunks])
        spans: dict[int, tuple[int, int, int]] = {}
        for article, indices in enumerate(chunkset.by_article):
            if not indices:
                continue
            rows = [(chunkset.chunks[i].text, 1, None) for i in indices]
            doc_id = bulk_insert(db, f"tquad-{article}", ["personel"], rows, vectors[indices])
            with db.connection() as conn:
                for cid, ordinal in conn.execute("SELECT id, ordinal FROM chunks WHERE document_id = %s", (doc_id,)):
                    c = chunkset.chunks[indices[ordinal]]
                    spans[cid] = (c.article, c.start, c.end)
        with db.connection() as conn:
            conn.execute("ANALYZE")

        def score(questions, mode: str, weight: float = 0.3) -> dict:
            recall, rr = [], []
            for q in questions:
                hits = retrieve(db, embedder, q.question, "personel", k=10, mode=mode, weight=weight).hits
                ranks = [r for r, h in enumerate(hits, 1)
                         if (s := spans[h.source.chunk_id])[0] == q.article and s[1] <= q.start and q.end <= s[2]]
                recall.append(1.0 if ranks and ranks[0] <= 5 else 0.0)
                rr.append(1.0 / ranks[0] if ranks else 0.0)
            return {"recall@5": round(float(np.mean(recall)), 3), "mrr@10": round(float(np.mean(rr)), 3),
                    "n": len(questions)}

        train = sample_train_questions(corpus, 300)
        tuning = {str(w): score(train, "weighted", w) for w in WEIGHTS}
        best_w = max(WEIGHTS, key=lambda w: (tuning[str(w)]["recall@5"], tuning[str(w)]["mrr@10"]))
        dev = corpus.dev_questions
        result = {mode: score(dev, mode, best_w) for mode in MODES}
        return {"chunks": len(chunkset), "weighted_tuning_train": tuning, "weighted_dense_weight": best_w,
                "dev": result}
    finally:
        dbmod.drop_namespace(db, "calibration_tquad")
        db.close()


# ----------------------------------------------------------------------------- laws


def load_laws(db: dbmod.Database, settings: Settings, embedder, spec: dict) -> None:
    """The laws go in as an upload puts them (the same ingest the app runs)."""
    for filename, meta in spec["documents"].items():
        data = (settings.documents_dir / filename).read_bytes()
        ingest_pdf(db, settings, embedder, data, filename=filename, roles=meta["roles"])


def _readers(filename: str, spec: dict) -> list[str]:
    return [r for r in spec["documents"][filename]["roles"]]


def law_cases(spec: dict, settings: Settings) -> tuple[list[tuple], list[tuple]]:
    """(question, role, expected) answerable cases and (question, role, kind) unanswerable ones."""
    from eval.tquad import load_corpus

    answerable, unanswerable = [], []
    all_roles = ("isg", "ik", "personel")
    for item in spec["answerable"]:
        readers = _readers(item["document"], spec)
        for role in all_roles:
            if role in readers:
                answerable.append((item["question"], role, item))
            else:
                unanswerable.append((item["question"], role, "other-law"))
    for question in spec["offtopic"]:
        for role in all_roles:
            unanswerable.append((question, role, "offtopic"))
    corpus = load_corpus(settings.tquad_dir)
    rng = random.Random(0)
    for q in rng.sample(corpus.dev_questions, HISTORY_QUESTIONS):
        unanswerable.append((q.question, "personel", "tquad"))
    return answerable, unanswerable


def _is_hit(source, item: dict) -> bool:
    pages = set(range(source.page_start, source.page_end + 1))
    return source.filename == item["document"] and source.article == item["article"] and bool(pages & set(item["pages"]))


def auc(pos: list[float], neg: list[float]) -> float:
    """Probability that a random answerable question scores above a random unanswerable one."""
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def best_threshold(pos: list[float], neg: list[float]) -> dict:
    """The cut (midpoint between neighbouring values) with the highest balanced accuracy."""
    values = sorted(set(pos) | set(neg))
    cuts = [(a + b) / 2 for a, b in zip(values, values[1:], strict=False)] or values
    best = None
    for cut in cuts:
        answered = sum(p >= cut for p in pos) / len(pos)
        refused = sum(n < cut for n in neg) / len(neg)
        key = (answered + refused, answered)
        if best is None or key > best[0]:
            best = (key, cut, answered, refused)
    _, cut, answered, refused = best
    return {"threshold": round(cut, 4), "answerable_answered": round(answered, 3),
            "unanswerable_refused": round(refused, 3)}


def laws(url: str, settings: Settings, embedder) -> dict:
    spec = json.loads((REPO / "scripts" / "law_questions.json").read_text(encoding="utf-8"))
    db = _fresh(url, "calibration_laws")
    try:
        dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
        load_laws(db, settings, embedder, spec)
        answerable, unanswerable = law_cases(spec, settings)
        report: dict = {"answerable": len(answerable), "unanswerable": len(unanswerable), "modes": {}}
        evidence_pos, evidence_neg = [], []
        for mode in MODES:
            hits1 = hits5 = 0
            for question, role, item in answerable:
                result = retrieve(db, embedder, question, role, k=5, mode=mode)
                flags = [_is_hit(s, item) for s in result.sources]
                hits1 += bool(flags[:1] and flags[0])
                hits5 += any(flags)
                if mode == MODES[0]:
                    evidence_pos.append(result.evidence)
            report["modes"][mode] = {"hit@1": round(hits1 / len(answerable), 3),
                                     "hit@5": round(hits5 / len(answerable), 3)}
        kinds: dict[str, list] = {}
        rows = [{"question": q, "role": r, "kind": "answerable", **e.as_dict()}
                for (q, r, _), e in zip(answerable, evidence_pos, strict=True)]
        for question, role, kind in unanswerable:
            ev = retrieve(db, embedder, question, role, k=5, mode=MODES[0]).evidence
            evidence_neg.append(ev)
            kinds.setdefault(kind, []).append(ev)
            rows.append({"question": question, "role": role, "kind": kind, **ev.as_dict()})
        report["per_question"] = rows
        report["signals"] = {}
        for name, fn in SIGNALS.items():
            pos = [fn(e) for e in evidence_pos]
            neg = [fn(e) for e in evidence_neg]
            entry = {"auc": round(auc(pos, neg), 3), **best_threshold(pos, neg),
                     "answerable_median": round(float(np.median(pos)), 3),
                     "answerable_p10": round(float(np.percentile(pos, 10)), 3),
                     "unanswerable_median": round(float(np.median(neg)), 3),
                     "unanswerable_p90": round(float(np.percentile(neg, 90)), 3)}
            entry["by_kind_refused"] = {
                k: round(sum(fn(e) < entry["threshold"] for e in evs) / len(evs), 3) for k, evs in kinds.items()
            }
            report["signals"][name] = entry
        return report
    finally:
        dbmod.drop_namespace(db, "calibration_laws")
        db.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--skip-tquad", action="store_true")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    # The app's database (embedded under DATA_DIR unless DATABASE_URL is set): its embedding cache
    # makes reruns cheap; the work happens in throw-away namespaces, dropped at the end.
    url = dbmod.database_url(settings)
    cache_db = dbmod.open_database(settings)
    embedder = _embedder(settings, cache_db)
    started = time.perf_counter()
    try:
        report = {"embedder": embedder.name, "laws": laws(url, settings, embedder)}
        if not args.skip_tquad:
            report["tquad"] = tquad_modes(url, settings, embedder)
    finally:
        cache_db.close()
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["embedding_cache"] = embedder.stats()
    text = json.dumps(report, ensure_ascii=False, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
