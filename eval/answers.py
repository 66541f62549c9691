"""Answer evaluation: the seed's protocol, answered by the app's own `AnswerService`.

Two disjoint random samples of dev questions (seed 0): 300 *answerable* (the whole corpus) and 150
*unanswerable* (the question's own article withdrawn from the corpus while it is asked, so the
answer cannot be in the context). The corpus is stored through the upload's write path in the
namespace `eval_tquad_<size>` (`eval.retrievers.ProductionRetriever`), and each question is asked
through `ragcore.answer.service.AnswerService.ask` as an admin of that namespace: retrieval SQL
(`ragcore.retrieval.hybrid.retrieve`, the mode the app resolves), the evidence gate
(`ragcore.retrieval.calibration`), `ragcore.answer.prompt.build_messages`, the configured generator
(`ragcore.answer.backends.make_generator`; the extractive one is `ragcore.answer.extractive`) and
`ragcore.answer.service.finalize_answer`. The ranking and evidence recorded per question come from the same
`retrieve` call the service makes (deterministic, so they are the service's own).

Scoring is deterministic (no judge model), see `score_answer`. Each answer also keeps the gate's
outcome (`Answer.outcome`: answer, closest passages or refusal) and its probability, and a group's
`results` are the four things a user can meet (`RESULTS`): a correct answer, a wrong answer, the
closest passages, the refusal sentence — each a share with its bootstrap interval. The older
`rates` keep their meaning ("fallback" = closest passages or a refusal). Answers are cached line
by line in the run folder, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import json
import random
import re
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from eval import metrics
from eval.gold_stats import RESULTS, rate
from eval.relevance import relevance
from eval.retrievers import Workspace, make_retriever
from eval.tquad import Progress, Question
from ragcore.answer import REFUSAL_MAX_WORDS, REFUSAL_PHRASES, is_refusal, strip_citations, without_lead
from ragcore.core import (
    FALLBACK_ANSWER,
    OUTCOME_ANSWER,
    OUTCOME_CLOSEST,
    OUTCOME_REFUSED,
    STATUS_ANSWERED,
    STATUS_ERROR,
    STATUS_FALLBACK,
    STATUS_NEEDS_REVIEW,
    lexical_tokens,
    turkish_lower,
    words,
)

SAMPLE_SEED = 0
ANSWERS_FILE = "answers.jsonl"
OUTCOMES = ("correct", "correct_not_in_context", "fallback", "wrong")
# RESULTS (eval.gold_stats, shared with the gold runs): what the user met — an answer, correct or
# wrong, the closest passages, or the refusal sentence. They split OUTCOMES' "fallback" into
# closest and refused; "correct" there is any correct answer (in the context or not).
# The cached row's layout; part of the fingerprint, so rows of an older layout (without the gate's
# outcome and probability; 3: the closest outcome's marked sentences) are asked again rather than misread.
ROW_FORMAT = 3
RECALL_THRESHOLD = 0.5
_QUOTE_LINE = re.compile(r"^> “.*” \[\d+\]$", re.MULTILINE)  # one quoted sentence (ragcore.answer.extractive)


# --------------------------------------------------------------------------- scoring


def strip_markers(text: str) -> str:
    """The answer without its [n] markers: the app's own parser (ragcore.answer.strip_citations)."""
    return strip_citations(text)


def quoted_sentences(answer: str) -> int:
    """How many sentences an answer quotes (the extractive answerer's `> “…” [n]` lines)."""
    return len(_QUOTE_LINE.findall(answer))


def exact_match(gold: str, answer: str) -> bool:
    """The gold answer as a phrase starting on a word boundary, in the Turkish-lowercased answer.

    Words may be separated by any punctuation/space; after the last word a Turkish suffix may follow
    ("Buzgan kasabası" matches "Buzgan kasabasında") unless it ends in a digit, after which no
    letter, digit or decimal part may follow ("12" does not match "1200" or "12,5").
    """
    gold_words = words(gold)
    if not gold_words:
        return False
    body = r"[\W_]+".join(re.escape(w) for w in gold_words)
    if gold_words[-1][-1].isdigit():
        tail = r"(?![^\W_])(?![.,]\d)"
    else:
        tail = r"[^\W\d_]*(?![^\W_])"
    return re.search(r"(?<![^\W_])" + body + tail, turkish_lower(strip_markers(answer))) is not None


