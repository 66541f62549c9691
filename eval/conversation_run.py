"""A conversation run: the conversation gold set walked turn by turn through the app's own code.

Each conversation of a split is asked by a user of each of its roles, in order, as the chat asks
it: the typed question is resolved against the history the user may still read
(`ragcore.conversations.readable_history`, `resolve_follow_up` with no generator: the embedded
default's deterministic rules), the resolved question is asked by `eval.gold_run.ask_case_answer`
(ranking by the answer service's `ranked_sources` at depth 10, the answer by `AnswerService.ask`,
relevance, outcome and the first-read measure exactly as a gold run records them), and the turn
the conversation would store (`turn_of`) becomes the next turn's history.

Beside it, each turn is also asked as typed with no history (what the product did before
conversations) and as written out in full (`standalone`), so one run says what resolution is
worth: issue 37's target is follow-up Recall@5 within 0.05 of the standalone questions'.
Turn kinds: the first turn, a follow-up, and a later turn with its own subject ("subject change",
reported apart from both). The index is the three sample laws ingested by the upload's own path
into a namespace of this run (`eval.lab_corpus`), dropped at the end; the embedding cache makes a
rerun's ingest cheap.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from eval import metrics
from eval.conversations import CONVERSATIONS_FILE, GoldConversation, GoldTurn, fingerprint
from eval.gold_report import first_read
from eval.gold_run import (
    Configuration,
    ConfigurationContext,
    GeneratorFactory,
    ask_case,
    ask_case_answer,
    configuration_context,
    corpus_warnings,
    default_generator_factory,
)
from eval.lab_corpus import CorpusDocument, drop_index, ingest_corpus, open_index
from eval.report import describe_model, package_versions, write_card
from ragcore.conversations import Turn, readable_history, resolve_follow_up, turn_of
from ragcore.core import Settings
from ragcore.retrieval import resolve_mode
from ragcore.store import Database, drop_namespace

Progress = Callable[[str, int, int], None]

NAMESPACE = "conversation_run"
CASES_FILE = "cases.jsonl.gz"
TARGET_GAP = 0.05  # issue 37: follow-up Recall@5 within 0.05 of the same questions standalone
FIRST, FOLLOW_UP, SUBJECT_CHANGE = "first", "follow_up", "subject_change"
ASKED_AS = ("resolved", "typed", "standalone")
TOP_SOURCES = 5  # the sources kept per asked question in cases.jsonl.gz (the ranking keeps all 10)


def kind_of(turn: GoldTurn, n: int) -> str:
    """first (n == 0), follow_up, or subject_change (a later turn with its own subject)."""
    if n == 0:
        return FIRST
    return FOLLOW_UP if turn.follow_up else SUBJECT_CHANGE


def _asked(payload: dict[str, Any]) -> dict[str, Any]:
    """What a turn keeps of one asked question: the ranking and its scores, the answer's outcome
    and the first-read fields `eval.gold_report.first_read` reads, in the gold run's shape."""
    answer = payload["answer"]
    return {
        "question": payload["question"], "answerable": payload["answerable"], "key_facts": payload["key_facts"],
        "relevant_total": payload["relevant_total"], "ranking": payload["ranking"],
        "scores": payload.get("scores"), "leaks": payload["leaks"],
        "sources": [{k: s[k] for k in ("rank", "chunk_id", "filename", "article", "pages", "relevant")}
                    for s in payload["sources"][:TOP_SOURCES]],
        "answer": {k: answer[k] for k in ("text", "status", "outcome", "facts_found", "gate_outcome", "nearest",
                                          "first_nearest_found", "total_ms")},
        "first_read": _first_read_hit(payload),
    }


def _first_read_hit(payload: dict[str, Any]) -> bool | None:
    """This case's share of `first_read` (None: the case does not count there)."""
    summary = first_read([payload])
    return None if not summary else bool(summary["count"])


