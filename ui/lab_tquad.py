"""The lab's TQuAD side: a retrieval sweep and the answer evaluation as background jobs
(`lab_tquad`, `lab_answers`), and the results of such runs (new ones and earlier folders).

Each run builds its own workspace inside its job (no workspace shared between sessions or
runs); chunk texts for the drill-down are re-made from the corpus with the production chunker
(a pure function of the data, cached once per process).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd
import streamlit as st

from eval import charts
from eval.answers import RETRIEVERS as ANSWER_RETRIEVERS
from eval.gold_charts import TURKISH
from eval.gold_stats import RESULTS, metric_label, metrics_help
from eval.labels import RESULT_LABELS, TQUAD_NAME, retriever_label, system_label
from eval.metrics import METRICS
from eval.numbers import number, percent_with_ci, signed, with_ci
from ragcore.core import User
from ui.context import AppContext
from ui.lab_common import download, job_progress, table, unquoted
from ui.markdown import escape_markdown
from ui.technical import technical_details

CHUNK_SIZES = (500, 1000, 1500)
CURRENT = "lab_tquad_current_run"
METRIC_NAMES = {m: metric_label(m) for m in ("recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10")}
GROUP_LABELS = {"answerable": "cevaplanabilir", "unanswerable": "cevaplanamaz"}
RATE_LABELS = {"correct": "Doğru", "correct_not_in_context": "Doğru (bağlamda yok)", "fallback": "Cevap yok",
               "wrong": "Yanlış", "cited_gold": "Doğru kaynağı gösterdi", "gated": "Eşik reddetti"}
# What the user met (eval.answers.RESULTS), for runs that recorded the gate's three outcomes.
RESULT_NAMES = {name: RESULT_LABELS[name] for name in (*RESULTS, "answered")}
DOWNLOADS = {"summary.json": "Özet (JSON)", "per_question.csv": "Soru başına sonuçlar (CSV)"}


@lru_cache(maxsize=4)
def _chunks(tquad_dir: str, size: int):
    from eval.tquad import cached_corpus, chunk_corpus

    return {c.chunk_id: c for c in chunk_corpus(cached_corpus(tquad_dir), size).chunks}


# --------------------------------------------------------------------------- new runs


def render_new_tquad_runs(ctx: AppContext, admin: User) -> None:
    from eval.retrievers import known_retrievers

    st.caption(escape_markdown(f"{TQUAD_NAME}: Türkçe Vikipedi makaleleri üzerine yazılmış, herkese açık bir "
                               "soru-cevap seti. Şirket belgelerinden bağımsız, genel bir arama ve cevap ölçümü "
                               "verir (arka plan işi olarak çalışır)."))
    technical_details([("Veri seti", f"TQuAD v0.1, dev bölümü (TQUAD_DIR = {ctx.settings.tquad_dir}); ağırlık "
                                     "ayarında kullanılan train makaleleri dışlanır"),
                       ("Yöntem kodları", ", ".join(known_retrievers()))])
    left, right = st.columns(2)
    with left, st.form("lab_tquad_retrieval"):
        st.markdown("**Arama değerlendirmesi**")
        names = st.multiselect("Arama yöntemleri", known_retrievers(), default=["production", "bm25"],
                               key="lab_tq_retrievers", format_func=retriever_label)
        sizes = st.multiselect("Parça boyutları", list(CHUNK_SIZES), default=[1000], key="lab_tq_sizes")
        depth = st.slider("Değerlendirilen sonuç sayısı", 5, 50, 10, key="lab_tq_depth",
                          help="Her soru için ilk kaç arama sonucuna bakıldığı.")
        baseline = st.selectbox("Karşılaştırma tabanı", names or ["bm25"], key="lab_tq_baseline",
                                format_func=retriever_label, help="Diğer yöntemler bu yönteme göre karşılaştırılır.")
        retrieval = st.form_submit_button("Çalıştır", type="primary", icon=":material/play_arrow:")
    with right, st.form("lab_tquad_answers"):
        st.markdown("**Cevap değerlendirmesi**")
        retriever = st.selectbox("Arama (uygulamanın kendi yolu)", list(ANSWER_RETRIEVERS), key="lab_ta_retriever",
                                 format_func=retriever_label,
                                 help="Uygulamanın kendi araması: kendi seçtiği modla ya da burada seçilen modla.")
        size = st.selectbox("Parça boyutu", list(CHUNK_SIZES), index=1, key="lab_ta_size")
        answerable = st.number_input("Cevaplanabilir soru sayısı", 10, 600, 300, step=10, key="lab_ta_answerable")
        unanswerable = st.number_input("Cevaplanamaz soru sayısı", 10, 300, 150, step=10, key="lab_ta_unanswerable")
        answers = st.form_submit_button("Cevapları değerlendir", type="primary", icon=":material/play_arrow:")
    if retrieval:
        if not names or not sizes:
            st.warning("En az bir yöntem ve bir parça boyutu seçin.")
        else:
            _submit(ctx, admin, "tquad", {"retrievers": names, "chunk_sizes": sorted(sizes), "depth": depth,
                                          "baseline": baseline})
    if answers:
        _submit(ctx, admin, "answers", {"retriever": retriever, "chunk_size": int(size), "answerable": int(answerable),
                                        "unanswerable": int(unanswerable)})
    run_id = st.session_state.get(CURRENT)
    if run_id is not None:
        render_tquad_run(ctx, run_id, scope="new")


def _submit(ctx: AppContext, admin: User, kind: str, configuration: dict) -> None:
    from eval.jobs import submit_tquad
    from ragcore.jobs import JobError

    try:
        run, _ = submit_tquad(ctx.db, ctx.settings, kind, configuration, created_by=admin.username)
    except JobError as exc:
        st.error(escape_markdown(str(exc)))
        return
    st.session_state[CURRENT] = run.id


def render_tquad_run(ctx: AppContext, run_id: int, *, scope: str) -> None:
    from eval import lab_runs

    run = lab_runs.get_run(ctx.db, run_id)
    if run is None:
        return
    st.subheader(escape_markdown(f"Çalıştırma #{run.id}: {run.label}"))

    def finished(job) -> None:
        folder = Path(run.folder)
        if (folder / "summary.json").is_file():
            render_tquad_folder(ctx, folder, key=f"{scope}{run.id}")

    if run.job_id is not None:
        job_progress(ctx, run.job_id, on_finished=finished, scope=scope)


# --------------------------------------------------------------------------- results


def render_tquad_folder(ctx: AppContext, folder: Path, *, key: str) -> None:
    from eval.report import load_run

    summary, rows = load_run(folder)
    if summary.get("run", {}).get("kind") == "answers":
        _answer_run(folder, summary, rows, key)
    else:
        _retrieval_run(ctx, folder, summary, rows, key)


def _cells(row: dict) -> dict[str, str]:
    return {METRIC_NAMES[m]: with_ci(row[m]) for m in METRICS if m in row}


def results_rows(summary: dict) -> list[dict[str, str]]:
    out = []
    for row in summary["results"]:
        entry = {"Yöntem": retriever_label(row["retriever"]), "Parça boyutu": str(row["chunk_size"]), **_cells(row)}
        if "tuned_weight" in row:
            entry["Ağırlık (ayar makalelerinde seçildi)"] = number(row["tuned_weight"], 2)
        out.append(entry)
    return out


def comparison_rows(summary: dict) -> list[dict[str, str]]:
    rows = []
    for comp in summary.get("comparisons", []):
        for metric, m in comp["metrics"].items():
            rows.append({"Sistem": system_label(comp["system"]), "Taban": system_label(comp["baseline"]),
                         "Ölçü": METRIC_NAMES.get(metric, metric), "Fark": signed(m["diff"]),
                         "%95 güven aralığı": f"[{signed(m['ci'][0])}; {signed(m['ci'][1])}]",
                         "p (düzeltilmiş)": number(m["p_holm"], 4),
                         "Kazanç / eşit / kayıp": f"{m['wins']} / {m['ties']} / {m['losses']}"})
    return rows


def _retrieval_run(ctx: AppContext, folder: Path, summary: dict, rows: list[dict], key: str) -> None:
    corpus = summary["corpus"]
    chunks = ", ".join(f"{size} karakterde {number(int(n), 0)}" for size, n in corpus["chunks"].items())
    st.text(f"Derlem: {corpus['articles']} makale ({corpus['excluded_train']} ağırlık ayarı makalesi dışlandı), "
            f"{corpus.get('questions', '?')} soru; parça sayıları: {chunks}")
    table(results_rows(summary), key=f"lab_tq_results_{key}")
    comparisons = comparison_rows(summary)
    if comparisons:
        with st.expander("Karşılaştırma tabanına göre farklar"):
            table(comparisons, key=f"lab_tq_comp_{key}")
            technical_details([("Yöntem", "eşli bootstrap güven aralığı; işaret çevirme testi; p değerleri Holm "
                                          "yöntemiyle düzeltilir")])
    metric = st.selectbox("Çubuk grafikteki ölçü", list(METRIC_NAMES), index=1, key=f"lab_tq_metric_{key}",
                          format_func=lambda m: METRIC_NAMES[m], help=escape_markdown(metrics_help(list(METRIC_NAMES))))
    st.altair_chart(charts.recall_bars(summary["results"], metric).configure(locale=TURKISH), width="stretch")
    st.altair_chart(charts.recall_curve(summary["results"]).configure(locale=TURKISH), width="stretch")
    systems = [f"{r['retriever']}@{r['chunk_size']}" for r in summary["results"]]
    depth = summary["run"]["configuration"].get("depth", 10)
    if len(systems) >= 2 and rows:
        a, b = st.columns(2)
        first = a.selectbox("Sistem A", systems, index=0, key=f"lab_tq_a_{key}", format_func=system_label)
        second = b.selectbox("Sistem B", systems, index=1, key=f"lab_tq_b_{key}", format_func=system_label)
        st.altair_chart(charts.rank_difference_histogram(rows, first, second, depth).configure(locale=TURKISH),
                        width="stretch")
    if rows:
        _drilldown(ctx, rows, systems, key)
    _downloads(folder, key)


def _drilldown(ctx: AppContext, rows: list[dict], systems: list[str], key: str) -> None:
    st.subheader("Soru ayrıntısı")
    labels = [f"{r['qid']} — {r['question'][:80]}" for r in rows]
    choice = st.selectbox("Soru", range(len(rows)), format_func=lambda i: labels[i], key=f"lab_tq_q_{key}")
    system = st.selectbox("Sistem", systems, key=f"lab_tq_sys_{key}", format_func=system_label)
    row = rows[choice]
    st.text(f"Soru: {row['question']}")
    st.text(f"Beklenen cevap: {row['gold_answer']}")
    st.text(f"İlk ilgili parçanın sırası: {row.get(f'rank:{system}') or 'ilk 10’da yok'}")
    size = int(system.rsplit("@", 1)[1])
    relevant = set(row.get(f"relevant@{size}", "").split())
    chunks = _chunks(str(ctx.settings.tquad_dir), size)
    for n, chunk_id in enumerate(row.get(f"top5:{system}", "").split(), start=1):
        chunk = chunks.get(chunk_id)
        mark = " ✔ İLGİLİ" if chunk_id in relevant else ""
        with st.expander(escape_markdown(f"{n}. parça{mark}"), expanded=chunk_id in relevant):
            st.text(chunk.text if chunk else "(parça bulunamadı: derlem değişmiş olabilir)")


def _answer_run(folder: Path, summary: dict, rows: list[dict], key: str) -> None:
    groups = summary["groups"]
    if all("results" in data for data in groups.values()):  # what the user met: answer, closest, refusal
        table([{"Grup": GROUP_LABELS.get(group, group), "Soru": str(data["n"]),
                **{label: percent_with_ci(data["results"][name]) for name, label in RESULT_NAMES.items()}}
               for group, data in groups.items()], key=f"lab_ta_results_{key}")
    table([{"Grup": GROUP_LABELS.get(group, group), "Soru": str(data["n"]),
            **{label: percent_with_ci(data["rates"][name]) for name, label in RATE_LABELS.items()}}
           for group, data in groups.items()], key=f"lab_ta_rates_{key}")
    st.altair_chart(charts.answer_outcomes(summary["groups"]).configure(locale=TURKISH), width="stretch")
    if rows:
        three = "result" in rows[0]  # a run that recorded what the user met
        outcome, names = ("result", RESULT_NAMES) if three else ("outcome", RATE_LABELS)
        frame = pd.DataFrame(rows)[["qid", "group", outcome, "question", "gold_answer", "answer"]]
        frame.columns = ["Kimlik", "Grup", "Sonuç", "Soru", "Beklenen cevap", "Cevap"]
        frame["Grup"] = frame["Grup"].map(lambda g: GROUP_LABELS.get(g, g))
        frame["Cevap"] = frame["Cevap"].map(lambda a: unquoted(str(a)))
        frame["Sonuç"] = frame["Sonuç"].map(lambda o: names.get(o, o))
        table(frame, key=f"lab_ta_rows_{key}", height=360, wrap=True)
    _downloads(folder, key)


def _downloads(folder: Path, key: str) -> None:
    a, b = st.columns(2)
    with a:
        download(DOWNLOADS["summary.json"], folder / "summary.json", f"{folder.name}-summary.json", "application/json",
                 f"lab_tq_json_{key}")
    with b:
        download(DOWNLOADS["per_question.csv"], folder / "per_question.csv", f"{folder.name}-per_question.csv", "text/csv",
                 f"lab_tq_csv_{key}")
