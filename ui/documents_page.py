"""Dokümanlar: the documents the role may read; for the admin also upload, jobs, roles, versions and delete.

Each card's actions sit in one row (download; for the admin: title, roles, collections, a new version,
delete); deleting asks in a dialog (`st.dialog`). A card lists its document's kept versions, and the admin
can make an earlier one current again ("Bu sürüme dön"). An upload whose file name or title is a
stored document's asks whether it is that document's new version (ui/upload.py). An upload is queued as a background job (ui/upload.py) and the jobs section (ui/jobs.py),
at the top of the page, follows it; the page itself never waits for a PDF to be parsed or embedded.
The admin's collections (ui/collections_admin.py) sit below the upload form.

The list comes from `ragcore.documents.catalog.list_documents(db, role)`, which applies the same role
predicate as retrieval, so this page never shows a title the chat could not cite.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import streamlit as st

from ragcore.access import role_labels
from ragcore.core import Document, User, format_integer
from ragcore.documents import (
    KINDS_TEXT,
    UPLOAD_EXTENSIONS,
    count_unit,
    hidden_note,
    list_collections,
    page_size_notes,
)
from ui.collections_admin import edit_document_collections, render_collections
from ui.context import AppContext
from ui.jobs import remember_job, render_jobs
from ui.markdown import alert, escape_markdown
from ui.upload import (
    confirm_wide_access,
    revision_notice,
    role_picker,
    roles_text,
    upload_document,
    uploader_in_turkish,
)
from ui.watch import render_watch_status

# "Parça" is our one word for a chunk ("bölüm" is a law's chapter); the cards count them, so it is explained here.
CHUNK_EXPLAINED = ("Parça: bir belgenin arama için bölündüğü, birkaç paragraflık metin. Sohbet ve arama, cevabı bu "
                   "parçalarda arar ve kaynak olarak onları gösterir.")


def _flash(message: str, kind: str = "success") -> None:
    st.session_state["doc_flash"] = (kind, message)


UPLOAD_ROUND = "doc_upload_round"  # bumped after each queued upload: a new, empty file picker
UPLOAD_RESET = "doc_upload_reset"  # set by a queued upload: empty the other fields on the next run
# Emptied by assigning their empty value, not by removing the key: a removed key leaves the
# browser showing the old choice (it keeps a widget's value unless the server sends one).
UPLOAD_FIELDS = {"doc_upload_title": "", "doc_upload_roles": [], "doc_upload_wide_herkes": False,
                 "doc_upload_wide_personel": False}
REVISION = "doc_upload_revision_of"  # the stored document the chosen file looks like a new version of
AS_VERSION = "Yeni sürüm olarak yükle"
AS_NEW = "Ayrı belge olarak yükle"


def _queued(outcome, picker_round: int) -> None:
    """A queued upload: say so, follow its job, and start the next upload from an empty form."""
    _flash(outcome.message)
    remember_job(outcome.job_id)  # its card heads the page until the session ends
    st.session_state.pop(REVISION, None)
    st.session_state[UPLOAD_ROUND] = picker_round + 1
    st.session_state[UPLOAD_RESET] = True
    st.rerun()


def _offer_revision(ctx: AppContext, admin: User, roles: list[str], confirmed: bool, picker_round: int) -> None:
    """The file looked like a new version of a stored document: ask which it is. The chosen file
    and title are still the form's (it is not cleared), so either button uploads them."""
    doc = st.session_state.get(REVISION)
    file = st.session_state.get(f"doc_upload_file_{picker_round}")
    if doc is None or file is None:
        st.session_state.pop(REVISION, None)
        return
    st.info(escape_markdown(revision_notice(doc)), icon=":material/history:")
    with st.container(horizontal=True, gap="small"):
        as_version = st.button(AS_VERSION, key="doc_upload_as_version", type="primary", icon=":material/history:")
        as_new = st.button(AS_NEW, key="doc_upload_as_new")
    if as_version or as_new:
        outcome = upload_document(ctx, admin, file.name, file.getvalue(), roles,
                                  st.session_state.get("doc_upload_title"), wide_access_confirmed=confirmed,
                                  new_version_of=doc.id if as_version else None, as_new_document=as_new)
        if outcome.ok:
            _queued(outcome, picker_round)
        st.error(escape_markdown(outcome.message))


