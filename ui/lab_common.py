"""Pieces every tab of the lab page uses: readable tables, a lab job's live progress, downloads.

Tables are dataframes (plain text, never Markdown) with Turkish column names, numbers already
formatted the Turkish way (`eval.numbers`), and `st.column_config` widths so that no column is
cut off: the table takes the page's width and scrolls sideways when it needs more.

A lab job's progress is read from the `jobs` row and the lab run row on every refresh of a
fragment (`st.fragment(run_every=…)`), so it survives a reload and shows the same in every
browser; nothing about a run lives in the session except which run the admin looks at.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd
import streamlit as st

from ragcore.core import short_id
from ragcore.jobs import Job
from ui.context import AppContext
from ui.markdown import escape_markdown
from ui.technical import WORKER_COMMAND, technical_details

REFRESH_S = 2.0
WIDE = {"Yapılandırma", "Soru", "Cevap", "Ne değişti", "Etiket", "Kaynak", "Not", "Metin", "Öneri", "Klasör",
        "Çalıştırma", "Ad"}


NO_WORKER = ("Çalışan bir arka plan işçisi yok: iş sırada bekliyor. Uygulamayı yeniden başlatın ya da sunucuda "
             "arka plan işçisini ayrıca başlatın.")


def table(rows: Sequence[dict] | pd.DataFrame, *, key: str | None = None, height: int | None = None) -> None:
    """A dataframe that fits: the page's width, wide text columns, the rest small."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if frame.empty:
        st.caption("Gösterilecek satır yok.")
        return
    config = {column: st.column_config.TextColumn(column, width="large" if column in WIDE else "small")
              for column in frame.columns}
    st.dataframe(frame.astype(str), hide_index=True, width="stretch", column_config=config, key=key,
                 height=height or "auto")


def download(label: str, path: Path, name: str, mime: str, key: str) -> None:
    """A download whose bytes are read only when clicked (the page does not hold the file)."""
    if path.is_file():
        st.download_button(escape_markdown(label), data=lambda: path.read_bytes(), file_name=name, mime=mime, key=key,
                           icon=":material/download:")


def job_progress(ctx: AppContext, job_id: int, *, on_finished: Callable[[Job], None], scope: str) -> None:
    """The job's progress bar, refreshed every REFRESH_S seconds while it runs; `on_finished` once done.

    `scope` keeps widget keys apart when one run is shown in two tabs."""
    from ragcore import jobs

    try:
        job = jobs.get_job(ctx.db, job_id)
    except jobs.JobNotFound:
        st.warning("Ölçüm işi bulunamadı.")
        return
    st.fragment(_progress_panel, run_every=REFRESH_S if job.active else None)(ctx, job_id, job.active, on_finished,
                                                                              scope)


def _progress_panel(ctx: AppContext, job_id: int, was_active: bool, on_finished: Callable[[Job], None],
                    scope: str) -> None:
    from eval import lab_runs
    from ragcore import jobs

    job = jobs.get_job(ctx.db, job_id)
    if was_active and not job.active:
        st.rerun()  # finished since the page was drawn: draw the results (and stop refreshing)
    kind = jobs.KINDS.get(job.kind)
    run = lab_runs.run_for_job(ctx.db, job.id)
    head = f"İş {short_id(job.public_id)} · {kind.label if kind else job.kind} · {job.status_label}"
    if job.attempts > 1:
        head += f" · {job.attempts}. deneme"
    st.caption(escape_markdown(head))
    if job.status == jobs.RUNNING and kind is not None:
        text = kind.describe_progress(job)
        detail = (run.progress.get("configuration") if run else "") or ""
        if detail:
            text += f" · {detail}"
        if job.cancel_requested_at:
            text += " · iptal ediliyor…"
        st.progress(kind.fraction(job), text=escape_markdown(text))
    elif job.status == jobs.QUEUED:
        st.progress(0.0, text="Sırada: bir işçi boşalınca başlar.")
        if not jobs.live_workers(ctx.db, ctx.settings):
            st.warning(NO_WORKER, icon=":material/pending:")
            technical_details([("İşçiyi başlatan komut", WORKER_COMMAND)])
    elif job.status == jobs.FAILED:
        st.error(escape_markdown(job.error or "İş başarısız oldu."), icon=":material/error:")
    elif job.status == jobs.CANCELLED:
        st.info("İş iptal edildi; bitmiş sorular saklandı, “Kaldığı yerden sürdür” ile devam eder.",
                icon=":material/cancel:")
    _controls(ctx, job, scope)
    if not job.active:
        on_finished(job)


def _controls(ctx: AppContext, job: Job, scope: str) -> None:
    from ragcore import jobs

    if job.active and not job.cancel_requested_at:
        if st.button("İptal et", key=f"lab_cancel_{scope}_{job.public_id}", icon=":material/cancel:"):
            try:
                jobs.cancel(ctx.db, ctx.settings, job.id)
            except jobs.JobError as exc:
                st.warning(escape_markdown(str(exc)))
            st.rerun()
    elif job.status in (jobs.FAILED, jobs.CANCELLED):
        if st.button("Kaldığı yerden sürdür", key=f"lab_retry_{scope}_{job.public_id}", icon=":material/replay:"):
            try:
                jobs.retry(ctx.db, ctx.settings, job.id)
            except jobs.JobError as exc:
                st.warning(escape_markdown(str(exc)))
            st.rerun()