def walk(ctx: ConfigurationContext, conversation: GoldConversation, role: str) -> list[dict[str, Any]]:
    """Every turn of `conversation` asked in order by `role`'s user; one record per turn."""
    db = ctx.index.db
    history: list[Turn] = []
    records = []
    for n, turn in enumerate(conversation.turns):
        visible = readable_history(db, role, history)
        resolution = resolve_follow_up(visible, turn.question, generator=None, settings=ctx.service.settings)
        typed_question = turn.as_question()
        resolved, answer = ask_case_answer(ctx, replace(typed_question, question=resolution.question), role)
        history.append(turn_of(db, turn.question, resolution, answer))
        asked = {resolution.question: resolved}
        for text, question in ((turn.question, typed_question), (turn.standalone, turn.as_question(standalone=True))):
            if text not in asked:  # the same text asks the same question: asked once
                asked[text] = ask_case(ctx, question, role)
        records.append({
            "conversation": conversation.id, "turn": n + 1, "id": turn.id, "role": role,
            "kind": kind_of(turn, n), "follow_up": turn.follow_up,
            "typed": turn.question, "resolved": resolution.question, "standalone": turn.standalone,
            "rewritten": resolution.rewritten, "method": resolution.method,
            "answerable": turn.answerable, "expected": [e.as_dict() for e in turn.expected],
            "resolved_case": _asked(resolved), "typed_case": _asked(asked[turn.question]),
            "standalone_case": _asked(asked[turn.standalone]),
        })
    return records


# --------------------------------------------------------------------------- the summary


def _group(records: Sequence[dict], asked_as: str) -> dict[str, Any]:
    """Recall@k (and MRR, nDCG) and the first-read fact rate of `records` asked as `asked_as`."""
    cases = [r[f"{asked_as}_case"] for r in records]
    answerable = [c for c in cases if c["answerable"]]
    scores = {m: np.array([c["scores"][m] for c in answerable], dtype=float) for m in metrics.METRICS}
    return {"turns": len(cases), "answerable": len(answerable),
            "retrieval": metrics.summarise(scores) if answerable else {},
            "first_read": first_read(cases),
            "outcomes": {o: sum(c["answer"]["outcome"] == o for c in cases)
                         for o in ("correct", "fallback", "wrong", "unscored")},
            "leaks": sum(c["leaks"] for c in cases)}


def _recall(records: Sequence[dict], asked_as: str) -> np.ndarray:
    return np.array([r[f"{asked_as}_case"]["scores"]["recall@5"] for r in records if r["answerable"]], dtype=float)


def target(follow_ups: Sequence[dict]) -> dict[str, Any]:
    """Issue 37's target: follow-ups as resolved vs the same questions standalone (Recall@5), with
    the paired difference's bootstrap CI."""
    resolved, standalone = _recall(follow_ups, "resolved"), _recall(follow_ups, "standalone")
    if not resolved.size:
        return {"metric": "recall@5", "limit": TARGET_GAP, "met": None, "n": 0}
    gap = float(standalone.mean() - resolved.mean())
    lo, hi = metrics.bootstrap_ci(standalone - resolved)
    return {"metric": "recall@5", "follow_up_resolved": float(resolved.mean()),
            "standalone": float(standalone.mean()), "gap": gap, "gap_ci": [lo, hi], "limit": TARGET_GAP,
            "met": gap <= TARGET_GAP, "n": int(resolved.size)}


def summarise(records: Sequence[dict]) -> dict[str, Any]:
    """The groups of issue 37, item 5 — (a) first turns, (b) follow-ups as resolved, (c) follow-ups
    typed with no history, (d) follow-ups standalone — subject-change turns apart, and the target."""
    by_kind = {k: [r for r in records if r["kind"] == k] for k in (FIRST, FOLLOW_UP, SUBJECT_CHANGE)}
    follow_ups = by_kind[FOLLOW_UP]
    return {
        "groups": {
            "first_turns": _group(by_kind[FIRST], "resolved"),
            "follow_ups_resolved": _group(follow_ups, "resolved"),
            "follow_ups_typed": _group(follow_ups, "typed"),
            "follow_ups_standalone": _group(follow_ups, "standalone"),
            "subject_change_resolved": _group(by_kind[SUBJECT_CHANGE], "resolved"),
            "subject_change_typed": _group(by_kind[SUBJECT_CHANGE], "typed"),
            "subject_change_standalone": _group(by_kind[SUBJECT_CHANGE], "standalone"),
        },
        "rewrites": {"follow_ups": len(follow_ups), "follow_ups_rewritten": sum(r["rewritten"] for r in follow_ups),
                     "subject_changes": len(by_kind[SUBJECT_CHANGE]),
                     "subject_changes_rewritten": sum(r["rewritten"] for r in by_kind[SUBJECT_CHANGE])},
        "target": target(follow_ups),
        "subject_changes": subject_change_loss(by_kind[SUBJECT_CHANGE]),
    }