def render_upload(ctx: AppContext, admin: User) -> None:
    """The upload form. Who may read comes first and outside the form, so that choosing it
    redraws the page: no role is preselected, and a choice that opens the document to every
    employee shows what that means with a confirmation box (ui/upload.py). A refused upload
    keeps the chosen file and title (the form is not cleared on submit); a queued one empties
    every field, roles and confirmation included, so the next upload starts from no role again."""
    if st.session_state.pop(UPLOAD_RESET, False):
        for name, empty in UPLOAD_FIELDS.items():
            st.session_state[name] = empty
    picker_round = st.session_state.get(UPLOAD_ROUND, 0)
    uploader_in_turkish(ctx.settings.max_upload_mb)
    with st.container(border=True):
        st.subheader("Doküman yükle")
        roles = role_picker("doc_upload_roles", labels=role_labels(ctx.db))
        confirmed = confirm_wide_access("doc_upload_wide", roles)
        # Enter in the title does not upload (and Streamlit's English "Press Enter to submit form" is not shown).
        with st.form("doc_upload", border=False, enter_to_submit=False):
            file = st.file_uploader(escape_markdown(f"{KINDS_TEXT} dosyası"), type=list(UPLOAD_EXTENSIONS),
                                    key=f"doc_upload_file_{picker_round}", max_upload_size=ctx.settings.max_upload_mb,
                                    help=f"En fazla {ctx.settings.max_upload_mb} MB; taranmış (görüntü) sayfalar OCR ile "
                                         "okunur (sunucuda Tesseract kuruluysa). Word belgelerinde kaynaklar sayfa "
                                         "yerine başlık ve paragrafla gösterilir.")
            title = st.text_input("Başlık (isteğe bağlı)", key="doc_upload_title",
                                  placeholder="Boş bırakılırsa PDF'in kendi başlığı ya da ilk sayfasındaki başlık kullanılır")
            submitted = st.form_submit_button("Yükle", type="primary", icon=":material/upload:")
    if submitted:
        if file is None:
            st.error(escape_markdown(f"Lütfen bir {KINDS_TEXT} dosyası seçin."))
            return
        outcome = upload_document(ctx, admin, file.name, file.getvalue(), roles, title,
                                  wide_access_confirmed=confirmed)
        if outcome.ok:
            _queued(outcome, picker_round)
        if outcome.revision_of is None:
            st.error(escape_markdown(outcome.message))
            return
        st.session_state[REVISION] = outcome.revision_of
    if st.session_state.get(REVISION) is not None:
        _offer_revision(ctx, admin, roles, confirmed, picker_round)


def _download(ctx: AppContext, user: User, doc: Document) -> None:
    """A download button that reads the PDF only when it is clicked.

    Given bytes, Streamlit keeps every listed file in memory and reads them all again on each
    rerun (ten 45 MB files took one page from 176 MB to 1,076 MB after a single rerun); a
    callable runs on the click, for that one file.
    """
    from ragcore.documents import MIME_TYPES, document_file

    path = document_file(ctx.settings, doc, user.role)
    if path is None:
        st.caption("Dosya sunucuda bulunamadı.")
        return
    st.download_button("İndir", data=partial(Path.read_bytes, path), file_name=doc.filename,
                       mime=MIME_TYPES[doc.file_format], key=f"doc_download_{doc.public_id}", icon=":material/download:")


def _edit_title(ctx: AppContext, doc: Document) -> None:
    from ragcore.documents import TitleError, set_document_title

    with st.popover("Başlığı düzenle", icon=":material/edit:"):
        title = st.text_input("Başlık", value=doc.title, key=f"doc_title_{doc.public_id}", max_chars=500,
                              help="Her kaynak gösteriminde bu başlık görünür.")
        if st.button("Başlığı kaydet", key=f"doc_title_save_{doc.public_id}", type="primary"):
            try:
                renamed = set_document_title(ctx.db, doc.id, title)
            except TitleError as exc:
                st.error(escape_markdown(str(exc)))
                return
            except LookupError:
                _flash("Doküman bu arada silinmiş.", "warning")
            else:
                _flash(f"Başlık değiştirildi: “{renamed.title}”.")
            st.rerun()


