"""A review-queue question into a gold set: the admin names the right document and pages (or says the
answer is not in our documents) and picks a set; the question joins it as a new version, so the
next gold run measures it. One popover per item, beside the queue's own controls.
"""

from __future__ import annotations

import streamlit as st

from ragcore.core import User
from ui.context import AppContext
from ui.markdown import escape_markdown

NEW_SET = "— yeni set —"
NOT_OURS = "Bizim dokümanlarımızda yok"
IN_DOCUMENT = "Cevap şu belgede"


def render_gold_control(ctx: AppContext, admin: User, item, flash, resolve) -> None:
    """The "Doğrulama setine ekle" popover of one review item (a group's newest asking);
    `resolve()` resolves what it stands for and says so, `flash(message)` reports the outcome."""
    from eval import goldstore
    from eval.goldset import GoldFormatError, parse_pages
    from ragcore.documents import list_documents

    with st.popover("Doğrulama setine ekle", icon=":material/playlist_add_check:"):
        sets = [v.name for v in goldstore.list_sets(ctx.db)]
        documents = sorted({d.filename for d in list_documents(ctx.db, item.role)})
        with st.form(f"review_gold_{item.public_id}", clear_on_submit=True):
            chosen = st.selectbox("Doğrulama seti", [*sets, NEW_SET], key=f"review_gold_set_{item.public_id}")
            new_name = st.text_input("Yeni setin adı", key=f"review_gold_new_{item.public_id}",
                                     help="“— yeni set —” seçildiyse kullanılır.")
            where = st.radio("Doğru cevap", [IN_DOCUMENT, NOT_OURS], key=f"review_gold_where_{item.public_id}",
                             horizontal=True)
            document = st.selectbox("Belge (soranın rolünün okuyabildikleri)", documents or ["—"],
                                    key=f"review_gold_doc_{item.public_id}")
            pages = st.text_input("Sayfalar", key=f"review_gold_pages_{item.public_id}", placeholder="ör. 9 ya da 9-11")
            article = st.text_input("Madde (isteğe bağlı)", key=f"review_gold_article_{item.public_id}",
                                    placeholder="ör. Madde 14")
            facts = st.text_input("Anahtar bilgiler (isteğe bağlı, “;” ile ayırın)", key=f"review_gold_facts_{item.public_id}")
            resolving = st.checkbox("Soruyu çözüldü olarak işaretle", value=True,
                                    key=f"review_gold_resolve_{item.public_id}")
            submitted = st.form_submit_button("Doğrulama setine ekle", type="primary")
        if not submitted:
            return
        name = new_name.strip() if chosen == NEW_SET else chosen
        unanswerable = where == NOT_OURS
        try:
            page_list = () if unanswerable else parse_pages(pages)
        except GoldFormatError as exc:
            st.error(escape_markdown("Sayfalar anlaşılmadı: " + "; ".join(exc.problems)))
            return
        mark = goldstore.ReviewMark(
            question_id=item.id, gold_set=name, unanswerable=unanswerable,
            document=None if unanswerable or not documents else document, pages=page_list,
            article=None if unanswerable else (article.strip() or None),
            key_facts=() if unanswerable else tuple(f.strip() for f in facts.split(";") if f.strip()))
        try:
            version = goldstore.add_from_review(ctx.db, mark, created_by=admin.username)
        except goldstore.GoldSetError as exc:
            st.error(escape_markdown(str(exc)))
            return
        message = f"Soru “{version.name}” setine eklendi (sürüm {version.version})."
        if resolving:
            message += " " + resolve()
        flash(message)
        st.rerun()
