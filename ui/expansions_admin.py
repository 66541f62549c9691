"""The admin's term-expansion table ("Terim eşleştirmeleri"): everyday words → the laws' words.

Employees ask "maaşım yatmadı", the law says "ücret". A row here makes the lexical search add the
law's words whenever a question uses the everyday one (ragcore.retrieval.expansions); the
Kaynak arama page shows which rows a question used. The table is the same for every role: it
adds words to the query, never documents.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ragcore.core import User
from ragcore.retrieval import ExpansionError, delete_expansion, list_expansions, save_expansion
from ui.context import AppContext
from ui.markdown import escape_markdown

ORIGIN_LABELS = {"default": "hazır liste", "admin": "yönetici"}


def render_expansions_page(ctx: AppContext, me: User) -> None:
    st.caption("Çalışanların günlük kelimeleri ile kanunlardaki karşılıkları. Bir soru soldaki ifadeyi "
               "içerdiğinde arama sağdaki kanun terimlerini de arar (ör. “maaş” → “ücret”). Kanun terimini "
               "sözlükteki yalın hâliyle (“izin”, “fesih”) ya da kanundaki gibi bir ifade olarak (“yıllık ücretli "
               "izin”) yazın; çekimli hâllerini (“izni”, “iznini”) ayrıca yazmanız gerekmez. "
               "Değişiklik bir sonraki soruda geçerli olur ve bütün roller için aynıdır.")
    rows = list_expansions(ctx.db)
    frame = pd.DataFrame([{"Günlük ifade": r.everyday, "Kanun terimleri": ", ".join(r.legal),
                           "Kaynak": ORIGIN_LABELS.get(r.origin, r.origin), "Değiştiren": r.updated_by or ""}
                          for r in rows], columns=["Günlük ifade", "Kanun terimleri", "Kaynak", "Değiştiren"])
    st.dataframe(frame, hide_index=True, width="stretch", column_config={
        "Günlük ifade": st.column_config.TextColumn(width="small"),
        "Kanun terimleri": st.column_config.TextColumn(width="large"),
    })
    _render_add(ctx, me)
    if rows:
        _render_edit(ctx, me, rows)


def _render_add(ctx: AppContext, me: User) -> None:
    with st.form("expansions_add", clear_on_submit=True):
        st.markdown("**Yeni eşleştirme**")
        everyday = st.text_input("Günlük ifade", placeholder="ör. kovulmak", key="expansions_add_everyday")
        legal = st.text_input("Kanun terimleri (virgülle ayırın)", placeholder="ör. fesih, işten çıkarma",
                              key="expansions_add_legal")
        if st.form_submit_button("Ekle", type="primary"):
            try:
                row = save_expansion(ctx.db, everyday, legal, updated_by=me.username)
            except ExpansionError as exc:
                st.error(escape_markdown(str(exc)))
            else:
                st.success(f"Eklendi: {escape_markdown(row.everyday)} → {escape_markdown(', '.join(row.legal))}")


def _render_edit(ctx: AppContext, me: User, rows: list) -> None:
    st.markdown("**Düzenle ya da sil**")
    by_label = {r.everyday: r for r in rows}
    chosen = st.selectbox("Eşleştirme", list(by_label), key="expansions_pick")
    row = by_label[chosen]
    with st.form(f"expansions_edit_{row.id}"):
        everyday = st.text_input("Günlük ifade", value=row.everyday, key=f"expansions_everyday_{row.id}")
        legal = st.text_input("Kanun terimleri (virgülle ayırın)", value=", ".join(row.legal),
                              key=f"expansions_legal_{row.id}")
        save, delete = st.columns(2)
        saved = save.form_submit_button("Kaydet", type="primary")
        deleted = delete.form_submit_button("Sil")
    try:
        if saved:
            updated = save_expansion(ctx.db, everyday, legal, updated_by=me.username, expansion_id=row.id)
            st.success(f"Kaydedildi: {escape_markdown(updated.everyday)} → {escape_markdown(', '.join(updated.legal))}")
        elif deleted:
            delete_expansion(ctx.db, row.id)
            st.success(f"Silindi: {escape_markdown(row.everyday)}")
    except ExpansionError as exc:
        st.error(escape_markdown(str(exc)))
