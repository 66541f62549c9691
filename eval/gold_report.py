"""What a gold run leaves behind, in its folder: summary.json, per_question.csv, cases.jsonl and a
self-contained report.html an analyst can mail.

- `summary.json`: the run card (data fingerprint = gold-set version and its sha256 plus every
  document's sha256; configuration; commit and whether the tree was dirty; machine; packages),
  per configuration the retrieval metrics with bootstrap CIs, Recall@k curve, answer outcomes,
  what the user met per group (`gate_outcomes`: correct answer, wrong answer, closest passages,
  refusal, with bootstrap CIs), abstention curve with the operating point, the three-outcome
  curve (`outcome_curve`, when the gate has a model), permission leaks, latency, index build, agreement of
  the answer's sources with the retrieval; the paired comparisons with the best configuration
  and the recommendation.
- `cases.jsonl`: every case as asked (sources, answer, gate), for the drill-down.
- `report.html`: tables and the charts as SVG images inside the file (vl-convert renders them
  here; no script, no font, nothing fetched when it is opened).

The Turkish tables (`results_rows`, `comparison_rows`) are shared by the page and the report.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import io
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from eval import gold_charts, metrics
from eval.chart_layout import for_export
from eval.gold_cases import case_key, cases_of
from eval.gold_stats import (
    RESULTS,
    AbstentionCase,
    Cost,
    GateCase,
    abstention_curve,
    latency,
    metric_label,
    outcome_curve,
    rate,
    recommend,
    score_separation,
)
from eval.numbers import MISSING, integer, number, percent, percent_with_ci, signed, with_ci
from eval.report import (
    PACKAGES,
    describe_model,
    git_commit,
    machine,
    package_versions,
    read_text,
    stored,
    write_json,
)

SUMMARY = "summary.json"
PER_QUESTION = "per_question.csv"
CASES = "cases.jsonl"
REPORT = "report.html"
REPORT_PACKAGES = (*PACKAGES, "scipy", "altair", "vl-convert-python")
STATUS_LABELS = {"answered": "cevaplandı", "fallback": "model cevap vermedi", "needs_review": "eşik: cevap yok",
                 "error": "hata"}
OUTCOME_LABELS = {"correct": "doğru", "fallback": "cevap yok", "wrong": "yanlış", "unscored": "puanlanmadı"}
GATE_LABELS = {"answer": "cevap", "closest": "en yakın parçalar", "refused": "reddedildi"}
# How to read the paired comparisons, in plain words (the lab page and the report alike); the
# method's names only under "Teknik ayrıntılar".
COMPARISON_NOTE = ("Her yapılandırma, aynı sorularda en iyisiyle karşılaştırılır (fark = yapılandırma − en iyi). "
                   "Güven aralığı sıfırı içeriyorsa ya da p değeri büyükse bu sorularla ikisi arasında gerçek bir "
                   "fark gösterilemiyor demektir.")
COMPARISON_METHOD = ("%95 eşli bootstrap güven aralığı; eşli permütasyon testi; p değerleri Holm yöntemiyle çoklu "
                     "karşılaştırmaya göre düzeltilir")
TECHNICAL = "Teknik ayrıntılar"


# --------------------------------------------------------------------------- the summary


def _group_rates(payloads: Sequence[dict], outcomes: Sequence[str]) -> dict:
    if not payloads:
        return {"n": 0, "rates": {}}
    idx = metrics.bootstrap_indices(len(payloads))
    got = [p["answer"]["outcome"] for p in payloads]
    return {"n": len(payloads), "rates": {o: rate([g == o for g in got], idx) for o in outcomes},
            "unscored": sum(g == "unscored" for g in got)}


def _abstention_cases(payloads: Sequence[dict]) -> list[AbstentionCase]:
    out = []
    for p in payloads:
        behind = p["ungated"] or p["answer"]
        if p["answerable"] and behind["outcome"] == "unscored":
            continue
        score = p["gate"]["score"]
        out.append(AbstentionCase(score=float("-inf") if score is None else float(score), answerable=p["answerable"],
                                  answered_if_passed=behind["outcome"] != "fallback",
                                  correct_if_answered=behind["outcome"] == "correct"))
    return out


# A case's scored outcome (gold_run.outcome) as what the user met, when an answer was given.
ANSWER_RESULTS = {"correct": "correct", "wrong": "wrong", "fallback": "refused", "unscored": "unscored"}


def case_result(payload: dict) -> str:
    """What the user met in this case (RESULTS, or "unscored": an answer to a question without
    key facts): the gate's closest passages or refusal, else its answer as scored."""
    gate = payload["answer"]["gate_outcome"]
    if gate in ("closest", "refused"):
        return gate
    return ANSWER_RESULTS[payload["answer"]["outcome"]]