def _edit_roles(ctx: AppContext, doc: Document) -> None:
    from ragcore.documents import IngestError, set_document_roles

    with st.popover("Erişim rolleri", icon=":material/lock_person:"):
        labels = role_labels(ctx.db)
        roles = role_picker(f"doc_roles_{doc.public_id}", default=doc.allowed_roles, labels=labels)
        if st.button("Rolleri kaydet", key=f"doc_roles_save_{doc.public_id}", type="primary"):
            if not roles:
                st.error("En az bir rol seçilmeli.")
                return
            try:
                set_document_roles(ctx.db, doc.id, roles)
            except IngestError as exc:  # a Turkish message (no role, an unknown role)
                st.error(escape_markdown(str(exc)))
                return
            except LookupError:
                _flash("Doküman bu arada silinmiş.", "warning")
            else:
                _flash(f"“{doc.title}” artık şu rollere açık: {roles_text(roles, labels)}.")
            st.rerun()


def _new_version(ctx: AppContext, admin: User, doc: Document) -> None:
    """Upload the document's next version from its card: roles preselected as the current version's."""
    from ui.upload import UploadOutcome

    with st.popover("Yeni sürüm yükle", icon=":material/upload_file:"):
        st.caption(escape_markdown(f"Yeni sürüm işlendiğinde “{doc.title}” belgesinin {doc.version_label} yerine "
                                   "geçer; eski sürüm arşivde kalır ve cevaplarda kullanılmaz."))
        file = st.file_uploader("Yeni sürümün dosyası", type=list(UPLOAD_EXTENSIONS),
                                key=f"doc_version_file_{doc.public_id}", max_upload_size=ctx.settings.max_upload_mb)
        roles = role_picker(f"doc_version_roles_{doc.public_id}", default=doc.allowed_roles)
        confirmed = confirm_wide_access(f"doc_version_wide_{doc.public_id}", roles)
        if st.button(AS_VERSION, key=f"doc_version_save_{doc.public_id}", type="primary"):
            if file is None:
                st.error("Lütfen yeni sürümün dosyasını seçin.")
                return
            outcome: UploadOutcome = upload_document(ctx, admin, file.name, file.getvalue(), roles, None,
                                                     wide_access_confirmed=confirmed, new_version_of=doc.id)
            if not outcome.ok:
                st.error(escape_markdown(outcome.message))
                return
            _flash(outcome.message)
            remember_job(outcome.job_id)
            st.rerun()


def _versions(ctx: AppContext, user: User, doc: Document) -> None:
    """The document's kept versions, newest first; for the admin a roll-back button on each earlier one."""
    from ragcore.documents import VersionError, list_versions, make_current

    try:
        versions = list_versions(ctx.db, doc.id, user.role)
    except LookupError:
        return
    if len(versions) < 2:
        return
    with st.expander(f"Sürümler ({len(versions)})", icon=":material/history:"):
        for version in versions:
            with st.container(horizontal=True, gap="small", vertical_alignment="center"):
                state = "güncel, cevaplarda kullanılıyor" if version.is_current else "arşivde, cevaplarda kullanılmıyor"
                st.caption(escape_markdown(f"{version.label} · {version.filename} · yükleyen: "
                                           f"{version.uploaded_by or '-'} · {state}"))
                if user.is_admin and not version.is_current and st.button(
                        "Bu sürüme dön", key=f"doc_rollback_{version.public_id}", icon=":material/undo:"):
                    try:
                        make_current(ctx.db, version.document_id)
                    except VersionError as exc:
                        _flash(str(exc), "warning")
                    except LookupError:
                        _flash("Sürüm bu arada silinmiş.", "warning")
                    else:
                        _flash(f"“{doc.title}” artık {version.label} ile cevaplanıyor; diğer sürümler arşivde.")
                    st.rerun()


CONFIRM = "doc_confirm_delete"  # the document whose delete dialog is open (survives full reruns)


def _forget_confirm() -> None:
    st.session_state.pop(CONFIRM, None)


