"""Pieces every tab of the lab page uses: readable tables, a lab job's live progress, downloads.

Tables are dataframes (plain text, never Markdown) with Turkish column names, numbers already
formatted the Turkish way (`eval.numbers`, so they stay text columns: a NumberColumn would print
them with the browser's decimal mark), and `st.column_config` widths: a column is as wide as its
content (a fixed "small" cut "0,926 [0,880; 0,950]" short), long free text gets a bounded width
and, with `wrap`, taller rows in which it wraps, and the first column (what a row is about) stays
pinned when a wide table scrolls sideways. Tables a reader compares at a glance are kept narrow
enough not to scroll at 1280 px by their callers (the rest of the columns go to an expander).

A lab job's progress is read from the `jobs` row and the lab run row on every refresh of a
fragment (`st.fragment(run_every=…)`), so it survives a reload and shows the same in every
browser; nothing about a run lives in the session except which run the admin looks at.
"""

from __future__ import annotations

import re
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
PIN_FROM = 6  # columns: a table this wide may scroll sideways, so its first column stays in view
LONG_TEXT = 60  # characters: a cell longer than this is free text (a question, an answer, a passage)
WRAPPED_ROW_PX = 72  # Streamlit wraps a cell's text only in rows taller than 4rem: three lines


NO_WORKER = ("Çalışan bir arka plan işçisi yok: iş sırada bekliyor. Uygulamayı yeniden başlatın ya da sunucuda "
             "arka plan işçisini ayrıca başlatın.")


def _width(values: pd.Series) -> str | None:
    """"large" for free text (its width bounded), None (as wide as the content) for the rest."""
    return "large" if values.str.len().max() > LONG_TEXT else None


def table(rows: Sequence[dict] | pd.DataFrame, *, key: str | None = None, height: int | None = None,
          wrap: bool = False) -> None:
    """A dataframe that fits: the page's width, columns as wide as their content, free text
    bounded (and wrapped over taller rows with `wrap`), the first column of a wide one pinned."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if frame.empty:
        st.caption("Gösterilecek satır yok.")
        return
    frame = frame.astype(str)
    config = {column: st.column_config.TextColumn(column, width=_width(frame[column]), pinned=index == 0 and len(frame.columns) >= PIN_FROM)
              for index, column in enumerate(frame.columns)}
    st.dataframe(frame, hide_index=True, width="stretch", column_config=config, key=key, height=height or "auto",
                 row_height=WRAPPED_ROW_PX if wrap else None)


def unquoted(text: str) -> str:
    """An answer for a table cell: its "> " quote markers dropped (a cell shows them literally)."""
    return re.sub(r"(?m)^> ", "", text)


def download(label: str, path: Path, name: str, mime: str, key: str, *,
             render: Callable[[], bytes] | None = None) -> None:
    """A download whose bytes are made only when clicked (the page does not hold the file).

    A run card kept in docs/eval_runs stores its per-case files gzip-compressed and no report
    (eval.report.slim_run): the file is served unpacked, and `render` (when given) makes a file the
    folder does not hold, or shapes the one it holds."""
    from eval.report import read_bytes, stored

    if render is None and stored(path) is None:
        return
    st.download_button(escape_markdown(label), data=render or (lambda: read_bytes(path)), file_name=name, mime=mime,
                       key=key, icon=":material/download:")


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