def token_recall(gold: str, answer: str) -> float:
    """Share of the gold answer's distinct 5-character prefixes that occur in the answer."""
    wanted = set(lexical_tokens(gold))
    if not wanted:
        return 0.0
    return len(wanted & set(lexical_tokens(strip_markers(answer)))) / len(wanted)


def is_refused(answer: str, kind: str | None = None) -> bool:
    """What the user met was a refusal: finalize's kind, the fallback sentence anywhere in what was
    shown, or what the app's own detector (ragcore.answer.is_refusal) takes for one."""
    return kind == "refusal" or FALLBACK_ANSWER in answer or is_refusal(answer)


@dataclass(frozen=True)
class Score:
    exact: bool
    token_recall: float
    correct: bool
    refused: bool
    gold_in_context: bool
    cited: bool
    cited_gold: bool
    outcome: str


def score_answer(gold: str, answer: str, context: Sequence[str], cited_relevant: Sequence[bool],
                 kind: str | None = None) -> Score:
    """correct = exact or token recall ≥ 0.5; outcome ∈ correct, correct_not_in_context, fallback, wrong."""
    refused = is_refused(answer, kind)
    exact = not refused and exact_match(gold, answer)
    recall = 0.0 if refused else token_recall(gold, answer)
    correct = exact or recall >= RECALL_THRESHOLD
    in_context = any(exact_match(gold, text) for text in context)
    if refused:
        outcome = "fallback"
    elif correct:
        outcome = "correct" if in_context else "correct_not_in_context"
    else:
        outcome = "wrong"
    return Score(exact, round(recall, 4), correct, refused, in_context, bool(cited_relevant),
                 any(cited_relevant), outcome)


# --------------------------------------------------------------------------- protocol

RETRIEVERS = ("production", *(f"production-{m}" for m in ("rrf", "weighted", "dense", "lexical")))
EVAL_USER = "eval-lab"


@dataclass
class AnswerConfig:
    retriever: str = "production"  # the app's retrieval; production-<mode> forces a mode
    chunk_size: int = 1000
    answerable: int = 300
    unanswerable: int = 150
    k: int = 5
    gate: bool = True  # the app's evidence threshold before generation

    def fingerprint(self, generator_label: str) -> str:
        return f"rows{ROW_FORMAT}|{self.retriever}|{self.chunk_size}|{self.k}|{self.gate}|{generator_label}"

    def mode(self) -> str | None:
        if self.retriever not in RETRIEVERS:
            raise ValueError(f"answers go through the app's retrieval: --retriever must be one of "
                             f"{', '.join(RETRIEVERS)}, not {self.retriever!r}")
        return self.retriever.partition("-")[2] or None


def sample_groups(questions: Sequence[Question], answerable: int, unanswerable: int,
                  seed: int = SAMPLE_SEED) -> dict[str, list[int]]:
    """Two disjoint random samples of question indices (one draw, split in two)."""
    picked = random.Random(seed).sample(range(len(questions)), answerable + unanswerable)
    return {"answerable": picked[:answerable], "unanswerable": picked[answerable:]}


def load_cache(path: Path, fingerprint: str) -> dict[str, dict]:
    done: dict[str, dict] = {}
    if not path.is_file():
        return done
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut by an interrupt
            continue
        if row.get("fingerprint") == fingerprint:
            done[row["key"]] = row
    return done


def service_settings(settings, config: AnswerConfig):
    """The settings the service answers with: the run's k and mode; without the gate, a
    threshold nothing falls below (a question with no permitted chunk is still refused)."""
    changes: dict = {"top_k": config.k}
    if config.mode():
        changes["retrieval_mode"] = config.mode()
    if not config.gate:
        changes["refusal_threshold"] = float("-inf")
    return settings.replace(**changes)


def answer_service(db, settings, embedder, generator):
    """`AnswerService` over the namespace, and the admin it answers as (created once)."""
    from ragcore.access import create_user, get_user
    from ragcore.answer import AnswerService

    user = get_user(db, EVAL_USER) or create_user(db, EVAL_USER, "admin", secrets.token_urlsafe(24))
    return AnswerService(db, settings, embedder, generator), user


