"""Koleksiyonlar on the Dokümanlar page (admin): create, rename, delete collections and choose
their documents; on each document card, the collections it belongs to.

A collection groups documents for "Nerede arayayım?" in the chat (ragcore.documents.collections);
it grants nothing: a user asking within one still reads only what their roles read.
"""

from __future__ import annotations

import streamlit as st

from ragcore.core import Document, User
from ragcore.documents import (
    COLLECTION_DESCRIPTION_MAX_CHARS,
    COLLECTION_NAME_MAX_CHARS,
    Collection,
    CollectionError,
    CollectionNotFound,
    collection_document_ids,
    create_collection,
    delete_collection,
    document_collection_ids,
    list_collections,
    set_collection_members,
    set_document_collections,
    update_collection,
)
from ui.markdown import escape_markdown

NAME_HELP = (f"En fazla {COLLECTION_NAME_MAX_CHARS} karakter; ör. “Talimatlar”, “Kanunlar”. Sohbette "
             "“Nerede arayayım?” listesinde bu adla görünür.")
EXPLAINED = ("Koleksiyon, belgeleri gruplar: sohbette soru yalnızca bir koleksiyonun belgelerinde aranabilir. Bir "
             "belge birden çok koleksiyonda olabilir. Koleksiyon erişim vermez: kullanıcı yine yalnızca rollerinin "
             "okuyabildiği belgeleri görür.")


def _flash(message: str, kind: str = "success") -> None:
    st.session_state["doc_flash"] = (kind, message)


def _create(ctx, admin: User) -> None:
    with st.form("collection_new", border=False, enter_to_submit=False, clear_on_submit=True):
        name = st.text_input("Yeni koleksiyonun adı", max_chars=COLLECTION_NAME_MAX_CHARS, help=escape_markdown(NAME_HELP),
                             key="col_new_name")
        about = st.text_input("Açıklama (isteğe bağlı)", max_chars=COLLECTION_DESCRIPTION_MAX_CHARS,
                              key="col_new_about")
        if st.form_submit_button("Koleksiyon oluştur", icon=":material/create_new_folder:"):
            try:
                made = create_collection(ctx.db, name, about, created_by=admin.username)
            except CollectionError as exc:  # Turkish: empty, too long, taken
                st.error(escape_markdown(str(exc)))
                return
            _flash(f"“{made.name}” koleksiyonu oluşturuldu. Belgelerini aşağıdan seçin.")
            st.rerun()


def _edit(ctx, collection: Collection, documents: list[Document]) -> None:
    key = collection.public_id
    with st.popover("Düzenle", icon=":material/edit:"):
        name = st.text_input("Ad", value=collection.name, key=f"col_name_{key}",
                             max_chars=COLLECTION_NAME_MAX_CHARS, help=escape_markdown(NAME_HELP))
        about = st.text_input("Açıklama", value=collection.description, key=f"col_about_{key}",
                              max_chars=COLLECTION_DESCRIPTION_MAX_CHARS)
        members = set(collection_document_ids(ctx.db, key, ("admin",)))
        titles = {d.id: d.title for d in documents}
        chosen = st.multiselect("Belgeleri", options=list(titles), default=[d for d in titles if d in members],
                                format_func=titles.get, key=f"col_docs_{key}",
                                placeholder="Belge seçin")
        if st.button("Kaydet", key=f"col_save_{key}", type="primary"):
            try:
                update_collection(ctx.db, key, name, about)
                saved = set_collection_members(ctx.db, key, chosen)
            except CollectionError as exc:
                st.error(escape_markdown(str(exc)))
                return
            except CollectionNotFound:
                _flash("Koleksiyon bu arada silinmiş.", "warning")
            else:
                _flash(f"“{saved.name}” kaydedildi: {saved.documents} belge.")
            st.rerun()


def _delete(ctx, collection: Collection) -> None:
    key = collection.public_id
    with st.popover("Sil", icon=":material/delete:"):
        st.caption(escape_markdown(f"“{collection.name}” silinir; belgeleri silinmez, yalnızca gruplamadan çıkar."))
        if st.button("Evet, koleksiyonu sil", key=f"col_delete_{key}", type="primary"):
            try:
                delete_collection(ctx.db, key)
                _flash(f"“{collection.name}” koleksiyonu silindi; belgeleri yerinde duruyor.")
            except CollectionNotFound:
                _flash("Koleksiyon zaten silinmiş.", "warning")
            st.rerun()


def render_collections(ctx, admin: User, documents: list[Document]) -> None:
    """The admin's collections box: the new-collection form and one row per collection."""
    with st.container(border=True):
        st.subheader("Koleksiyonlar")
        st.caption(EXPLAINED)
        _create(ctx, admin)
        for collection in list_collections(ctx.db, ("admin",)):
            with st.container(horizontal=True, gap="small", vertical_alignment="center"):
                st.markdown(f"**{escape_markdown(collection.name)}** · {collection.documents:d} belge")
                if collection.description:
                    st.caption(escape_markdown(collection.description))
                _edit(ctx, collection, documents)
                _delete(ctx, collection)


def edit_document_collections(ctx, doc: Document, every: list[Collection]) -> None:
    """A document card's "Koleksiyonlar" popover (admin): the collections it belongs to."""
    if not every:
        return
    names = {c.public_id: c.name for c in every}
    with st.popover("Koleksiyonlar", icon=":material/folder:"):
        current = document_collection_ids(ctx.db, doc.id)
        chosen = st.multiselect("Bu belgenin koleksiyonları", options=list(names), default=current,
                                format_func=names.get, key=f"doc_cols_{doc.public_id}", placeholder="Koleksiyon seçin")
        if st.button("Kaydet", key=f"doc_cols_save_{doc.public_id}", type="primary"):
            set_document_collections(ctx.db, doc.id, chosen)
            _flash(f"“{doc.title}” koleksiyonları kaydedildi.")
            st.rerun()
