"""A cited source as the reader meets it: "[1] İş Sağlığı ve Güvenliği Kanunu (6331) · Madde 14 · s. 9".

The expander holds the passage (the PDF's wrapped lines re-flowed, the question's rare terms in
bold) and a button that opens the cited page in a dialog: the page drawn as an image with the
passage marked, the page's text as extracted at upload (for screen readers and copying), and the
page itself as a one-page PDF to open in the browser's own viewer. A passage read by OCR from a
scanned page says so ("OCR"), so the reader checks it against the image. A Word file has no
pages: its source is labelled by heading and paragraph ("… · Madde 3 · § BİRİNCİ BÖLÜM ·
paragraf 2"), and the dialog shows the cited section's text with the whole .docx to download.
An Excel source is labelled by sheet and rows ("Sayfa1 · satır 12–30") and its dialog shows the
cited rows under their header; a PowerPoint source by slide ("slayt 7") and its dialog shows the
slide's text with its notes; both offer the whole file to download.
Chat and Kaynak arama share it.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import partial

import streamlit as st

from ragcore.core import (
    LOCATOR_PAGE,
    LOCATOR_ROWS,
    LOCATOR_SECTION,
    LOCATOR_SLIDE,
    Document,
    Source,
    User,
    format_number,
    reflow,
)
from ui.context import AppContext
from ui.markdown import escape_markdown, highlight


def source_label(source: Source) -> str:
    """Title · article · page, the way a lawyer cites ("… (6331) · Madde 14 · s. 9"); a Word
    file's heading and paragraph instead of the page ("… · Madde 3 · § BİRİNCİ BÖLÜM · paragraf 2").
    A revised document's version follows ("… · s. 9 · sürüm 2 · 06.12.2026"); a first version's
    is named inside the source (`render_source`), not in every label."""
    parts = [source.title]
    if source.article:
        parts.append(source.article)
    parts.append(source.locator_label)
    if source.version_no > 1:
        parts.append(source.version_label)
    return " · ".join(parts)


def page_button_label(source: Source) -> str:
    """"Sayfayı aç · s. 9" ("Sayfaları aç · s. 9–10" for a range); "Kısmı aç" for a Word file's
    section (its heading is in the source's label already)."""
    if source.locator_kind == LOCATOR_SECTION:
        return "Kısmı aç" if source.page_start == source.page_end else "Kısımları aç"
    if source.locator_kind == LOCATOR_ROWS:
        return "Satırları aç"
    if source.locator_kind == LOCATOR_SLIDE:
        return "Slaytı aç"
    return ("Sayfayı aç" if source.page_start == source.page_end else "Sayfaları aç") + f" · {source.page_label}"


def passage_text(source: Source) -> str:
    """The passage as shown: a PDF's wrapped lines re-flowed; a Word file's lines are its
    paragraphs already, a sheet's its rows, a slide's its text boxes' lines, and stay."""
    return reflow(source.text) if source.locator_kind == LOCATOR_PAGE else source.text
OCR_HINT = ("Bu bölüm taranmış bir sayfadan OCR ile okundu; okuma hataları olabilir. "
            "Alıntıyı sayfanın görüntüsünden kontrol edin (Sayfayı aç).")


def render_source(ctx: AppContext, user: User, source: Source, terms: Collection[str], key: str, *,
                  score_name: str | None = "benzerlik skoru", marked: str = "") -> None:
    """One source as an expander: label, passage, score, and the button that opens its page.
    `marked`: a sentence of the passage to mark (the closest outcome's nearest sentence); such a
    passage is shown open, since it is what that outcome has to show. `score_name` None: no
    score (a reopened conversation keeps where its sources were, not how they scored)."""
    label = f"[{source.rank}] {source_label(source)}" + (" · OCR" if source.ocr else "")
    with st.expander(escape_markdown(label), expanded=bool(marked)):
        if source.ocr:
            st.badge("OCR", icon=":material/document_scanner:", color="orange", help=OCR_HINT)
            st.caption(OCR_HINT)
        st.markdown(highlight(passage_text(source), terms, marked))
        cols = st.columns([3, 2], vertical_alignment="center")
        score = f" · {score_name} {format_number(source.score)}" if score_name else ""
        cols[0].caption(escape_markdown(f"{source.filename} · {source.version_label}{score}"))
        if cols[1].button(escape_markdown(page_button_label(source)), key=f"{key}_page", icon=":material/menu_book:",
                          width="stretch"):
            open_page_dialog(ctx, user, source, terms, key)


def open_page_dialog(ctx: AppContext, user: User, source: Source, terms: Collection[str], key: str) -> None:
    """`key` is the source's widget key on the page: the dialog's keys grow from it, never from
    the chunk's database id (keys reach the browser, and chunk ids count other documents' chunks)."""
    st.dialog(escape_markdown(source_label(source)), width="large")(_page_dialog)(ctx, user, source, terms, key)


@st.cache_data(max_entries=64, show_spinner=False)
def _page_text(_settings: object, _doc: object, _role: str, sha256: str, number: int) -> tuple[int, str, str | None]:
    """(page count, page text, a Word section's heading), cached per file and page. A hit skips
    the role check inside `read_page`; every caller has just read the document with its own role
    (get_document)."""
    from ragcore.documents import read_page

    page = read_page(_settings, _doc, number, _role)
    return page.page_count, page.text, page.heading


def _version(doc: Document) -> str:
    """"sürüm 2 · 06.12.2026", and for a version kept in the archive that it no longer answers."""
    return doc.version_label + ("" if doc.is_current else " (arşivde; artık cevaplarda kullanılmıyor)")


def _page_dialog(ctx: AppContext, user: User, source: Source, terms: Collection[str], key: str) -> None:
    from ragcore.documents import (
        PageNotFound,
        PageTooLarge,
        get_document,
        page_filename,
        page_image,
        page_pdf,
    )

    doc = get_document(ctx.db, source.document_id, user.role)
    if doc is None:  # deleted, or no longer readable by this role
        st.warning("Bu kaynağın belgesine artık erişiminiz yok ya da belge silindi.", icon=":material/lock:")
        return
    if source.locator_kind == LOCATOR_SECTION:
        _section_dialog(ctx, user, doc, source, terms, key)
        return
    if source.locator_kind in (LOCATOR_ROWS, LOCATOR_SLIDE):
        _office_dialog(ctx, user, doc, source, terms, key)
        return
    pages = list(range(source.page_start, source.page_end + 1))
    number = pages[0]
    if len(pages) > 1:
        number = st.segmented_control("Sayfa", pages, default=pages[0], format_func=lambda n: f"s. {n}",
                                      key=f"{key}_page_choice") or pages[0]
    image = None
    try:
        count, text, _ = _page_text(ctx.settings, doc, user.role, doc.sha256, number)
        with st.spinner("Sayfa çiziliyor…"):
            image = page_image(ctx.settings, doc, number, user.role, source.text)  # role checked on every call
    except PageTooLarge as exc:  # no image, but the page's text and its one-page PDF below
        st.warning(escape_markdown(str(exc)), icon=":material/aspect_ratio:")
    except PageNotFound as exc:
        st.error(escape_markdown(str(exc)))
        return
    scanned = " · OCR ile okundu" if number in doc.ocr_pages else ""
    st.caption(escape_markdown(f"Sayfa {number} / {count} · {doc.filename} · {_version(doc)}{scanned}"))
    if image is not None:
        st.image(image.png, width="stretch", alt=escape_markdown(f"Sayfa {number}, alıntı işaretli"))
        if not image.marked:
            st.caption("Alıntı bu sayfanın görüntüsünde işaretlenemedi; sayfanın metni aşağıda.")
    st.caption("Sayfanın metni (ekran okuyucular ve kopyalamak için):")
    with st.container(height=260, border=True):
        st.markdown(highlight(reflow(text), terms) if text else "*Bu sayfada metin yok.*")
    cols = st.columns(2)
    cols[0].download_button(
        escape_markdown(f"s. {number} (PDF)"), data=partial(page_pdf, ctx.settings, doc, number, user.role),
        file_name=page_filename(doc, number), mime="application/pdf", icon=":material/picture_as_pdf:",
        key=f"{key}_page_pdf_{number}", width="stretch",
        help="Yalnızca bu sayfayı içeren bir PDF: tarayıcınızın PDF görüntüleyicisi doğrudan bu sayfayı açar.",
    )
    from ragcore.documents import document_file

    path = document_file(ctx.settings, doc, user.role)
    if path is not None:
        cols[1].download_button("Belgenin tamamı (PDF)", data=path.read_bytes, file_name=doc.filename,
                                mime="application/pdf", icon=":material/download:",
                                key=f"{key}_page_doc", width="stretch")


def _section_dialog(ctx: AppContext, user: User, doc: Document, source: Source, terms: Collection[str], key: str) -> None:
    """A Word file's cited section: its heading and text (no page, so no one-page file), and the
    whole .docx to download."""
    from ragcore.documents import MIME_TYPES, PageNotFound, document_file, section_label

    sections = list(range(source.page_start, source.page_end + 1))
    try:
        read = {n: _page_text(ctx.settings, doc, user.role, doc.sha256, n) for n in sections}
    except PageNotFound as exc:
        st.error(escape_markdown(str(exc)))
        return
    # Open at the section the citation names (a chunk may start with the headings of the sections above it).
    cited = next((n for n in sections if (source.locator or "").startswith(section_label(read[n][2], 0, 0))),
                 sections[0])
    number = cited
    if len(sections) > 1:
        number = st.segmented_control("Kısım", sections, default=cited, format_func=lambda n: f"{n}. kısım",
                                      key=f"{key}_section_choice") or cited
    count, text, heading = read[number]
    st.caption(escape_markdown(f"§ {heading} · kısım {number} / {count} · {doc.filename} · {_version(doc)}"))
    with st.container(height=420, border=True):
        st.markdown(highlight(text, terms) if text else "*Bu kısımda metin yok.*")  # a Word file's lines are its paragraphs
    path = document_file(ctx.settings, doc, user.role)
    if path is not None:
        st.download_button("Belgenin tamamı (Word)", data=path.read_bytes, file_name=doc.filename,
                           mime=MIME_TYPES[doc.file_format], icon=":material/download:",
                           key=f"{key}_page_doc", width="stretch")


# The whole file's button in an Excel or PowerPoint source's dialog.
_WHOLE_FILE = {"xlsx": "Dosyanın tamamı (Excel)", "pptx": "Sununun tamamı (PowerPoint)"}


def _office_dialog(ctx: AppContext, user: User, doc: Document, source: Source, terms: Collection[str], key: str) -> None:
    """An Excel source's rows under their header (the cited chunk itself: a sheet may hold
    thousands of rows), or a PowerPoint source's slide, its text and notes read again from the
    stored file; the whole file to download."""
    from ragcore.documents import MIME_TYPES, PageNotFound, document_file

    if source.locator_kind == LOCATOR_ROWS:
        st.caption(escape_markdown(f"{source.locator_label} · {doc.filename}"))
        text = source.text
    else:
        try:
            count, text, _ = _page_text(ctx.settings, doc, user.role, doc.sha256, source.page_start)
        except PageNotFound as exc:
            st.error(escape_markdown(str(exc)))
            return
        st.caption(escape_markdown(f"Slayt {source.page_start} / {count} · {doc.filename}"))
    with st.container(height=420, border=True):
        st.markdown(highlight(text, terms) if text else "*Burada metin yok.*")  # one line per row or text line
    path = document_file(ctx.settings, doc, user.role)
    if path is not None:
        st.download_button(escape_markdown(_WHOLE_FILE.get(doc.file_format, "Belgenin tamamı")), data=path.read_bytes,
                           file_name=doc.filename, mime=MIME_TYPES[doc.file_format], icon=":material/download:",
                           key=f"{key}_page_doc", width="stretch")