@st.dialog("Dokümanı sil", on_dismiss=_forget_confirm)
def confirm_delete(ctx: AppContext, doc: Document) -> None:
    """The confirmation, in a dialog: nothing is deleted until "Evet, sil"."""
    from ragcore.documents import delete_document

    st.warning(escape_markdown(f"“{doc.title}”, bütün sürümleri ve parçaları kalıcı olarak silinecek; sohbet artık "
                               "bu dokümandan kaynak gösteremez. Emin misiniz?"), icon=":material/warning:")
    with st.container(horizontal=True, horizontal_alignment="right"):
        if st.button("Vazgeç", key=f"doc_delete_no_{doc.public_id}"):
            _forget_confirm()
            st.rerun()
        if st.button("Evet, sil", key=f"doc_delete_yes_{doc.public_id}", type="primary", icon=":material/delete:"):
            _forget_confirm()
            try:
                delete_document(ctx.db, ctx.settings, doc.id)
                _flash(f"“{doc.title}” silindi.")
            except LookupError:
                _flash("Doküman zaten silinmiş.", "warning")
            st.rerun()


# What a document's skipped "pages" are, by its format: a workbook's sheets and a presentation's
# slides without text are numbered as the file numbers them.
SKIPPED_LABELS = {"xlsx": "Boş çalışma sayfaları", "pptx": "Metni olmayan slaytlar"}


def _card(ctx: AppContext, user: User, doc: Document, every: list | None = None) -> None:
    with st.container(border=True):
        st.markdown(f"**{escape_markdown(doc.title)}**")
        meta = (f"{doc.filename} · {format_integer(doc.page_count)} {count_unit(doc.file_format)} · "
                f"{format_integer(doc.chunk_count)} parça · {doc.version_label}")
        if doc.uploaded_by:
            meta += f" · yükleyen: {doc.uploaded_by}"
        st.caption(escape_markdown(meta))
        st.caption(escape_markdown(f"Okuyabilen roller: {roles_text(doc.allowed_roles, role_labels(ctx.db))}"))
        if doc.ocr_pages:
            st.caption(escape_markdown(f"OCR ile okunan sayfalar: {', '.join(map(str, doc.ocr_pages))}"))
        if doc.skipped_pages:
            label = SKIPPED_LABELS.get(doc.file_format, "Metni okunamayan sayfalar")
            st.caption(escape_markdown(f"{label}: {', '.join(map(str, doc.skipped_pages))}"))
        if doc.hidden_parts:
            note = hidden_note(doc.file_format, doc.hidden_parts)
            st.caption(escape_markdown(note[:1].upper() + note[1:]))
        for note in page_size_notes(doc.oversized_pages, doc.undrawable_pages):
            st.caption(escape_markdown(note))
        _versions(ctx, user, doc)
        with st.container(horizontal=True, gap="small", vertical_alignment="center"):  # the card's actions, one row
            _download(ctx, user, doc)
            if user.role == "admin":
                _edit_title(ctx, doc)
                _edit_roles(ctx, doc)
                edit_document_collections(ctx, doc, every or [])
                _new_version(ctx, user, doc)
                if st.button("Sil", key=f"doc_delete_{doc.public_id}", icon=":material/delete:"):
                    st.session_state[CONFIRM] = doc.id
                if st.session_state.get(CONFIRM) == doc.id:
                    confirm_delete(ctx, doc)


def render_documents_page(ctx: AppContext, user: User) -> None:
    from ragcore.documents import list_documents

    st.title("Dokümanlar")
    flash = st.session_state.pop("doc_flash", None)
    if flash:
        alert(*flash)
    if user.role == "admin":  # the jobs first: a job queued by "Yükle" is on screen without scrolling
        render_jobs(ctx, user)
        render_watch_status(ctx)
        render_upload(ctx, user)
    documents = list_documents(ctx.db, user.role)
    every = []
    if user.role == "admin":
        render_collections(ctx, user, documents)
        every = list_collections(ctx.db, user.roles)
    if not documents:
        st.info("Erişebildiğiniz doküman yok." if user.role != "admin" else "Henüz doküman yüklenmedi.")
        return
    st.subheader(f"Erişebildiğiniz dokümanlar ({len(documents)})" if user.role != "admin"
                 else f"Tüm dokümanlar ({len(documents)})")
    st.caption(CHUNK_EXPLAINED)
    for doc in documents:
        _card(ctx, user, doc, every)