def _gate_rates(payloads: Sequence[dict]) -> dict | None:
    """Per group the share of each result (and of any answer given), over all its cases; None for
    cases stored before the gate's outcome was (a resumed older run)."""
    if any("gate_outcome" not in p["answer"] for p in payloads):
        return None
    out = {}
    for group, answerable in (("answerable", True), ("unanswerable", False)):
        got = [case_result(p) for p in payloads if p["answerable"] == answerable]
        idx = metrics.bootstrap_indices(len(got)) if got else None
        wanted = {**{r: (r,) for r in RESULTS}, "answered": ("correct", "wrong", "unscored")}
        out[group] = {"n": len(got), "unscored": got.count("unscored"),
                      "rates": {name: rate([g in w for g in got], idx) for name, w in wanted.items()}}
    out["answerable"]["closest_marks"] = _closest_marks([p for p in payloads if p["answerable"]])
    return out


def _closest_marks(answerable: Sequence[dict]) -> dict:
    """How well the closest outcome points: of the answerable cases shown the closest passages
    (with marks and key facts), the share whose marked sentences carry every key fact; and over
    all answerable cases, the share that met the asked fact at all — in a right quote, or in a
    marked sentence of the closest passages. Runs stored before the marks count none."""
    cases = [(case_result(p), p["answer"].get("nearest_found")) for p in answerable]
    scored = [found for result, found in cases if result == "closest" and found is not None]
    met = [result == "correct" or (result == "closest" and bool(found)) for result, found in cases]
    return {"of_closest": rate(scored, metrics.bootstrap_indices(len(scored)) if scored else None),
            "fact_met": rate(met, metrics.bootstrap_indices(len(met)) if met else None)}


def _gate_cases(payloads: Sequence[dict]) -> tuple[list[GateCase], float, float, float | None] | None:
    """The cases for the three-outcome curve and the model's cuts; None without a model.
    An answerable case whose answer cannot be scored (no key facts) is left out, as in the
    abstention curve."""
    if not payloads or any("gate_outcome" not in p["answer"] for p in payloads):
        return None
    answer_at, closest_at = payloads[0]["gate"].get("answer_at"), payloads[0]["gate"].get("closest_at")
    if answer_at is None or closest_at is None:
        return None
    out = []
    for p in payloads:
        behind = p["ungated"] or p["answer"]
        if p["answerable"] and behind["outcome"] == "unscored":
            continue
        probability = p["answer"]["probability"]
        rescued = (p["answer"]["gate_outcome"] == "closest" and probability is not None and probability < closest_at)
        out.append(GateCase(probability, p["answerable"], rescued, ANSWER_RESULTS[behind["outcome"]],
                            behind.get("quote_probability")))
    return out, answer_at, closest_at, payloads[0]["gate"].get("quote_at")


def first_read(payloads: Sequence[dict]) -> dict:
    """Among answerable cases with key facts: the share whose first thing the user reads carries
    every fact — the answer when answered, else the first marked sentence of the closest passages."""
    hits = []
    for p in payloads:
        if not p["answerable"] or not p.get("key_facts") or p["answer"]["outcome"] == "unscored":
            continue
        answer = p["answer"]
        if answer["status"] == "answered":
            hits.append(answer["outcome"] == "correct")
        else:
            hits.append(bool(answer.get("first_nearest_found")))
    return rate(hits) if hits else {}