def subject_change_loss(changes: Sequence[dict]) -> dict[str, Any]:
    """What resolution costs a turn with its own subject: Recall@5 as resolved vs typed alone (the
    right question for a turn that stands on its own), with the paired difference's bootstrap CI."""
    resolved, typed = _recall(changes, "resolved"), _recall(changes, "typed")
    if not resolved.size:
        return {"metric": "recall@5", "n": 0}
    lo, hi = metrics.bootstrap_ci(typed - resolved)
    return {"metric": "recall@5", "resolved": float(resolved.mean()), "typed": float(typed.mean()),
            "loss": float(typed.mean() - resolved.mean()), "loss_ci": [lo, hi], "n": int(resolved.size)}


# --------------------------------------------------------------------------- the run


def run_conversations(db: Database, settings: Settings, conversations: Sequence[GoldConversation],
                      documents: Sequence[CorpusDocument], embedder: object, out: Path,
                      progress: Progress | None = None, *, split: str = "",
                      make_generator: GeneratorFactory = default_generator_factory,
                      namespace: str = NAMESPACE, source: str = CONVERSATIONS_FILE.name) -> dict[str, Any]:
    """Index `documents`, walk every (conversation, role), write `out`/summary.json and
    cases.jsonl.gz; return the summary. `db` is the lab's (public) database; `embedder` the
    app's, behind the embedding cache."""
    tick = progress or (lambda stage, done, total: None)
    started = time.monotonic()
    cases = [(c, role) for c in conversations for role in c.turns[0].roles]
    config = Configuration(getattr(embedder, "name", "embedder"), resolve_mode(settings, embedder),
                           settings.chunk_size, settings.top_k)
    drop_namespace(db, namespace)  # a run killed before its cleanup
    index = open_index(settings, namespace, Path(out) / "index", embedder_spec=config.embedder,
                       chunk_size=config.chunk_size)
    records: list[dict[str, Any]] = []
    try:
        tick("index", 0, len(documents))
        ingest_corpus(index, embedder, documents, lambda doc: tick("index", len(index.document_ids), len(documents)))
        ctx = configuration_context(config, index, embedder, documents, make_generator, settings.answer_policy)
        tick("ask", 0, len(cases))
        for done, (conversation, role) in enumerate(cases, start=1):
            records += walk(ctx, conversation, role)
            tick("ask", done, len(cases))
        generator = ctx.service.generator
        index_info = {"chunks": index.chunks, "seconds": round(index.seconds, 1), "documents": len(documents)}
    finally:
        drop_index(index, db)
    questions = [t.as_question() for c in conversations for t in c.turns]
    summary = {
        "kind": "conversations", "split": split,
        "data": {"conversations_file": source, "sha256": fingerprint(conversations),
                 "conversations": len(conversations), "cases": len(cases), "turns": len(records),
                 "documents": [d.as_dict() for d in documents]},
        "configuration": {"embedder": config.embedder, "mode": config.mode, "chunk_size": config.chunk_size,
                          "k": config.k, "depth": config.depth, "policy": settings.answer_policy,
                          "resolver": "rules (resolve_follow_up, generator None)"},
        "embedder": describe_model(embedder), "generator": describe_model(generator),
        "packages": package_versions(), "index": index_info,
        "subject_change_turns": "reported apart (subject_change_*), in neither the first-turn nor the follow-up groups",
        **summarise(records),
        "warnings": corpus_warnings(questions, documents),
        "seconds": round(time.monotonic() - started, 1),
    }
    out = Path(out)
    write_card(out, summary, outputs=[CASES_FILE])
    with gzip.open(out / CASES_FILE, "wt", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def load_cases(folder: Path) -> list[dict[str, Any]]:
    """The per-turn records of a run folder."""
    with gzip.open(Path(folder) / CASES_FILE, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def summary_rows(summary: dict[str, Any]) -> list[dict[str, str]]:
    """The groups as table rows (the CLI prints them; the README's table is made of them)."""
    rows = []
    for name, group in summary["groups"].items():
        recall = group["retrieval"].get("recall@5", {})
        fr = group["first_read"]
        rows.append({"group": name, "turns": str(group["turns"]),
                     "Recall@5": "-" if not recall else metrics_text(recall["mean"], recall["ci"]),
                     "first read": "-" if not fr or fr["mean"] is None else
                     f"{metrics_text(fr['mean'], fr['ci'])} ({fr['count']}/{fr['n']})"})
    return rows


def metrics_text(mean: float, ci: Sequence[float | None]) -> str:
    lo, hi = ci
    return f"{mean:.3f}" if lo is None or hi is None else f"{mean:.3f} [{lo:.3f}–{hi:.3f}]"
