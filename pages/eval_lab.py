"""Değerlendirme laboratuvarı (admin): TQuAD retrieval sweeps and answer evaluation, interactive.

Thin on purpose: the work is `eval.sweep`, `eval.answers`, `eval.report` and `eval.charts`. Runs
are written under DATA_DIR/eval_runs and listed from disk, so earlier runs stay comparable.
Question, answer and document text is shown with `st.text`/tables, never as HTML or markdown.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from eval import charts
from eval.answers import RETRIEVERS as ANSWER_RETRIEVERS
from eval.answers import AnswerConfig, run_answers
from eval.metrics import METRICS
from eval.report import list_runs, load_run, new_run_dir, runs_root, write_retrieval_run
from eval.retrievers import known_retrievers
from eval.sweep import SweepConfig, default_embedder_factory, make_workspace, run_sweep
from eval.tquad import CHUNK_SIZES
from ui.auth import require_role
from ui.context import get_context, get_model_embedder
from ui.markdown import escape_markdown

require_role("admin")
ctx = get_context()
settings = ctx.settings


@st.cache_resource(show_spinner="TQuAD derlemi yükleniyor…")
def _workspace():
    """One workspace per server: chunk sets, BM25 indices and embeddings are reused across runs."""
    fallback = default_embedder_factory(settings)
    return make_workspace(settings, embedder_factory=lambda spec: get_model_embedder() if spec == "default"
                          else fallback(spec))


class StageBars:
    """A progress bar per stage (chunking, embedding, scoring, bootstrap …) in a container."""

    def __init__(self, container):
        self.container = container
        self.bars: dict[str, object] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage not in self.bars:
            self.bars[stage] = self.container.progress(0.0, text=escape_markdown(stage))
        fraction = 1.0 if total <= 0 else min(1.0, done / total)
        self.bars[stage].progress(fraction, text=escape_markdown(f"{stage}: {done}/{total}"))


def _fmt(value: dict) -> str:
    lo, hi = value["ci"]
    return f"{value['mean']:.3f} [{lo:.3f}–{hi:.3f}]"


def results_frame(summary: dict, run_label: str | None = None) -> pd.DataFrame:
    rows = []
    for row in summary["results"]:
        out = {"çalıştırma": run_label} if run_label else {}
        out.update({"yöntem": row["retriever"], "parça": row["chunk_size"]})
        out.update({m: _fmt(row[m]) for m in METRICS if m in row})
        if "tuned_weight" in row:
            out["w (train)"] = row["tuned_weight"]
        rows.append(out)
    return pd.DataFrame(rows)


def comparisons_frame(summary: dict) -> pd.DataFrame:
    rows = []
    for comp in summary.get("comparisons", []):
        for metric, m in comp["metrics"].items():
            rows.append({"sistem": comp["system"], "taban": comp["baseline"], "ölçü": metric,
                         "fark": round(m["diff"], 4), "GA": f"[{m['ci'][0]:+.3f}, {m['ci'][1]:+.3f}]",
                         "p (Holm)": round(m["p_holm"], 4), "kazanç/eşit/kayıp": f"{m['wins']}/{m['ties']}/{m['losses']}"})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- new runs


def render_new_retrieval_run() -> None:
    with st.form("retrieval"):
        names = st.multiselect("Arama yöntemleri", known_retrievers(), default=["bm25", "bm25-prefix5", "dense", "hybrid"])
        sizes = st.multiselect("Parça boyutları", list(CHUNK_SIZES), default=[1000])
        depth = st.slider("k (değerlendirilen sonuç sayısı)", 5, 50, 10)
        baseline = st.selectbox("Taban yöntem (karşılaştırma)", names or ["bm25"])
        submitted = st.form_submit_button("Çalıştır", type="primary")
    if not submitted:
        return
    if not names or not sizes:
        st.warning("En az bir yöntem ve bir parça boyutu seçin.")
        return
    config = SweepConfig(retrievers=names, chunk_sizes=sorted(sizes), depth=depth, baseline=baseline)
    out = new_run_dir(runs_root(settings), "retrieval")
    ws = _workspace()
    with st.status("Değerlendirme çalışıyor…", expanded=True) as status:
        result = run_sweep(settings, config, StageBars(status), workspace=ws)
        write_retrieval_run(result, out, settings, embedders=ws.loaded_embedders())
        status.update(label=escape_markdown(f"Tamamlandı: {out.name}"), state="complete")
    st.session_state["eval_selected_run"] = out.name


def render_new_answer_run() -> None:
    with st.form("answers"):
        retriever = st.selectbox("Arama (uygulamanın kendi yolu)", list(ANSWER_RETRIEVERS),
                                 help="production: uygulamanın seçtiği mod; production-<mod>: modu zorla")
        size = st.selectbox("Parça boyutu", list(CHUNK_SIZES), index=1)
        answerable = st.number_input("Cevaplanabilir soru sayısı", 10, 600, 300, step=10)
        unanswerable = st.number_input("Cevaplanamaz soru sayısı", 10, 300, 150, step=10)
        submitted = st.form_submit_button("Cevapları değerlendir", type="primary")
    if not submitted:
        return
    config = AnswerConfig(retriever=retriever, chunk_size=int(size), answerable=int(answerable),
                          unanswerable=int(unanswerable))
    out = new_run_dir(runs_root(settings), "answers")
    with st.status("Cevaplar üretiliyor…", expanded=True) as status:
        run_answers(settings, config, out, StageBars(status), workspace=_workspace())
        status.update(label=escape_markdown(f"Tamamlandı: {out.name}"), state="complete")
    st.session_state["eval_selected_run"] = out.name


# --------------------------------------------------------------------------- earlier runs


def render_retrieval_run(path, summary: dict, rows: list[dict]) -> None:
    corpus = summary["corpus"]
    st.text(f"Derlem: {corpus['articles']} makale ({corpus['excluded_train']} train makalesi dışlandı), "
            f"{corpus.get('questions', '?')} soru; parça sayıları: {corpus['chunks']}")
    st.dataframe(results_frame(summary), hide_index=True)
    comps = comparisons_frame(summary)
    if not comps.empty:
        with st.expander("Taban yönteme göre farklar (eşli bootstrap GA, işaret çevirme testi, Holm)"):
            st.dataframe(comps, hide_index=True)
    metric = st.selectbox("Çubuk grafikteki ölçü", ["recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"], index=1)
    st.altair_chart(charts.recall_bars(summary["results"], metric))
    st.altair_chart(charts.recall_curve(summary["results"]))
    systems = [f"{r['retriever']}@{r['chunk_size']}" for r in summary["results"]]
    depth = summary["run"]["configuration"].get("depth", 10)
    if len(systems) >= 2 and rows:
        a, b = st.columns(2)
        first = a.selectbox("Sistem A", systems, index=0)
        second = b.selectbox("Sistem B", systems, index=1)
        st.altair_chart(charts.rank_difference_histogram(rows, first, second, depth))
    if rows:
        render_drilldown(summary, rows, systems)
    render_downloads(path)


def render_drilldown(summary: dict, rows: list[dict], systems: list[str]) -> None:
    st.subheader("Soru ayrıntısı")
    labels = [f"{r['qid']} — {r['question'][:80]}" for r in rows]
    choice = st.selectbox("Soru", range(len(rows)), format_func=lambda i: labels[i])
    system = st.selectbox("Sistem", systems, key="drill_system")
    row = rows[choice]
    st.text(f"Soru: {row['question']}")
    st.text(f"Altın cevap: {row['gold_answer']}")
    rank = row.get(f"rank:{system}") or "ilk 10'da yok"
    st.text(f"İlk ilgili parçanın sırası: {rank}")
    size = int(system.rsplit("@", 1)[1])
    relevant = set(row.get(f"relevant@{size}", "").split())
    chunks = {c.chunk_id: c for c in _workspace().chunks(size).chunks}
    for n, chunk_id in enumerate(row.get(f"top5:{system}", "").split(), start=1):
        chunk = chunks.get(chunk_id)
        mark = "✔ İLGİLİ" if chunk_id in relevant else ""
        with st.expander(escape_markdown(f"{n}. {chunk_id} {mark}"), expanded=chunk_id in relevant):
            st.text(chunk.text if chunk else "(parça bulunamadı: derlem değişmiş olabilir)")


def render_answer_run(path, summary: dict, rows: list[dict]) -> None:
    table = []
    for group, data in summary["groups"].items():
        entry = {"grup": group, "n": data["n"]}
        for name in ("correct", "correct_not_in_context", "fallback", "wrong", "cited_gold", "gated"):
            entry[name] = _fmt(data["rates"][name])
        table.append(entry)
    st.dataframe(pd.DataFrame(table), hide_index=True)
    st.altair_chart(charts.answer_outcomes(summary["groups"]))
    if rows:
        frame = pd.DataFrame(rows)[["qid", "group", "outcome", "question", "gold_answer", "answer"]]
        st.dataframe(frame, hide_index=True)
    render_downloads(path)


def render_downloads(path) -> None:
    a, b = st.columns(2)
    a.download_button("summary.json indir", (path / "summary.json").read_bytes(), f"{path.name}-summary.json",
                      mime="application/json")
    csv = path / "per_question.csv"
    if csv.is_file():
        b.download_button("per_question.csv indir", csv.read_bytes(), f"{path.name}-per_question.csv", mime="text/csv")


def render_runs() -> None:
    runs = list_runs(runs_root(settings))
    if not runs:
        st.info("Henüz kayıtlı çalıştırma yok.")
        return
    st.dataframe(pd.DataFrame(runs).drop(columns=["path"]), hide_index=True)
    names = [r["folder"] for r in runs]
    selected = st.session_state.get("eval_selected_run")
    index = names.index(selected) if selected in names else 0
    folder = st.selectbox("Çalıştırma", names, index=index)
    run = next(r for r in runs if r["folder"] == folder)
    from pathlib import Path

    path = Path(run["path"])
    summary, rows = load_run(path)
    if run["kind"] == "answers":
        render_answer_run(path, summary, rows)
    else:
        render_retrieval_run(path, summary, rows)
    retrieval_runs = [r["folder"] for r in runs if r["kind"] == "retrieval"]
    compare = st.multiselect("Karşılaştırılacak çalıştırmalar", retrieval_runs)
    if compare:
        frames = [results_frame(load_run(Path(next(r for r in runs if r["folder"] == f)["path"]))[0], f) for f in compare]
        st.dataframe(pd.concat(frames, ignore_index=True), hide_index=True)
        with st.expander("Çalıştırma kartları (JSON)"):
            for f in compare:
                st.text(f)
                st.json(json.loads((Path(next(r for r in runs if r["folder"] == f)["path"]) / "summary.json")
                                   .read_text(encoding="utf-8"))["run"], expanded=False)


st.title("Değerlendirme laboratuvarı")
st.caption("TQuAD v0.1 dev soruları üzerinde arama ve cevap değerlendirmesi (95 % bootstrap güven aralıkları).")
tab_runs, tab_retrieval, tab_answers = st.tabs(["Sonuçlar", "Yeni arama değerlendirmesi", "Yeni cevap değerlendirmesi"])
with tab_retrieval:
    render_new_retrieval_run()
with tab_answers:
    render_new_answer_run()
with tab_runs:
    render_runs()