def run_answers(settings, config: AnswerConfig, out_dir: Path, progress: Progress | None = None, *,
                workspace: Workspace | None = None, generator=None,
                questions: Sequence[Question] | None = None, namespace: str | None = None,
                keep_namespace: bool = False) -> dict:
    """Run (or resume) the answer evaluation into `out_dir`; return the summary."""
    from eval.report import run_card, write_csv, write_json
    from eval.sweep import make_workspace

    config.mode()  # a bad --retriever fails before anything is stored
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ws = workspace or make_workspace(settings, progress)
    ws.progress = progress
    pool = list(questions) if questions is not None else ws.corpus.dev_questions
    groups = sample_groups(pool, config.answerable, config.unanswerable)
    embedder = ws.embedder("default")
    if generator is None:
        from ragcore.answer import make_generator

        generator = make_generator(settings, embedder)
    fingerprint = config.fingerprint(getattr(generator, "label", "?"))
    cache_path = out_dir / ANSWERS_FILE
    done = load_cache(cache_path, fingerprint)

    production = make_retriever("production")
    if namespace:
        production.namespace = lambda size: namespace
    answer_settings = service_settings(settings, config)
    db = production._open(ws, config.chunk_size)
    rows: list[dict] = []
    try:
        service, user = answer_service(db, answer_settings, embedder, generator)
        threshold = _threshold(service, config)
        index = production.chunk_index(db, ws, config.chunk_size)
        chunks = ws.chunks(config.chunk_size)
        for group, picked in groups.items():
            qs = [pool[i] for i in picked]
            rel = relevance(chunks, qs)
            with cache_path.open("a", encoding="utf-8") as cache:
                for n, (q, relevant) in enumerate(zip(qs, rel, strict=True)):
                    if progress:
                        progress(f"answering {group}", n, len(qs))
                    key = f"{group}:{q.qid}"
                    if key not in done:
                        if group == "unanswerable":
                            with production.withdrawn(db, ws, config.chunk_size, q.article, index):
                                done[key] = ask(service, user, db, q.question, index)
                        else:
                            done[key] = ask(service, user, db, q.question, index)
                        done[key].update({"key": key, "fingerprint": fingerprint})
                        cache.write(json.dumps(done[key], ensure_ascii=False) + "\n")
                        cache.flush()
                    rows.append(_row(ws, config, group, q, done[key], set(relevant)))
            if progress:
                progress(f"answering {group}", len(qs), len(qs))
    finally:
        if not keep_namespace:
            from ragcore import store as dbmod

            dbmod.drop_namespace(db, production.namespace(config.chunk_size))
        db.close()

    summary = {
        "run": run_card("answers", ws.corpus, {**asdict(config), "sample_seed": SAMPLE_SEED,
                                               "mode": service.mode, "threshold": threshold,
                                               "scoring": scoring_rules()},
                        embedders={"default": embedder}, generator=generator, settings=settings),
        "groups": summarise_groups(rows),
    }
    write_json(out_dir / "summary.json", summary)
    write_csv(out_dir / "per_question.csv", rows)
    if workspace is None:
        ws.close()
    return summary


def _threshold(service, config: AnswerConfig) -> dict | None:
    if not config.gate:
        return None
    t = service.threshold
    return {"value": t.value, "signal": t.signal, "measured": t.measured, "mode": service.mode}


RANKING_DEPTH = 10  # the ranking kept per question: Recall@1/5 and MRR@10 of the answer path
KINDS = {STATUS_NEEDS_REVIEW: "gate", STATUS_FALLBACK: "refusal", STATUS_ANSWERED: "answer", STATUS_ERROR: "error"}