def configuration_summary(config, payloads: Sequence[dict], index: Mapping[str, Any] | None,
                          indices: np.ndarray | None) -> tuple[dict, dict[str, np.ndarray]]:
    """One configuration's block of summary.json, and its per-case metric arrays (answerable cases)."""
    answerable = [p for p in payloads if p["answerable"]]
    scores = {m: np.array([p["scores"][m] for p in answerable], dtype=float) for m in metrics.METRICS}
    ranks = np.array([int(p["scores"]["rank"]) for p in answerable], dtype=int)
    right = [(p["answer"]["outcome"] == "correct") if p["answerable"] else (p["answer"]["outcome"] == "fallback")
             for p in payloads if p["answer"]["outcome"] != "unscored"]
    leaking = [p for p in payloads if p["leaks"]]
    gate = payloads[0]["gate"] if payloads else {}
    abstention = _abstention_cases(payloads)
    curve = abstention_curve(abstention, gate.get("value", 0.0)) if abstention else {"points": [], "operating_point": None}
    curve["auc"] = score_separation(abstention)
    gate_cases = _gate_cases(payloads)
    agreement = [p["agreement"] for p in payloads if p["agreement"] is not None]
    block = {
        "key": config.key, "label": config.label, "embedder": config.embedder, "mode": config.mode,
        "chunk_size": config.chunk_size, "k": config.k,
        "retrieval": metrics.summarise(scores, indices) if answerable else {},
        # Retrieval's own order before the answering policy re-orders it (the reader's candidates):
        # what the reader adds to the ranking, in the same run.
        "retrieval_alone": (metrics.summarise({m: np.array([p["retrieval_scores"][m] for p in answerable], dtype=float)
                                               for m in metrics.METRICS}, indices)
                            if answerable and all("retrieval_scores" in p for p in answerable) else {}),
        "policy": payloads[0].get("policy", "rules") if payloads else None,
        "first_read": first_read(payloads),
        "recall_curve": metrics.recall_curve(ranks, metrics.DEPTH) if answerable else [],
        "answers": {"answerable": _group_rates(answerable, ("correct", "fallback", "wrong")),
                    "unanswerable": _group_rates([p for p in payloads if not p["answerable"]], ("fallback", "wrong")),
                    "overall": rate(right)},
        "gate_outcomes": _gate_rates(payloads),
        "threshold": {k: gate.get(k) for k in ("signal", "value", "measured", "answer_at", "closest_at",
                                                  "quote_at")},
        "abstention": curve,
        "outcome_curve": outcome_curve(*gate_cases) if gate_cases else None,
        "leaks": {"count": int(sum(p["leaks"] for p in payloads)), "cases": len(leaking),
                  "examples": [{"qid": p["qid"], "role": p["role"],
                                "documents": sorted({s["filename"] for s in p["sources"] + p["answer"]["sources"]
                                                     if not s["readable"]})} for p in leaking[:10]]},
        "latency": {"retrieval_ms": latency([p["retrieval_ms"] for p in payloads]),
                    "answer_ms": latency([p["answer"]["total_ms"] for p in payloads])},
        "index": dict(index or {}),
        "agreement": {"checked": len(agreement), "mismatches": sum(not a for a in agreement)},
        "cases": len(payloads), "answerable_cases": len(answerable),
    }
    return block, scores


def fingerprint(version: Mapping[str, Any], documents: Sequence[Mapping[str, Any]]) -> str:
    """One sha256 over the gold-set version's content and every document's bytes (their sha256)."""
    digest = hashlib.sha256(version["sha256"].encode())
    for sha in sorted(d["sha256"] for d in documents):
        digest.update(b"\0" + sha.encode())
    return digest.hexdigest()


def reader_description(settings) -> dict:
    """The reader model a reader-policy run read with: its file's hash names it even when it came
    from READER_MODEL_DIR, outside the commit the card names. How many candidates it read
    (READER_CANDIDATES) is part of what was measured."""
    from ragcore.reader import loaded_reader

    return {**loaded_reader(settings.reader_model_dir).describe(), "candidates": settings.reader_candidates}


