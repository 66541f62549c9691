"""Denetim (admin and denetçi): the audit trail and the usage dashboard, read-only.

The page says first, in Turkish, what the questions log records and for how long
(AUDIT_RETENTION_DAYS); then the filters (user, role, document, outcome, dates), the matching
rows a page at a time with every passage each asker was shown, the CSV file for Excel, and the
usage charts (`ui.audit_charts`) over the same filters. Nothing here writes: an auditor reads
every user's questions, which is the page's purpose, and changes nothing. Everyone else is
refused twice: navigation does not register the page for them, and `require_audit_reader`
stops it anyway; the queries refuse them a third time (`ragcore.audit.require_audit_reader`).
"""

from __future__ import annotations

from datetime import date

import pandas as pd
import streamlit as st

from ragcore.access import role_labels
from ragcore.audit import (
    OUTCOME_LABELS,
    AuditFilter,
    AuditFilterError,
    AuditRow,
    asking_users,
    audit_page,
    can_read_audit,
    csv_chunks,
    csv_filename,
    role_label,
    role_names,
    shown_documents,
    usage,
)
from ragcore.core import User, format_date_time, format_integer
from ui import audit_charts
from ui.auth import signed_in_user
from ui.context import AppContext
from ui.markdown import escape_markdown

PAGE_SIZE = 50
RECORDED = (
    "Dayanak'a sorulan her soru kaydedilir ve bu sayfada görünür: soranın kullanıcı adı ve soru "
    "sorulduğu andaki rolleri, sorunun metni ve zamanı, sonucu (cevap verildi, en yakın parçalar "
    "gösterildi, cevap yok ya da hata), verilen cevabın metni, kullanıcıya gösterilen her parçanın "
    "dokümanı, sayfası ve o anki sürümü (dosyanın parmak izi ve yükleme tarihi; cevapta kaynak mı, "
    "kullanılmadan mı gösterildi), varsa kullanıcının olumlu ya da olumsuz geri bildirimi ve yorumu. "
    "Parolalar, oturumlar ve yüklenen dosyaların içeriği bu kayıtta yer almaz. Bu sayfayı yalnızca "
    "yöneticiler ve denetçiler görür; buradan hiçbir kayıt değiştirilemez.")
KEPT_FOREVER = "Kayıtlar süresiz saklanır: saklama süresi sınırsız olarak ayarlanmış, hiçbir kayıt silinmez."
CUT = ("İndirilen dosya, ayarlanan satır sınırında kesilir ve son satırında bunu söyler; daha fazlası "
       "için tarih aralığını ya da süzgeçleri daraltın.")
ANY = "Hepsi"


def require_audit_reader() -> User:
    """Defence in depth: navigation already hides the page from everyone but an admin or an auditor."""
    user = signed_in_user()
    if not can_read_audit(user):
        st.error("Bu sayfayı görme yetkiniz yok.")
        st.stop()
    return user


def retention_sentence(days: int) -> str:
    """How long a row is kept, as the page says it."""
    if days <= 0:
        return KEPT_FOREVER
    return (f"Her kayıt {format_integer(days)} gün saklanır; daha eski kayıtlar her gün çalışan bir iş "
            "tarafından kalıcı olarak silinir.")


def _filters(ctx: AppContext, reader: User) -> AuditFilter:
    documents = {d.key: d.label for d in shown_documents(ctx.db, reader)}
    top = st.columns(4)
    username = top[0].selectbox("Kullanıcı", [None, *asking_users(ctx.db, reader)], key="audit_user",
                                format_func=lambda u: ANY if u is None else u)
    labels = role_labels(ctx.db)  # the roles registry: admin-created roles too
    role = top[1].selectbox("Rol", [None, *labels], key="audit_role",
                            format_func=lambda r: ANY if r is None else labels.get(r) or role_label(r))
    document = top[2].selectbox("Doküman", [None, *documents], key="audit_document",
                                format_func=lambda k: ANY if k is None else documents[k])
    outcome = top[3].selectbox("Sonuç", [None, *OUTCOME_LABELS], key="audit_outcome",
                               format_func=lambda o: ANY if o is None else OUTCOME_LABELS[o])
    days = st.columns(4)
    since = days[0].date_input("Başlangıç tarihi", value=None, format="DD.MM.YYYY", key="audit_since")
    until = days[1].date_input("Bitiş tarihi", value=None, format="DD.MM.YYYY", key="audit_until")
    return AuditFilter(username=username, role=role, document=document, outcome=outcome,
                       since=since if isinstance(since, date) else None,
                       until=until if isinstance(until, date) else None)


def table_row(row: AuditRow) -> dict[str, str]:
    """One question as the table shows it."""
    feedback = {1: "👍", -1: "👎"}.get(row.feedback, "") if row.feedback is not None else ""
    if row.feedback_comment:
        feedback = f"{feedback} {row.feedback_comment}".strip()
    return {"Zaman": format_date_time(row.asked_at), "Kullanıcı": row.username, "Roller": role_names(row.roles),
            "Soru": row.question, "Sonuç": row.outcome_label, "Cevap": row.answer or row.error or "",
            "Gösterilen kaynaklar": "\n".join(p.label() for p in row.passages), "Geri bildirim": feedback}


def _render_rows(ctx: AppContext, reader: User, filters: AuditFilter) -> None:
    first = audit_page(ctx.db, reader, filters, 1, PAGE_SIZE)
    if not first.total:
        st.info("Bu süzgeçlere uyan kayıt yok.", icon=":material/search_off:")
        return
    number = st.number_input("Sayfa", min_value=1, max_value=first.pages, value=1, step=1, key="audit_page")
    page = first if number == 1 else audit_page(ctx.db, reader, filters, int(number), PAGE_SIZE)
    st.caption(escape_markdown(f"{format_integer(page.total)} soru · sayfa {format_integer(page.page)}/"
                               f"{format_integer(page.pages)} · en yenisi önce"))
    st.dataframe(pd.DataFrame([table_row(r) for r in page.rows]), hide_index=True, width="stretch")
    st.download_button("Kayıtları indir (Excel için CSV)", key="audit_csv", mime="text/csv",
                       data=lambda: "".join(csv_chunks(ctx.db, ctx.settings, reader, filters)).encode("utf-8"),
                       file_name=csv_filename(), icon=":material/download:")
    st.caption(CUT)


def _render_usage(ctx: AppContext, reader: User, filters: AuditFilter) -> None:
    figures = usage(ctx.db, reader, filters)
    if not figures.total:
        st.info("Bu süzgeçlere uyan kayıt yok.", icon=":material/search_off:")
        return
    st.altair_chart(audit_charts.questions_per_day(figures), width="stretch")
    st.altair_chart(audit_charts.outcome_shares(figures), width="stretch")
    if figures.cited_documents:
        st.altair_chart(audit_charts.cited_documents(figures), width="stretch")
    if figures.unanswered:
        st.altair_chart(audit_charts.unanswered(figures), width="stretch")
    st.altair_chart(audit_charts.ratings(figures), width="stretch")


def render_audit_page(ctx: AppContext, reader: User) -> None:
    st.title("Denetim")
    st.markdown(RECORDED)
    st.info(escape_markdown(retention_sentence(ctx.settings.audit_retention_days)), icon=":material/schedule:")
    filters = _filters(ctx, reader)
    try:
        filters.params()
    except AuditFilterError as exc:
        st.error(escape_markdown(str(exc)))
        return
    records, use = st.tabs(["Kayıtlar", "Kullanım"])
    with records:
        _render_rows(ctx, reader, filters)
    with use:
        _render_usage(ctx, reader, filters)
