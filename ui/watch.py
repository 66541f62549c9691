"""The watched folder on the documents page (admin): what the scans found and what failed.

The scans run in the workers (ragcore.jobs.watch); this shows their record, the failed files
first with their Turkish reasons, and queues a scan now for an admin who just copied a file in.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ragcore import jobs
from ragcore.core import format_integer
from ui.context import AppContext
from ui.jobs import remember_job
from ui.markdown import escape_markdown


def render_watch_status(ctx: AppContext) -> None:
    """Nothing without WATCH_DIR."""
    if ctx.settings.watch_dir is None:
        return
    files = jobs.watched_files(ctx.db)
    failed = sum(1 for f in files if f.state == "failed")
    title = f"İzlenen klasör: {ctx.settings.watch_dir}" + (f" · {failed} hatalı dosya" if failed else "")
    with st.expander(escape_markdown(title), expanded=bool(failed)):  # the folder's path is the admin's text
        st.caption(escape_markdown(
            f"Bir işçi bu klasörü {format_integer(round(ctx.settings.watch_interval_seconds / 60))} "
            "dakikada bir tarar: yeni dosyalar klasördeki .dayanak.toml dosyasının rolleriyle yüklenir, "
            "değişen dosya yeniden yüklenir, silinen dosyanın belgesi kaldırılır. Hatalı bir dosya, "
            "içeriği değişene kadar yeniden denenmez."))
        if st.button("Şimdi tara", key="watch_scan_now"):
            job = jobs.queue_scan(ctx.db, ctx.settings)
            if job is None:
                st.info("Sırada bekleyen bir klasör tarama işi zaten var.")
            else:
                remember_job(job.id)
                st.rerun()
        if not files:
            st.info("İzlenen klasör henüz taranmadı.")
            return
        st.dataframe(pd.DataFrame({
            "Dosya": [f.path for f in files],
            "Durum": [jobs.WATCH_STATE_LABELS.get(f.state, f.state) for f in files],
            "Sebep": [f.error or "" for f in files],
        }), hide_index=True, width="stretch")