def build_summary(*, run, spec, version, gold, documents, configs, results, warnings, embedders, settings) -> dict:
    cases = cases_of(gold)
    n_answerable = sum(q.answerable for q, _ in cases)
    indices = metrics.bootstrap_indices(n_answerable) if n_answerable else None
    blocks, systems = [], {}
    for c in configs:
        payloads = [results[(c.key, case_key(q, r))] for q, r in cases]
        block, scores = configuration_summary(c, payloads, results.get((c.index_key, "index")), indices)
        blocks.append(block)
        systems[c.key] = scores
    labels = {b["key"]: b["label"] for b in blocks}
    costs = {b["key"]: Cost(b["latency"]["answer_ms"]["p95"], b["index"].get("seconds")) for b in blocks}
    recommendation = recommend(systems, costs, labels, spec.primary, indices) if n_answerable else {
        "text": "Öneri yapılamadı: cevaplanabilir soru yok.", "primary": spec.primary}
    best = recommendation.get("best")
    comparisons = metrics.compare(systems, best, indices=indices) if best and len(systems) > 1 else []
    docs = [d.as_dict() for d in documents]
    first = results.get((configs[0].key, case_key(*cases[0]))) if cases else None
    card = {
        "kind": "gold", "id": run.id, "label": run.label, "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "created_by": run.created_by,
        "data": {"gold_set": version.as_dict(), "questions": len(gold), "cases": len(cases),
                 "answerable_cases": n_answerable, "corpus": spec.corpus, "documents": docs,
                 "fingerprint": fingerprint(version.as_dict(), docs)},
        "configuration": {**spec.as_dict(), "chunk_overlap_ratio": settings.chunk_overlap / settings.chunk_size,
                          "bootstrap_resamples": metrics.RESAMPLES, "permutations": metrics.PERMUTATIONS,
                          "seed": metrics.SEED, "depth": metrics.DEPTH},
        "embedders": {name: describe_model(e) for name, e in embedders.items()},
        "generator": first["answer"]["generator"] if first else None,
        "reader": reader_description(settings) if spec.policy == "reader" else None,
        "code": git_commit(), "machine": machine(), "packages": package_versions(REPORT_PACKAGES),
    }
    return {"run": card, "configurations": blocks, "comparisons": comparisons,
            "recommendation": recommendation, "warnings": list(warnings)}


# --------------------------------------------------------------------------- files


def _case_rows(configs, gold, results) -> list[dict]:
    rows = []
    for c in configs:
        for q, role in cases_of(gold):
            p = results[(c.key, case_key(q, role))]
            s = p.get("scores") or {}
            behind = p["ungated"] or p["answer"]
            rows.append({
                "configuration": c.key, "qid": q.id, "role": role, "answerable": q.answerable,
                "question": q.question, "first_rank": int(s["rank"]) if s.get("rank") else "",
                **{m: s.get(m, "") for m in metrics.METRICS}, "relevant_total": p["relevant_total"],
                "outcome": p["answer"]["outcome"], "status": p["answer"]["status"],
                "gated": p["answer"]["status"] == "needs_review", "gate_score": p["gate"]["score"],
                "gate_outcome": p["answer"].get("gate_outcome", ""), "probability": p["answer"].get("probability"),
                "outcome_behind_gate": behind["outcome"], "leaks": p["leaks"],
                "retrieval_ms": round(p["retrieval_ms"], 2), "answer_ms": round(p["answer"]["total_ms"] or 0, 2),
                "top5": " | ".join(f"{x['filename']} {x['pages']}" + (" ✓" if x["relevant"] else "")
                                   for x in p["sources"][:5]),
                "answer": p["answer"]["text"],
            })
    return rows


