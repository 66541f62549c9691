"""İnceleme kuyruğu: unanswered questions and rated-down answers, newest first.

Each item is closed either by marking it resolved (e.g. the answer was right after all) or by
uploading the document that answers it — the queue is the admin's to-do list for missing
documents. The upload goes through the same background job as the Dokümanlar page; the job
carries the item's id and resolves it when the document is stored (a failed upload leaves
the item open). While that job runs, the item says so.
"""

from __future__ import annotations

import streamlit as st

from ragcore.core import OUTCOME_CLOSEST, ROLE_LABELS, STATUS_NEEDS_REVIEW, User, formatting, short_id
from ragcore.documents import UPLOAD_EXTENSIONS
from ui.context import AppContext
from ui.markdown import escape_answer, escape_markdown
from ui.review_gold import render_gold_control
from ui.upload import confirm_wide_access, role_picker, upload_document


def _flash(message: str) -> None:
    st.session_state["review_flash"] = message


def review_reason(item) -> str:
    """Why the question is in the queue, as the admin reads it."""
    if item.status != STATUS_NEEDS_REVIEW:
        return "Olumsuz geri bildirim"
    if item.outcome == OUTCOME_CLOSEST:
        return "Doğrudan cevap yok, en yakın parçalar gösterildi"
    return "Cevap bulunamadı"


def render_review_page(ctx: AppContext, admin: User) -> None:
    from ragcore.answer import QuestionLogError, mark_resolved, review_queue

    st.title("İnceleme kuyruğu")
    flash = st.session_state.pop("review_flash", None)
    if flash:
        st.success(escape_markdown(flash))
    queue = review_queue(ctx.db)
    if not queue:
        st.info("Kuyruk boş: cevapsız kalan ya da olumsuz oylanan soru yok.", icon=":material/task_alt:")
        return
    st.caption(escape_markdown(f"{formatting.integer(len(queue))} açık kayıt · en yenisi üstte"))
    pending = _pending_uploads(ctx)
    for item in queue:
        reason = review_reason(item)
        header = f"{reason} · {item.username} ({ROLE_LABELS.get(item.role, item.role)}) · {formatting.date_time(item.created_at)}"
        with st.container(border=True):
            st.caption(escape_markdown(header))
            st.markdown(f"**Soru:** {escape_markdown(item.question)}")
            if item.outcome == OUTCOME_CLOSEST and item.sources:
                with st.expander("Gösterilen en yakın parçalar"):
                    for src in item.sources:
                        st.caption(escape_markdown(stored_source_label(src)))
            elif item.status != STATUS_NEEDS_REVIEW and item.answer:
                with st.expander("Verilen cevap"):
                    st.markdown(escape_answer(item.answer))  # quoted passages as quotes, the text escaped
                    for src in item.sources:
                        st.caption(escape_markdown(stored_source_label(src)))
            if item.feedback_comment:
                st.markdown(f"**Yorum:** {escape_markdown(item.feedback_comment)}")
            if item.id in pending:
                job = pending[item.id]
                st.info(escape_markdown(f"Yüklenen doküman işleniyor (iş {short_id(job.public_id)}, {job.label}); "
                                        "tamamlanınca kayıt kendiliğinden çözülür."), icon=":material/pending:")
            cols = st.columns([1, 2, 2])
            if cols[0].button("Çözüldü", key=f"review_done_{item.public_id}", icon=":material/done:"):
                try:
                    mark_resolved(ctx.db, item.id, admin.username)
                    _flash("Kayıt çözüldü olarak işaretlendi.")
                except QuestionLogError as exc:
                    st.session_state["review_flash"] = str(exc)
                st.rerun()
            with cols[1].popover("Doküman yükleyerek çöz", icon=":material/upload_file:"):
                # Roles outside the form, so a choice open to every employee asks to be confirmed.
                roles = role_picker(f"review_roles_{item.public_id}", default=(item.role,))
                confirmed = confirm_wide_access(f"review_wide_{item.public_id}", roles)
                with st.form(f"review_upload_{item.public_id}", clear_on_submit=True):
                    file = st.file_uploader("PDF ya da Word (.docx)", type=list(UPLOAD_EXTENSIONS),
                                            key=f"review_file_{item.public_id}",
                                            max_upload_size=ctx.settings.max_upload_mb)
                    title = st.text_input("Başlık (isteğe bağlı)", key=f"review_title_{item.public_id}")
                    submitted = st.form_submit_button("Yükle ve çöz", type="primary", disabled=not roles or not confirmed)
                if submitted:
                    if file is None:
                        st.error("Lütfen bir PDF ya da Word (.docx) dosyası seçin.")
                    else:
                        outcome = upload_document(ctx, admin, file.name, file.getvalue(), roles, title,
                                                  resolves_question_id=item.id, wide_access_confirmed=confirmed)
                        if outcome.ok:
                            _flash(outcome.message + " Doküman eklenince kayıt çözülecek.")
                            st.rerun()
                        st.error(escape_markdown(outcome.message))
            with cols[2]:  # the evaluation lab: this question becomes a gold question (ui/review_gold.py)
                render_gold_control(ctx, admin, item, _flash)


def stored_source_label(src: dict) -> str:
    """A source as the questions log stored it (`Source.as_dict`), labelled like the chat's."""
    start, end = src.get("page_start"), src.get("page_end")
    pages = f"s. {start}" if start == end else f"s. {start}–{end}"
    parts = [str(src.get("title") or "—")] + ([str(src["article"])] if src.get("article") else []) + [pages]
    return f"[{src.get('rank')}] " + " · ".join(parts)


def _pending_uploads(ctx: AppContext) -> dict:
    """Queued or running upload jobs by the review item they will resolve."""
    from ragcore import jobs

    return {job.resolves_question_id: job for job in jobs.list_jobs(ctx.db, active_only=True, kind=jobs.INGEST)
            if job.resolves_question_id is not None}
