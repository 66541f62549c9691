"""İnceleme kuyruğu: unanswered questions and rated-down answers, grouped and ranked.

The same question asked again, or nearly so (`ragcore.answer.question_key`), is one group: its
count, when it was first and last asked, the roles that asked and how often its answer was
rated down; the groups most asked (then most rated down) come first, so the admin sees what to
fix first. Questions the gate refused with nothing related in the documents ("Yarın İstanbul'da
hava nasıl olacak?") are off-topic: they sit apart, folded, below the documents' gaps.

A group is closed as a whole: marked resolved (e.g. the answer was right after all), by
uploading the document that answers it (the job resolves the group when the document is stored;
a failed upload leaves it open), by turning it into a gold question, or by adding a row to the
term table when the question used an everyday word the laws do not. The upload goes through the
same background job as the Dokümanlar page; while it runs, the group says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import streamlit as st

from ragcore.access import role_labels
from ragcore.answer import GroupedQueue, ReviewGroup
from ragcore.core import (
    OUTCOME_CLOSEST,
    ROLE_LABELS,
    STATUS_NEEDS_REVIEW,
    User,
    format_date_time,
    format_integer,
)
from ragcore.documents import KINDS_TEXT, UPLOAD_EXTENSIONS
from ui.context import AppContext
from ui.jobs import job_subject
from ui.markdown import escape_answer, escape_markdown
from ui.review_gold import render_gold_control
from ui.upload import (
    confirm_wide_access,
    reader_label,
    revision_elsewhere,
    role_picker,
    upload_document,
    uploader_in_turkish,
)

OFF_TOPIC_HELP = ("Sohbetin dokümanlarda ilgili hiçbir şey bulamayıp “dokümanlarda yok” dediği sorular (hava "
                  "durumu, yemek listesi gibi). Çoğu kez yapılacak bir şey yoktur; şirkete ait bir belgeyle "
                  "cevaplanabilecekse onu yükleyin.")


def _flash(message: str) -> None:
    st.session_state["review_flash"] = message


def review_reason(item) -> str:
    """Why the question is in the queue, as the admin reads it."""
    if item.status != STATUS_NEEDS_REVIEW:
        return "Olumsuz geri bildirim"
    if item.outcome == OUTCOME_CLOSEST:
        return "Doğrudan cevap yok, en yakın parçalar gösterildi"
    return "Cevap bulunamadı"


def group_summary(group: ReviewGroup, labels: Mapping[str, str] = ROLE_LABELS) -> str:
    """"3 kez soruldu · 👎 1 · ilk 05.12.2026 10:02, son 05.12.2026 12:40 · soranlar: İSG, Tüm personel"
    (`labels`: the roles registry's names, so a role an admin made reads by its label)."""
    parts = [f"{format_integer(group.count)} kez soruldu" if group.count > 1 else "1 kez soruldu"]
    if group.rated_down:
        parts.append(f"👎 {format_integer(group.rated_down)}")
    if group.count > 1:
        parts.append(f"ilk {format_date_time(group.first_at)}, son {format_date_time(group.last_at)}")
    else:
        parts.append(format_date_time(group.last_at))
    parts.append("soran roller: " + ", ".join(reader_label(reader, labels) for reader in group.roles))
    return " · ".join(parts)


def group_reasons(group: ReviewGroup) -> str:
    """Why the group's askings are in the queue, each reason with its count."""
    counts: dict[str, int] = {}
    for item in group.items:
        counts[review_reason(item)] = counts.get(review_reason(item), 0) + 1
    return ", ".join(f"{reason} ({n})" if group.count > 1 else reason for reason, n in counts.items())


def render_review_page(ctx: AppContext, admin: User) -> None:
    from ragcore.answer import review_groups

    st.title("İnceleme kuyruğu")
    flash = st.session_state.pop("review_flash", None)
    if flash:
        st.success(escape_markdown(flash))
    queue = review_groups(ctx.db)
    if not queue.open_items:
        st.info("Kuyruk boş: cevapsız kalan ya da olumsuz oylanan soru yok.", icon=":material/task_alt:")
        return
    st.caption(escape_markdown(_overview(queue)))
    uploader_in_turkish(ctx.settings.max_upload_mb)
    pending = _pending_uploads(ctx)
    for group in queue.groups:
        _group_card(ctx, admin, group, pending, details=True)
    if queue.off_topic:
        asked = sum(g.count for g in queue.off_topic)
        label = f"Konu dışı sorular: {format_integer(len(queue.off_topic))} soru, {format_integer(asked)} kez soruldu"
        with st.expander(escape_markdown(label), icon=":material/block:"):
            st.caption(OFF_TOPIC_HELP)
            for group in queue.off_topic:
                _group_card(ctx, admin, group, pending, details=False)


def _overview(queue: GroupedQueue) -> str:
    text = (f"{format_integer(len(queue.groups))} soru ({format_integer(sum(g.count for g in queue.groups))} "
            "açık kayıt) · en sık sorulan, sonra en çok olumsuz oylanan üstte. Aynı ya da neredeyse aynı sorular "
            "(büyük-küçük harf, Türkçe harfler, ekler ve noktalama farkıyla) tek soru olarak sayılır.")
    if queue.off_topic:
        text += f" Konu dışı sorular ({format_integer(len(queue.off_topic))}) en altta, ayrı."
    return text


def _group_card(ctx: AppContext, admin: User, group: ReviewGroup, pending: dict, *, details: bool) -> None:
    """One group: the question, how often and by whom, its askings, the actions for all of them.
    `details`: the askings in an expander (an expander cannot hold another, so the off-topic
    list, itself an expander, lists them as lines)."""
    item = group.newest  # the group's widgets are keyed by it
    with st.container(border=True):
        st.markdown(f"**{escape_markdown(group.question)}**")
        labels = role_labels(ctx.db)
        st.caption(escape_markdown(group_summary(group, labels)))
        st.caption(escape_markdown(group_reasons(group)))
        if details:
            with st.expander(escape_markdown(f"Soruluşlar ({group.count})") if group.count > 1 else "Ayrıntılar"):
                for asked in group.items:
                    _asking(asked, labels)
        else:
            for asked in group.items:
                st.caption(escape_markdown(_asking_header(asked, labels)))
        job = next((pending[i] for i in group.ids if i in pending), None)
        if job is not None:
            st.info(escape_markdown(f"Yüklenen doküman işleniyor (“{job_subject(job)}”); tamamlanınca bu soru "
                                    "kendiliğinden çözülür."), icon=":material/pending:")
        with st.container(horizontal=True, gap="small"):
            if st.button("Çözüldü", key=f"review_done_{item.public_id}", icon=":material/done:",
                         help="Bu sorunun bütün soruluşlarını çözüldü olarak işaretler."):
                _resolve(ctx, admin, group)
            _upload_control(ctx, admin, group)
            render_gold_control(ctx, admin, item, _flash, resolve=lambda: _resolve_text(ctx, admin, group))
            _expansion_control(ctx, admin, group, _flash)


def _asking_header(item, labels: Mapping[str, str]) -> str:
    return (f"{review_reason(item)} · {item.username} ({reader_label(item.role, labels)}) · "
            f"{format_date_time(item.created_at)}")


def _asking(item, labels: Mapping[str, str]) -> None:
    """One asking of the question: who, when, why, what they were shown, their comment."""
    st.caption(escape_markdown(_asking_header(item, labels)))
    st.markdown(f"**Soru:** {escape_markdown(item.question)}")
    if item.outcome == OUTCOME_CLOSEST and item.sources:
        st.markdown("*Gösterilen en yakın parçalar:*")
        for src in item.sources:
            st.caption(escape_markdown(stored_source_label(src)))
    elif item.status != STATUS_NEEDS_REVIEW and item.answer:
        st.markdown("*Verilen cevap:*")
        st.markdown(escape_answer(item.answer))  # quoted passages as quotes, the text escaped
        for src in item.sources:
            st.caption(escape_markdown(stored_source_label(src)))
    if item.feedback_comment:
        st.markdown(f"**Yorum:** {escape_markdown(item.feedback_comment)}")


def _resolve_text(ctx: AppContext, admin: User, group: ReviewGroup) -> str:
    """Resolve the group; a Turkish sentence saying what happened."""
    from ragcore.answer import QuestionLogError, mark_group_resolved

    try:
        count = mark_group_resolved(ctx.db, group.ids, admin.username)
    except QuestionLogError as exc:
        return str(exc)
    return "Soru çözüldü olarak işaretlendi." if count == 1 else \
        f"Soru çözüldü olarak işaretlendi ({format_integer(count)} soruluş)."


def _resolve(ctx: AppContext, admin: User, group: ReviewGroup) -> None:
    _flash(_resolve_text(ctx, admin, group))
    st.rerun()


def _upload_control(ctx: AppContext, admin: User, group: ReviewGroup) -> None:
    item = group.newest
    with st.popover("Doküman yükleyerek çöz", icon=":material/upload_file:"):
        # Roles outside the form, so a choice open to every employee asks to be confirmed.
        roles = role_picker(f"review_roles_{item.public_id}", default=group.roles)
        confirmed = confirm_wide_access(f"review_wide_{item.public_id}", roles)
        with st.form(f"review_upload_{item.public_id}", clear_on_submit=True, enter_to_submit=False):
            file = st.file_uploader(escape_markdown(KINDS_TEXT), type=list(UPLOAD_EXTENSIONS),
                                    key=f"review_file_{item.public_id}",
                                    max_upload_size=ctx.settings.max_upload_mb)
            title = st.text_input("Başlık (isteğe bağlı)", key=f"review_title_{item.public_id}")
            submitted = st.form_submit_button("Yükle ve çöz", type="primary", disabled=not roles or not confirmed)
        if submitted:
            if file is None:
                st.error(escape_markdown(f"Lütfen bir {KINDS_TEXT} dosyası seçin."))
            else:
                outcome = upload_document(ctx, admin, file.name, file.getvalue(), roles, title,
                                          resolves_question_id=item.id, wide_access_confirmed=confirmed)
                if outcome.ok:
                    _flash(outcome.message + " Doküman eklenince bu sorunun bütün soruluşları çözülecek.")
                    st.rerun()
                st.error(escape_markdown(outcome.message if outcome.revision_of is None
                                         else revision_elsewhere(outcome.revision_of)))


def _expansion_control(ctx: AppContext, admin: User, group: ReviewGroup, flash: Callable[[str], None]) -> None:
    """A term-table row from the question: the everyday word it used, the laws' term for it."""
    from ragcore.retrieval import ExpansionError, save_expansion

    item = group.newest
    with st.popover("Terim eşleştirmesi ekle", icon=":material/translate:"):
        st.caption(escape_markdown(f"Soru: {group.question}"))
        with st.form(f"review_term_{item.public_id}", clear_on_submit=True, enter_to_submit=False):
            everyday = st.text_input("Sorudaki günlük ifade", key=f"review_term_everyday_{item.public_id}",
                                     placeholder="ör. maaş")
            legal = st.text_input("Kanundaki terimler (virgülle ayırın)", key=f"review_term_legal_{item.public_id}",
                                  placeholder="ör. ücret")
            resolve = st.checkbox("Soruyu çözüldü olarak işaretle", value=True,
                                  key=f"review_term_resolve_{item.public_id}")
            submitted = st.form_submit_button("Eşleştirmeyi ekle", type="primary")
        if not submitted:
            return
        try:
            row = save_expansion(ctx.db, everyday, legal, updated_by=admin.username)
        except ExpansionError as exc:
            st.error(escape_markdown(str(exc)))
            return
        message = f"Terim eşleştirmesi eklendi: {row.everyday} → {', '.join(row.legal)}."
        if resolve:
            message += " " + _resolve_text(ctx, admin, group)
        flash(message)
        st.rerun()


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