def write_run(folder: Path, **parts: Any) -> dict:
    """summary.json, per_question.csv, cases.jsonl and report.html into `folder`; returns the summary."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    summary = build_summary(**parts)
    configs, gold, results = parts["configs"], parts["gold"], parts["results"]
    rows = _case_rows(configs, gold, results)
    with (folder / PER_QUESTION).open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["configuration"])
        writer.writeheader()
        writer.writerows(rows)
    with (folder / CASES).open("w", encoding="utf-8") as fh:
        for c in configs:
            for q, role in cases_of(gold):
                fh.write(json.dumps({"configuration": c.key, **results[(c.key, case_key(q, role))]},
                                    ensure_ascii=False) + "\n")
    write_json(folder / SUMMARY, summary)
    (folder / REPORT).write_text(render_html(summary, load_cases(folder)), encoding="utf-8")
    return summary


def load_summary(folder: Path) -> dict:
    return json.loads((Path(folder) / SUMMARY).read_text(encoding="utf-8"))


def load_cases(folder: Path) -> list[dict]:
    path = Path(folder) / CASES
    if stored(path) is None:
        return []
    return [json.loads(line) for line in read_text(path).splitlines() if line.strip()]


# --------------------------------------------------------------------------- the recommendation

# The recommendation compares configurations with each other; it does not say that the one it
# picks is good enough. A configuration that answers fewer than half of the answerable questions
# right leaves most users with a wrong answer or none, so it is never shown as "önerilen" (the
# green banner): the page and the report say why instead and keep the comparison.
RECOMMENDATION_FLOOR = 0.5


def right_answer_rate(summary: dict, key: str | None) -> float | None:
    """The share of answerable questions the configuration `key` answered right (None: unknown)."""
    block = next((c for c in summary["configurations"] if c["key"] == key), None)
    if block is None:
        return None
    return ((block.get("answers") or {}).get("answerable") or {}).get("rates", {}).get("correct", {}).get("mean")


def recommendation_shown(summary: dict) -> tuple[bool, str]:
    """(recommended, text): whether the picked configuration clears RECOMMENDATION_FLOOR, and the
    text to show — the recommendation, or why there is none above the comparison's own words."""
    recommendation = summary.get("recommendation") or {}
    text = recommendation.get("text", "")
    rate = right_answer_rate(summary, recommendation.get("chosen"))
    if rate is None or rate >= RECOMMENDATION_FLOOR:
        return rate is not None, text
    label = next(c["label"] for c in summary["configurations"] if c["key"] == recommendation["chosen"])
    return False, (f"Öneri yok: en iyi görünen yapılandırma ({label}) cevaplanabilir soruların yalnızca "
                   f"{percent(rate)} kadarını doğru cevapladı. Bir yapılandırma, soruların en az "
                   f"{percent(RECOMMENDATION_FLOOR, 0)} kadarını doğru cevaplıyorsa önerilir. Karşılaştırmanın sonucu: "
                   + text.replace("Önerilen yapılandırma: ", "en iyi seçenek ", 1))


# --------------------------------------------------------------------------- the CSV an analyst downloads

# per_question.csv is stored with English column names and codes (the lab's own tools read it
# back by them); the download is Turkish unless an analyst's script asks for the stored columns.
CSV_COLUMNS = {
    "configuration": "Yapılandırma", "qid": "Soru no", "role": "Rol", "answerable": "Cevaplanabilir",
    "question": "Soru", "first_rank": "İlk ilgili parçanın sırası",
    **{m: metric_label(m) for m in metrics.METRICS}, "relevant_total": "İlgili parça sayısı",
    "outcome": "Sonuç", "status": "Durum", "gated": "Eşikte tutuldu", "gate_score": "Eşik puanı",
    "gate_outcome": "Eşiğin kararı", "probability": "Cevap olasılığı", "outcome_behind_gate": "Eşik olmasa sonuç",
    "leaks": "İzin sızıntısı", "retrieval_ms": "Arama süresi (ms)", "answer_ms": "Cevap süresi (ms)",
    "top5": "İlk 5 kaynak", "answer": "Cevap",
}
YES_NO = {"True": "evet", "False": "hayır"}
CSV_VALUES = {"answerable": YES_NO, "gated": YES_NO, "outcome": OUTCOME_LABELS, "outcome_behind_gate": OUTCOME_LABELS,
              "status": STATUS_LABELS, "gate_outcome": GATE_LABELS}


def _turkish_cell(column: str, value: str, labels: Mapping[str, str]) -> str:
    if column == "configuration":
        return labels.get(value, value)
    if column in CSV_VALUES:
        return CSV_VALUES[column].get(value, value)
    try:
        float(value)
    except ValueError:
        return value
    return value.replace(".", ",") if column not in ("qid", "question", "answer", "top5") else value


def per_question_csv(folder: Path, summary: dict, *, english: bool = False) -> bytes:
    """The per-question table as downloaded: Turkish column names and values, `;`-separated with
    decimal commas and a byte-order mark (what a Turkish spreadsheet opens as columns); with
    `english`, the stored file as written (English column names, codes, `,` and `.`)."""
    stored_text = read_text(Path(folder) / PER_QUESTION)
    if english:
        return stored_text.encode("utf-8")
    labels = {c["key"]: c["label"] for c in summary["configurations"]}
    out = io.StringIO()
    reader = csv.DictReader(io.StringIO(stored_text, newline=""))
    writer = csv.writer(out, delimiter=";")
    writer.writerow([CSV_COLUMNS.get(c, c) for c in reader.fieldnames or []])
    for row in reader:
        writer.writerow([_turkish_cell(c, row[c] or "", labels) for c in reader.fieldnames or []])
    return ("\ufeff" + out.getvalue()).encode("utf-8")