def ask(service, user, db, question: str, index: dict[int, int]) -> dict:
    """One question through `AnswerService.ask`, with the evidence of the service's retrieval and
    the answer path's own ranking (`AnswerService.ranked_sources`: the reader's order of its
    candidates), first ten, as chunk indices into the run's ChunkSet."""
    from ragcore.retrieval import retrieve

    retrieval = retrieve(service.read_db, service.embedder, question, user.role, k=service.settings.top_k,
                         mode=service.mode, windows=service.settings.dense_windows,
                         postings_budget=service.settings.lexical_postings_budget)
    ranked = service.ranked_sources(user.role, question, RANKING_DEPTH)
    answer = service.ask(user, question)
    # The service numbers citations by first use over its reordered sources; "cited" here stays
    # positions in "ranking" (the answer path's order), as the rows below read it.
    position = {s.chunk_id: n for n, s in enumerate(ranked, start=1)}
    cited = [position[answer.sources[n - 1].chunk_id] for n in answer.cited if answer.sources[n - 1].chunk_id in position]
    return {"answer": answer.text, "kind": KINDS[answer.status], "outcome": answer.outcome,
            "probability": answer.extra.get("probability"), "cited": cited,
            "ranking": [index[s.chunk_id] for s in ranked[:service.settings.top_k]],
            "ranking10": [index[s.chunk_id] for s in ranked],
            "retrieval_ranking": [index[s.chunk_id] for s in retrieval.sources],
            "seconds": round((answer.total_ms or 0.0) / 1000, 3), "evidence": retrieval.evidence.as_dict(),
            "nearest": list(answer.nearest)}


def _row(ws, config, group: str, q: Question, cached: dict, relevant: set[int]) -> dict:
    chunks = ws.chunks(config.chunk_size)
    ranking = cached["ranking"]
    context = [chunks.chunks[i].text for i in ranking]
    cited_relevant = [ranking[n - 1] in relevant for n in cached["cited"] if 0 < n <= len(ranking)]
    kind = "refusal" if cached["kind"] == "gate" else cached["kind"]
    s = score_answer(q.answer, without_lead(cached["answer"]), context, cited_relevant, kind)  # the quotes, not the lead
    return {
        "qid": q.qid, "group": group, "question": q.question, "gold_answer": q.answer, "answer": cached["answer"],
        "outcome": s.outcome, "gate_outcome": cached["outcome"], "probability": cached["probability"],
        "result": result_of(cached["outcome"], s), "exact": s.exact, "token_recall": s.token_recall, "correct": s.correct,
        "refused": s.refused, "gated": cached["kind"] == "gate", "gold_in_context": s.gold_in_context,
        "cited": s.cited, "cited_gold": s.cited_gold, "quoted_sentences": quoted_sentences(cached["answer"]),
        "closest_marked": group == "answerable" and marks_answer(q.answer, cached),
        "answer_chars": len(strip_markers(without_lead(cached["answer"])).strip()),
        "top5": " ".join(chunks.chunks[i].chunk_id for i in ranking[:5]), "seconds": cached["seconds"],
        "first_relevant": next((n for n, i in enumerate(cached.get("ranking10", ranking), start=1) if i in relevant), 0),
    }


def marks_answer(gold: str, cached: dict) -> bool:
    """The closest outcome's marked sentences, read together, hold the gold answer (the answer's
    own scoring rule): the reader was shown where it is, though not told it."""
    marks = cached.get("nearest") or []
    return cached["outcome"] == OUTCOME_CLOSEST and bool(marks) and score_answer(gold, " ".join(marks), [], []).correct


def result_of(gate_outcome: str | None, score: Score) -> str:
    """What the user met (one of RESULTS): the gate's closest passages or refusal as such; an
    answer that is itself a refusal (finalize's, or a model saying it is not there) is a refusal."""
    if gate_outcome == OUTCOME_CLOSEST:
        return "closest"
    if gate_outcome == OUTCOME_REFUSED or score.refused:
        return "refused"
    return "correct" if score.correct else "wrong"


