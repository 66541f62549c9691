"""The jobs section of the Dokümanlar page (admin): every recent job with its real progress.

Everything shown is read from the `jobs` table on each run, so it survives a page reload, a
second browser and an app restart. While a job is queued or running the section is a
fragment re-run every REFRESH_S seconds (`st.fragment(run_every=…)`): only it re-renders,
not the page. When a job finishes, the whole page reruns once so the new document appears
in the list below. File names and error messages are shown as plain text (escaped).
"""

from __future__ import annotations

import streamlit as st

from ragcore.core import User, formatting, short_id
from ragcore.jobs import Job
from ui.context import AppContext
from ui.markdown import escape_markdown
from ui.technical import WORKER_COMMAND, technical_details

REFRESH_S = 2.0
SHOWN = 20  # newest jobs read per refresh: every active one among them is shown
FINISHED_SHOWN = 5  # and the newest finished ones (the CLI's `jobs` lists more)
_ACTIVE_SEEN = "jobs_active_seen"


def _flash(message: str, kind: str = "success") -> None:
    st.session_state["doc_flash"] = (kind, message)


def render_jobs(ctx: AppContext, admin: User) -> None:
    """The admin's jobs section; a fragment that refreshes itself while anything is active."""
    from ragcore import jobs

    if admin.role != "admin":
        return
    # What was active when the whole page was drawn; the fragment compares against it.
    active = {job.id for job in jobs.list_jobs(ctx.db, limit=SHOWN, active_only=True)}
    st.session_state[_ACTIVE_SEEN] = active
    st.fragment(_jobs_panel, run_every=REFRESH_S if active else None)(ctx)


def _jobs_panel(ctx: AppContext) -> None:
    from ragcore import jobs

    recent = jobs.list_jobs(ctx.db, limit=SHOWN)
    active = {job.id for job in recent if job.active}
    if st.session_state.get(_ACTIVE_SEEN, set()) - active:
        st.rerun()  # a job finished since the page was drawn: redraw it (the document list, the refresh)
    if not recent:
        return
    st.subheader("İşler")
    if active and not jobs.live_workers(ctx.db, ctx.settings):
        st.warning("Çalışan bir arka plan işçisi yok: işler sırada bekliyor. Uygulamayı yeniden başlatın ya da "
                   "sunucuda arka plan işçisini ayrıca başlatın.", icon=":material/pending:")
        technical_details([("İşçiyi başlatan komut", WORKER_COMMAND)])
    finished = [job for job in recent if not job.active][:FINISHED_SHOWN]
    for job in recent:
        if job.active or job in finished:
            _job_card(ctx, job)


def _job_card(ctx: AppContext, job: Job) -> None:
    from ragcore import jobs

    kind = jobs.KINDS.get(job.kind)
    with st.container(border=True):
        st.markdown("**" + escape_markdown(f"İş {short_id(job.public_id)} · {kind.label if kind else job.kind} · {job.label}") + "**")
        meta = f"{job.status_label} · {job.created_by or 'komut satırı'} · {formatting.date_time(job.created_at)}"
        if job.attempts > 1:
            meta += f" · {job.attempts}. deneme"
        st.caption(escape_markdown(meta))
        # One slot for the job's state, so a bar drawn while it ran is replaced by its outcome,
        # never left above it.
        slot = st.empty()
        if job.status == jobs.RUNNING and kind is not None and job.stage in kind.stages:
            fraction = kind.fraction(job)
            text = kind.describe_progress(job) + f" · toplam {formatting.percent(fraction, 0)}"
            if job.cancel_requested_at:
                text += " · iptal ediliyor…"
            slot.progress(fraction, text=escape_markdown(text))
        elif job.status == jobs.RUNNING:  # no stage reported yet: nothing to measure, so no empty bar
            slot.caption("Başlıyor…" + (" · iptal ediliyor…" if job.cancel_requested_at else ""))
        elif job.status == jobs.QUEUED:
            slot.caption("Sırada: bir işçi boşalınca başlar.")
        elif job.status == jobs.FAILED:
            slot.error(escape_markdown(job.error or "İş başarısız oldu."), icon=":material/error:")
        elif job.status == jobs.SUCCEEDED and kind is not None and job.result:
            slot.caption(escape_markdown(kind.summary(job.result)))
        _actions(ctx, job)


def _actions(ctx: AppContext, job: Job) -> None:
    from ragcore import jobs

    if job.active and not job.cancel_requested_at:
        if st.button("İptal et", key=f"job_cancel_{job.public_id}", icon=":material/cancel:"):
            try:
                done = jobs.cancel(ctx.db, ctx.settings, job.id)
                _flash(f"İş {short_id(job.public_id)} iptal edildi." if done.status == jobs.CANCELLED
                       else f"İş {short_id(job.public_id)} için iptal istendi; bir sonraki adımda durur ve hiçbir şey kaydetmez.")
            except jobs.JobError as exc:
                _flash(str(exc), "warning")
            st.rerun()
    elif job.status in (jobs.FAILED, jobs.CANCELLED) and _retryable(ctx, job):
        if st.button("Yeniden dene", key=f"job_retry_{job.public_id}", icon=":material/replay:"):
            try:
                jobs.retry(ctx.db, ctx.settings, job.id)
                _flash(f"İş {short_id(job.public_id)} yeniden sıraya alındı.")
            except jobs.JobError as exc:
                _flash(str(exc), "warning")
            st.rerun()


def _retryable(ctx: AppContext, job: Job) -> bool:
    from ragcore import jobs

    kind = jobs.KINDS.get(job.kind)
    return kind is not None and kind.cannot_retry(ctx.settings, job) is None