# --------------------------------------------------------------------------- Turkish tables


def _ms(value: float | None) -> str:
    return MISSING if value is None else f"{number(value, 0)} ms"


def results_rows(summary: dict) -> list[dict[str, str]]:
    """One row per configuration with Turkish column names and Turkish numbers."""
    best = (summary.get("recommendation") or {}).get("best")
    chosen = (summary.get("recommendation") or {}).get("chosen")
    if right_answer_rate(summary, chosen) is not None and not recommendation_shown(summary)[0]:
        chosen = None  # below RECOMMENDATION_FLOOR: "en iyi", never "önerilen"
    rows = []
    for c in summary["configurations"]:
        r, a = c["retrieval"], c["answers"]
        op = (c.get("abstention") or {}).get("operating_point") or {}
        shown = c.get("gate_outcomes") or {"answerable": {"rates": {}}, "unanswerable": {"rates": {}}}  # older runs: —
        mark = "önerilen" if c["key"] == chosen else ("en iyi" if c["key"] == best else "")
        rows.append({
            "Yapılandırma": c["label"], "Not": mark,
            **{metric_label(m): with_ci(r.get(m)) for m in ("ndcg@10", "recall@1", "recall@5", "recall@10", "mrr@10")},
            "Doğru (cevaplanabilir)": percent_with_ci(a["answerable"]["rates"].get("correct")),
            "Cevap yok (cevaplanabilir)": percent_with_ci(a["answerable"]["rates"].get("fallback")),
            "Yanlış (cevaplanabilir)": percent_with_ci(a["answerable"]["rates"].get("wrong")),
            "Doğru geri çekilme (cevaplanamaz)": percent_with_ci(a["unanswerable"]["rates"].get("fallback")),
            "En yakın parçalar (cevaplanabilir)": percent_with_ci(shown["answerable"]["rates"].get("closest")),
            "İşaretli cümlede bilgi (en yakın parçalar)": percent_with_ci(
                (shown["answerable"].get("closest_marks") or {}).get("of_closest")),
            "Bilgiye ulaşan (doğru alıntı ya da işaretli cümle)": percent_with_ci(
                (shown["answerable"].get("closest_marks") or {}).get("fact_met")),
            "Reddedildi (cevaplanabilir)": percent_with_ci(shown["answerable"]["rates"].get("refused")),
            "Cevap verildi (cevaplanamaz)": percent_with_ci(shown["unanswerable"]["rates"].get("answered")),
            "Kapsam (bugünkü eşik)": percent(op.get("coverage")),
            "Seçici doğruluk": percent(op.get("selective_accuracy")),
            "İzin sızıntısı": integer(c["leaks"]["count"]),
            "Arama süresi (ortanca / en yavaş %5)": f"{_ms(c['latency']['retrieval_ms']['p50'])} / {_ms(c['latency']['retrieval_ms']['p95'])}",
            "Cevap süresi (ortanca / en yavaş %5)": f"{_ms(c['latency']['answer_ms']['p50'])} / {_ms(c['latency']['answer_ms']['p95'])}",
            "Dizin kurma": MISSING if c["index"].get("seconds") is None else f"{number(c['index']['seconds'], 1)} sn",
            "Parça sayısı": integer(c["index"].get("chunks")),
        })
    return rows


def comparison_rows(summary: dict) -> list[dict[str, str]]:
    labels = {c["key"]: c["label"] for c in summary["configurations"]}
    rows = []
    for comp in summary.get("comparisons", []):
        for metric, m in comp["metrics"].items():
            rows.append({"Yapılandırma": labels.get(comp["system"], comp["system"]),
                         "Karşılaştırılan (en iyi)": labels.get(comp["baseline"], comp["baseline"]),
                         "Ölçü": metric_label(metric), "Fark": signed(m["diff"]),
                         "%95 güven aralığı": f"[{signed(m['ci'][0])}; {signed(m['ci'][1])}]",
                         "p (düzeltilmiş)": number(m["p_holm"], 4),
                         "Kazanç / eşit / kayıp": f"{m['wins']} / {m['ties']} / {m['losses']}"})
    return rows