def summarise_groups(rows: list[dict]) -> dict:
    """Per group: n, the rate of each outcome and flag, and the share of each of RESULTS (plus
    "answered" = correct or wrong), each as {"mean", "ci", "count"} (bootstrap over the group)."""
    out = {}
    for group in ("answerable", "unanswerable"):
        sub = [r for r in rows if r["group"] == group]
        if not sub:
            continue
        idx = metrics.bootstrap_indices(len(sub))
        rates = {}
        flags = {"exact": "exact", "correct_any": "correct", "refused": "refused", "gated": "gated",
                 "gold_in_context": "gold_in_context", "cited": "cited", "cited_gold": "cited_gold"}
        for name in (*OUTCOMES, *flags):
            values = np.array([(r["outcome"] == name) if name in OUTCOMES else _truthy(r[flags[name]]) for r in sub],
                              dtype=float)
            lo, hi = metrics.bootstrap_ci(values, idx)
            rates[name] = {"mean": float(values.mean()), "ci": [lo, hi], "count": int(values.sum())}
        results = {name: rate([r["result"] in wanted for r in sub], idx)
                   for name, wanted in {**{r: (r,) for r in RESULTS}, "answered": ("correct", "wrong")}.items()}
        # the closest passages' marks: how often they hold the answer, and who met it at all
        results["closest_marked"] = rate([_truthy(r.get("closest_marked")) for r in sub], idx)
        results["fact_met"] = rate([r["result"] == "correct" or _truthy(r.get("closest_marked")) for r in sub], idx)
        answered = [r for r in sub if not _truthy(r["refused"])]
        quotes = [int(r["quoted_sentences"]) for r in answered]
        if group == "answerable":
            firsts = [int(r.get("first_relevant") or 0) for r in sub]
            results["recall@1"] = rate([0 < f <= 1 for f in firsts], idx)
            results["recall@5"] = rate([0 < f <= 5 for f in firsts], idx)
            reciprocal = np.array([1.0 / f if 0 < f <= 10 else 0.0 for f in firsts])
            low, high = metrics.bootstrap_ci(reciprocal, idx)
            results["mrr@10"] = {"mean": float(reciprocal.mean()), "ci": [low, high], "n": len(firsts)}
        out[group] = {"n": len(sub), "rates": rates, "results": results,
                      "mean_seconds": float(np.mean([r["seconds"] for r in sub])),
                      "answered": {"n": len(answered),
                                   "quoted_sentences_mean": float(np.mean(quotes)) if quotes else 0.0,
                                   "quoted_sentences_max": max(quotes, default=0),
                                   "chars_mean": float(np.mean([int(r["answer_chars"]) for r in answered]))
                                   if answered else 0.0}}
    return out


def _truthy(value: object) -> bool:
    """Flags are bools in memory and "True"/"False" when read back from per_question.csv."""
    return value is True or value == "True" or value == 1


def scoring_rules() -> dict:
    return {
        "exact": "gold phrase on a word boundary; Turkish suffix allowed after a final letter, nothing after a final digit",
        "token_recall": "share of gold 5-char prefixes present in the answer",
        "correct": f"exact or token_recall >= {RECALL_THRESHOLD}",
        "refused": f"fallback / finalize refusal / gate, or <= {REFUSAL_MAX_WORDS} words with {list(REFUSAL_PHRASES)}",
        "outcomes": list(OUTCOMES),
        "results": f"{list(RESULTS)}: the gate's closest passages / refusal ({OUTCOME_CLOSEST}, {OUTCOME_REFUSED}), "
                   f"else the answer ({OUTCOME_ANSWER}) scored: refused, correct or wrong",
    }


def _cell(rate: dict) -> str:
    lo, hi = rate["ci"]
    return f"{rate['mean']:.3f} [{lo:.3f}–{hi:.3f}]"


def answers_markdown(summary: dict) -> str:
    """The CLI's tables: the scored outcomes, then what the user met (an older summary has no
    `results`: that table is left out)."""
    lines = ["| group | n | correct | correct, not in context | fallback | wrong | cited gold |",
             "|---|---|---|---|---|---|---|"]
    for group, data in summary["groups"].items():
        r = data["rates"]
        lines.append(f"| {group} | {data['n']} | {_cell(r['correct'])} | {_cell(r['correct_not_in_context'])} | "
                     f"{_cell(r['fallback'])} | {_cell(r['wrong'])} | {_cell(r['cited_gold'])} |")
    lines.append("")
    if all("results" in data for data in summary["groups"].values()):
        lines += ["| group | n | correct answer | wrong answer | closest passages | refused | answered |",
                  "|---|---|---|---|---|---|---|"]
        for group, data in summary["groups"].items():
            lines.append(f"| {group} | {data['n']} | "
                         + " | ".join(_cell(data["results"][name]) for name in (*RESULTS, "answered")) + " |")
        lines.append("")
    for group, data in summary["groups"].items():
        a = data.get("answered")
        if a:
            lines.append(f"{group}: {a['n']} answered, quoted sentences per answer {a['quoted_sentences_mean']:.2f} "
                         f"(max {a['quoted_sentences_max']}), {a['chars_mean']:.0f} characters on average")
    return "\n".join(lines)
