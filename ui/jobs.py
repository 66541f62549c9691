"""The jobs section of the Dokümanlar page (admin): every recent job with its real progress.

Everything shown is read from the `jobs` table on each run, so it survives a page reload, a
second browser and an app restart. The section sits at the top of the page, above the upload
form, so that a job queued by pressing "Yükle" is on screen at once: every active job and every
job queued in this browser session has a card; older finished ones are folded under one line.

While a job is queued or running the section is a fragment re-run every REFRESH_S seconds
(`st.fragment(run_every=…)`): only it re-renders, not the page. The whole page reruns once
when a job's work is stored (an upload is searchable from then on, before its quotes are
ready) and once when it ends, so the document list below follows. A card names a document by
its title (the one typed, else the file name until the stored title is known), never by an
id; file names and error messages are shown as plain text (escaped).
"""

from __future__ import annotations

import streamlit as st

from ragcore.core import User, format_date_time, format_percent
from ragcore.jobs import Job
from ui.context import AppContext
from ui.markdown import escape_markdown
from ui.technical import WORKER_COMMAND, technical_details

REFRESH_S = 2.0
SHOWN = 20  # newest jobs read per refresh: every active one among them is shown
FINISHED_SHOWN = 5  # and the newest finished ones (the CLI's `jobs` lists more)
_SEEN = "jobs_seen"  # (job, work stored) of the active jobs when the page was drawn
MINE = "jobs_mine"  # the jobs queued in this browser session: they keep their card once finished


def remember_job(job_id: int | None) -> None:
    """A job just queued from this session: its card stays at the top, finished or not."""
    if job_id is not None:
        st.session_state.setdefault(MINE, []).append(job_id)


def render_jobs(ctx: AppContext, admin: User) -> None:
    """The admin's jobs section; a fragment that refreshes itself while anything is active."""
    from ragcore import jobs

    if admin.role != "admin":
        return
    # What was active, and how far, when the whole page was drawn; the fragment compares against it.
    seen = _progress_marks(jobs.list_jobs(ctx.db, limit=SHOWN, active_only=True))
    st.session_state[_SEEN] = seen
    st.fragment(_jobs_panel, run_every=REFRESH_S if seen else None)(ctx)


def _progress_marks(active: list[Job]) -> set[tuple[int, bool]]:
    return {(job.id, _stored(job)) for job in active}


def _stored(job: Job) -> bool:
    """Whether the job's work is stored (an upload's document is searchable) while it still runs."""
    from ragcore import jobs

    kind = jobs.KINDS.get(job.kind)
    stage = kind.stages.get(job.stage or "") if kind else None
    return stage is not None and stage.committed


def _jobs_panel(ctx: AppContext) -> None:
    from ragcore import jobs

    recent = jobs.list_jobs(ctx.db, limit=SHOWN)
    if st.session_state.get(_SEEN, set()) - _progress_marks([job for job in recent if job.active]):
        st.rerun()  # a document became searchable, or a job ended: redraw the page (its list, the refresh)
    if not recent:
        return
    mine = set(st.session_state.get(MINE, ()))
    carded = [job for job in recent if job.active or job.id in mine]
    others = [job for job in recent if job not in carded][:FINISHED_SHOWN]
    st.subheader("İşler")
    if any(job.active for job in recent) and not jobs.live_workers(ctx.db, ctx.settings):
        st.warning("Çalışan bir arka plan işçisi yok: işler sırada bekliyor. Uygulamayı yeniden başlatın ya da "
                   "sunucuda arka plan işçisini ayrıca başlatın.", icon=":material/pending:")
        technical_details([("İşçiyi başlatan komut", WORKER_COMMAND)])
    for job in carded:
        _job_card(ctx, job)
    if others:
        with st.expander(f"Son biten işler ({len(others)})"):
            for job in others:
                _job_card(ctx, job)


def job_subject(job: Job) -> str:
    """What a job is about, for its card: the stored document's title once known, the title
    typed at upload, else its label (the file name)."""
    return str((job.result or {}).get("title") or job.arguments.get("title") or job.label)


def _job_card(ctx: AppContext, job: Job) -> None:
    from ragcore import jobs

    kind = jobs.KINDS.get(job.kind)
    subject = job_subject(job)
    with st.container(border=True):
        st.markdown(f"**“{escape_markdown(subject)}”**")
        meta = [kind.label if kind else job.kind]
        if job.label != subject:
            meta.append(job.label)
        meta += [job.status_label, job.created_by or "komut satırı", format_date_time(job.created_at)]
        if job.attempts > 1:
            meta.append(f"{job.attempts}. deneme")
        st.caption(escape_markdown(" · ".join(meta)))
        # One slot for the job's state, so a bar drawn while it ran is replaced by its outcome,
        # never left above it.
        slot = st.empty()
        if job.status == jobs.RUNNING and kind is not None and job.stage in kind.stages:
            fraction = kind.fraction(job)
            text = kind.describe_progress(job) + f" · toplam {format_percent(fraction, 0)}"
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
                subject = job_subject(job)
                _flash(f"“{subject}” işi iptal edildi." if done.status == jobs.CANCELLED
                       else f"“{subject}” işi için iptal istendi; bir sonraki adımda durur ve hiçbir şey kaydetmez.")
            except jobs.JobError as exc:
                _flash(str(exc), "warning")
            st.rerun()
    elif job.status in (jobs.FAILED, jobs.CANCELLED) and _retryable(ctx, job):
        if st.button("Yeniden dene", key=f"job_retry_{job.public_id}", icon=":material/replay:"):
            try:
                jobs.retry(ctx.db, ctx.settings, job.id)
                _flash(f"“{job_subject(job)}” işi yeniden sıraya alındı.")
            except jobs.JobError as exc:
                _flash(str(exc), "warning")
            st.rerun()


def _flash(message: str, kind: str = "success") -> None:
    st.session_state["doc_flash"] = (kind, message)


def _retryable(ctx: AppContext, job: Job) -> bool:
    from ragcore import jobs

    kind = jobs.KINDS.get(job.kind)
    return kind is not None and kind.cannot_retry(ctx.settings, job) is None