def card_rows(summary: dict) -> list[tuple[str, str]]:
    card = summary["run"]
    data, code, host = card["data"], card["code"], card["machine"]
    gold = data["gold_set"]
    commit = (code.get("commit") or "bilinmiyor")[:12]
    dirty = {True: "evet (kaydedilmemiş değişiklikler var)", False: "hayır", None: "bilinmiyor"}[code.get("dirty")]
    config = card["configuration"]
    return [
        ("Çalıştırma", f"#{card['id']} · {card['label']} · {card['created']}"),
        ("Doğrulama seti", f"{gold['name']} · sürüm {gold['version']} · {integer(data['questions'])} soru, "
                      f"{integer(data['cases'])} vaka (soru × rol)"),
        ("Doğrulama seti sha256", gold["sha256"]),
        ("Belgeler", "; ".join(f"{d['filename']} ({', '.join(d['roles'])}) sha256 {d['sha256'][:16]}…"
                               for d in data["documents"])),
        ("Veri parmak izi", data["fingerprint"]),
        ("Yapılandırmalar", f"gömme: {', '.join(config['embedders'])} · mod: {', '.join(config['modes'])} · "
                            f"parça: {', '.join(str(s) for s in config['chunk_sizes'])} · k: "
                            f"{', '.join(str(k) for k in config['ks'])} · birincil ölçü: "
                            f"{metric_label(config['primary'])}"),
        ("Cevap üreteci", str(card.get("generator") or MISSING)),
        ("Kod", f"{commit} · kaydedilmemiş değişiklik: {dirty}"),
        ("Makine", f"{host.get('hostname')} · {host.get('platform')} · {host.get('affinity') or host.get('cpu_count')} "
                   f"çekirdek · {number(host.get('memory_gb'), 1)} GB · Python {host.get('python')}"),
    ]


# --------------------------------------------------------------------------- the HTML report


def chart_image(chart) -> str:
    """An Altair chart as an <img> holding its SVG (vl-convert; nothing fetched when opened)."""
    import vl_convert

    svg = vl_convert.vegalite_to_svg(gold_charts.turkish(for_export(chart)).to_dict())
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img alt="grafik" src="data:image/svg+xml;base64,{data}">'


def _technical(lines: Sequence[tuple[str, str]]) -> str:
    """"name: value" lines folded under TECHNICAL, as `ui.technical.technical_details` shows them in the app."""
    body = "".join(f"<p>{html.escape(name)}: {html.escape(value)}</p>" for name, value in lines)
    return f'<details class="teknik"><summary>{TECHNICAL}</summary>{body}</details>'


def _table(rows: Sequence[Mapping[str, str]]) -> str:
    if not rows:
        return "<p>—</p>"
    head = "".join(f"<th>{html.escape(k)}</th>" for k in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row.values()) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _drilldown(summary: dict, cases: Sequence[dict]) -> str:
    labels = {c["key"]: c["label"] for c in summary["configurations"]}
    by_case: dict[tuple[str, str], list[dict]] = {}
    for case in cases:
        by_case.setdefault((case["qid"], case["role"]), []).append(case)
    parts = []
    for (qid, role), items in by_case.items():
        first = items[0]
        kind = "cevaplanabilir" if first["answerable"] else "cevaplanamaz"
        inner = []
        for case in items:
            s = case.get("scores") or {}
            rank = int(s["rank"]) if s.get("rank") else None
            sources = "".join(
                f"<li>{html.escape(x['filename'])} · {html.escape(x['pages'])}"
                f"{' · ' + html.escape(x['article']) if x.get('article') else ''}"
                f"{' ✓ doğru kaynak' if x['relevant'] else ''}{' ⚠ İZİNSİZ' if not x['readable'] else ''}</li>"
                for x in case["sources"][:5])
            inner.append(
                f"<h4>{html.escape(labels.get(case['configuration'], case['configuration']))}</h4>"
                f"<p>İlk doğru kaynağın sırası: {rank if rank else 'ilk 10’da yok' if first['answerable'] else '—'} · "
                f"sonuç: {html.escape(OUTCOME_LABELS.get(case['answer']['outcome'], case['answer']['outcome']))} · "
                f"durum: {html.escape(STATUS_LABELS.get(case['answer']['status'], case['answer']['status']))} · "
                f"eşik puanı: {number(case['gate']['score'])}{html.escape(gate_text(case))}</p><ol>{sources}</ol>"
                f"<pre>{html.escape(case['answer']['text'])}</pre>")
        facts = ", ".join(first.get("key_facts") or []) or "—"
        parts.append(f"<details><summary>{html.escape(qid)} · {html.escape(role)} · {kind} — "
                     f"{html.escape(first['question'])}</summary><p>Anahtar bilgiler: {html.escape(facts)}</p>"
                     + "".join(inner) + "</details>")
    return "".join(parts)


