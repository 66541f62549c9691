"""Değerlendirme laboratuvarı: gold sets and gold runs on the company's documents, TQuAD runs,
and every earlier run (the lab's run table and the run folders under DATA_DIR/eval_runs).

Runs are background jobs; the page only submits them, shows their progress from the database
and draws results from their folders. Nothing of a run is kept in a cache shared by sessions.
"""

from __future__ import annotations

import logging
from pathlib import Path

import streamlit as st

from eval.labels import TQUAD_NAME, retriever_label
from ragcore.core import User
from ui.context import AppContext
from ui.lab_common import table
from ui.lab_gold_runs import render_gold_results, render_new_gold_run, render_run
from ui.lab_gold_sets import render_gold_sets
from ui.lab_tquad import render_new_tquad_runs, render_tquad_folder, render_tquad_run
from ui.markdown import escape_markdown
from ui.technical import technical_details, technical_expander

log = logging.getLogger(__name__)

KIND_LABELS = {"gold": "Doğrulama seti", "tquad": f"{TQUAD_NAME}: arama", "retrieval": f"{TQUAD_NAME}: arama",
               "answers": f"{TQUAD_NAME}: cevap"}
STATUS_LABELS = {"queued": "Sırada", "running": "Çalışıyor", "succeeded": "Tamamlandı", "failed": "Başarısız",
                 "cancelled": "İptal edildi"}


def render_lab_page(ctx: AppContext, admin: User) -> None:
    from eval import lab_runs

    st.title("Değerlendirme laboratuvarı")
    st.caption(escape_markdown(
        "Uygulamanın kendi koduyla, şirketin kendi soruları ve belgeleri üzerinde ölçüm: doğrulama setleri, "
        "yapılandırma karşılaştırmaları, cevap vermeme (geri çekilme) eğrisi ve izin sızıntısı denetimi; "
        f"ayrıca {TQUAD_NAME} üzerinde genel bir değerlendirme."))
    for name in lab_runs.sweep_stale_namespaces(ctx.db):
        log.info("lab page swept the stale namespace %s", name)
    tab_sets, tab_run, tab_results, tab_tquad = st.tabs(
        ["Doğrulama setleri", "Yeni çalıştırma", "Çalıştırmalar ve sonuçlar", escape_markdown(TQUAD_NAME)])
    with tab_sets:
        render_gold_sets(ctx, admin)
    with tab_run:
        render_new_gold_run(ctx, admin)
    with tab_results:
        render_runs(ctx)
    with tab_tquad:
        render_new_tquad_runs(ctx, admin)


def _rows(ctx: AppContext) -> list[dict]:
    """Every run: the lab's table, then run folders on disk that the table does not know (older runs)."""
    from eval import lab_runs
    from eval.report import list_runs, runs_root

    rows, known = [], set()
    for run in lab_runs.list_runs(ctx.db, limit=200):
        known.add(Path(run.folder).name)
        rows.append({"id": f"run:{run.id}", "kind": run.kind, "label": run.label, "status": run.status,
                     "by": run.created_by or "komut satırı",
                     "created": run.created_at.astimezone().strftime("%d.%m.%Y %H:%M"), "folder": Path(run.folder).name})
    for entry in list_runs(runs_root(ctx.settings)):
        if entry["folder"] in known:
            continue
        methods = [name for name in str(entry.get("retrievers") or "").split(",") if name]
        rows.append({"id": f"dir:{entry['path']}", "kind": entry["kind"],
                     "label": ", ".join(map(retriever_label, methods)) or KIND_LABELS.get(entry["kind"], "Çalıştırma"),
                     "status": "succeeded", "by": "—",
                     "created": (entry.get("created") or "")[:16].replace("T", " "), "folder": entry["folder"]})
    return rows


def render_runs(ctx: AppContext) -> None:
    from eval import lab_runs

    rows = _rows(ctx)
    if not rows:
        st.info("Henüz çalıştırma yok.", icon=":material/info:")
        return
    table([{"Çalıştırma": r["label"], "Tür": KIND_LABELS.get(r["kind"], r["kind"]),
            "Durum": STATUS_LABELS.get(r["status"], r["status"]), "Başlatan": r["by"], "Tarih": r["created"]}
           for r in rows], key="lab_runs_table")
    with technical_expander():  # where each run's files are, by its date and label
        table([{"Tarih": r["created"], "Çalıştırma": r["label"], "Klasör": r["folder"] or "—"} for r in rows],
              key="lab_runs_folders")
    ids = [r["id"] for r in rows]
    labels = {r["id"]: f"{r['created']} · {KIND_LABELS.get(r['kind'], r['kind'])} · {r['label']}" for r in rows}
    chosen = st.selectbox("Çalıştırma", ids, key="lab_runs_choice", format_func=lambda i: labels[i])
    if chosen.startswith("run:"):
        run = lab_runs.get_run(ctx.db, int(chosen[4:]))
        if run is None:
            return
        if run.kind == "gold":
            render_run(ctx, run.id, scope="list")
        else:
            render_tquad_run(ctx, run.id, scope="list")
        return
    folder = Path(chosen[4:])
    st.subheader(escape_markdown(labels[chosen]))
    technical_details([("Klasör", str(folder))])
    if next(r for r in rows if r["id"] == chosen)["kind"] == "gold":
        render_gold_results(folder, key=f"dir{folder.name}")
    else:
        render_tquad_folder(ctx, folder, key=f"dir{folder.name}")