def gate_text(case: dict) -> str:
    """The three-outcome gate's decision and probability, for the drill-downs of the page and the
    report ("" for a case stored before them)."""
    outcome = case["answer"].get("gate_outcome")
    if outcome is None:
        return ""
    probability = case["answer"].get("probability")
    return (f" · kapı: {GATE_LABELS.get(outcome, outcome)}"
            + ("" if probability is None else f" (cevap olasılığı {number(probability)})"))


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1200px;color:#222;padding:0 1rem}
table{border-collapse:collapse;margin:1rem 0;font-size:.85rem;display:block;overflow-x:auto}
th,td{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}.oneri{background:#e8f5e9;border-left:4px solid #2e7d32;padding:.8rem 1rem}
.uyari{background:#fff3e0;border-left:4px solid #ef6c00;padding:.5rem 1rem}.sizinti{color:#c62828;font-weight:bold}
pre{white-space:pre-wrap;background:#fafafa;border:1px solid #eee;padding:.5rem}img{max-width:100%;margin:1rem 0}
details{border-bottom:1px solid #eee;padding:.3rem 0}summary{cursor:pointer}
"""


def render_html(summary: dict, cases: Sequence[dict]) -> str:
    """The whole report as one HTML page (see the module docstring)."""
    card = summary["run"]
    gold = card["data"]["gold_set"]
    leaks = sum(c["leaks"]["count"] for c in summary["configurations"])
    leak_text = (f'<p class="sizinti">İzin sızıntısı: {integer(leaks)} kaynak, bir rolün okuyamadığı belgeden geldi.</p>'
                 if leaks else "<p>İzin sızıntısı: 0 (hiçbir rol okuyamadığı bir belgeden kaynak görmedi).</p>")
    warnings = "".join(f"<li>{html.escape(w)}</li>" for w in summary.get("warnings", []))
    charts = "".join(f"<h3>{html.escape(title)}</h3>{chart_image(chart)}"
                     for title, chart in gold_charts.all_charts(summary))
    card_table = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in card_rows(summary))
    return f"""<!DOCTYPE html>
<html lang="tr"><head><meta charset="utf-8">
<title>Dayanak değerlendirme raporu — {html.escape(gold['name'])} s{gold['version']}</title>
<style>{STYLE}</style></head><body>
<h1>Dayanak değerlendirme raporu</h1>
<p>{html.escape(gold['name'])} · sürüm {gold['version']} · {html.escape(card['created'])}</p>
<div class="oneri"><strong>Öneri.</strong> {html.escape(recommendation_shown(summary)[1])}</div>
{leak_text}
{f'<div class="uyari"><strong>Uyarılar</strong><ul>{warnings}</ul></div>' if warnings else ''}
<h2>Çalıştırma kartı</h2><table>{card_table}</table>
<h2>Sonuçlar</h2>{_table(results_rows(summary))}
<h2>En iyi yapılandırmayla karşılaştırma: fark rastlantı olabilir mi?</h2>
<p>{html.escape(COMPARISON_NOTE)}</p>
{_table(comparison_rows(summary))}
{_technical([("Yöntem", COMPARISON_METHOD)])}
<h2>Grafikler</h2>{charts}
<h2>Soru ayrıntıları</h2>{_drilldown(summary, cases)}
</body></html>
"""
