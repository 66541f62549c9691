"""The chat page's saved conversations: the open one kept in the address, the sidebar list, rename,
delete (confirmed) and export as Markdown or PDF (issue 37). Asking in the open conversation is
`ui.chat`'s; everything here goes through `ragcore.conversations`, which checks the owner.

The open conversation's id is in the session (`ui.chat.CONVERSATION`) and in the address
(`?sohbet=…`): a reload starts a new session, signed in again by the cookie, and the address
reopens the conversation. A reopened turn is drawn by the chat's own functions: its cited
sources are read back with their passages as the user's role may read them now
(`readable_passages`), and a turn whose answer came from a document the user can no longer read
shows the chat's own notice instead (`readable_history` hid it already).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import streamlit as st

from ragcore.conversations import (
    MARKDOWN,
    MAX_TITLE_CHARS,
    PDF,
    Citation,
    Conversation,
    ConversationError,
    delete_conversation,
    export_conversation,
    get_conversation,
    list_conversations,
    rename_conversation,
)
from ragcore.conversations import Turn as StoredTurn
from ragcore.core import LOCATOR_PAGE, Chunk, Source, User, format_date_time, short_id
from ui.chat import CONVERSATION, HISTORY, Turn, clear_history, render_chat, render_scope_picker, take_prompt
from ui.context import AppContext
from ui.markdown import escape_markdown

QUERY_KEY = "sohbet"  # ?sohbet=<the open conversation's public id>
CONFIRM_DELETE = "conv_confirm_delete"  # the id whose deletion waits for "Evet, sil"
PDF_FILE = "conv_pdf"  # (id, turn count, ExportFile): the PDF made for the open conversation
MESSAGE = "conv_message"  # (kind, Turkish text) left by a callback for the next run to show
NO_CONVERSATIONS = "Henüz kayıtlı sohbetiniz yok; ilk sorunuzla yeni bir sohbet başlar ve burada listelenir."
DELETED = "Sohbet silindi."
RENAMED = "Sohbetin adı değiştirildi."


def render_chat_page(ctx: AppContext, user: User) -> None:
    """The Sohbet page: the prompt first (ui.chat's pending slot), the conversation the address
    asks for, the chat, then the sidebar (drawn last, so a conversation just made is listed)."""
    take_prompt(ctx.settings.max_question_chars)
    st.sidebar.button("Yeni sohbet", icon=":material/add_comment:", on_click=new_conversation, key="chat_new",
                      width="stretch")
    open_requested(ctx, user)
    render_chat(ctx, user)
    render_scope_picker(ctx, user)
    keep_in_address()
    with st.sidebar:
        render_conversations(ctx, user)


# ----------------------------------------------------------------------------- the open conversation


def new_conversation() -> None:
    clear_history()
    st.query_params.pop(QUERY_KEY, None)
    _forget_actions()


def open_conversation(conversation_id: str) -> None:
    """A click in the list: the address names it, and this run's `open_requested` reads it."""
    st.query_params[QUERY_KEY] = conversation_id
    _forget_actions()


def open_requested(ctx: AppContext, user: User) -> None:
    """Open the conversation the address names when it is not the one on screen (a reload, a
    click in the list, a bookmark); a missing or somebody else's is a Turkish warning."""
    wanted = st.query_params.get(QUERY_KEY)
    if not wanted or wanted == st.session_state.get(CONVERSATION):
        return
    try:
        conversation = get_conversation(ctx.db, ctx.settings, user, wanted)
    except ConversationError as exc:
        st.query_params.pop(QUERY_KEY, None)
        st.warning(escape_markdown(str(exc)), icon=":material/search_off:")
        return
    st.session_state[HISTORY] = chat_turns(ctx, user, conversation)
    st.session_state[CONVERSATION] = conversation.id


def keep_in_address() -> None:
    """The address names the open conversation, and none once there is none (Yeni sohbet, deleted)."""
    current = st.session_state.get(CONVERSATION)
    if current and st.query_params.get(QUERY_KEY) != current:
        st.query_params[QUERY_KEY] = current
    elif not current and QUERY_KEY in st.query_params:
        st.query_params.pop(QUERY_KEY, None)


def chat_turns(ctx: AppContext, user: User, conversation: Conversation) -> list[Turn]:
    """The stored turns as the chat keeps its own, their cited passages read in one query."""
    from ragcore.documents import readable_passages

    wanted = {c.chunk_id for t in conversation.turns for c in t.citations if c.chunk_id is not None}
    passages = readable_passages(ctx.db, wanted, user.role)
    return [chat_turn(turn, passages) for turn in conversation.turns]


def chat_turn(turn: StoredTurn, passages: Mapping[int, Chunk]) -> Turn:
    if turn.hidden:  # answered from a document the user may no longer read: the chat's notice
        return Turn(question=turn.question, status=turn.status, question_id=turn.question_id, revoked=True)
    sources = tuple(_source(c, passages[c.chunk_id]) for c in turn.citations if c.chunk_id in passages)
    return Turn(question=turn.question, text=turn.answer_text, status=turn.status, outcome=turn.outcome,
                sources=sources, cited=tuple(s.rank for s in sources), question_id=turn.question_id,
                resolved=turn.resolved_question if turn.rewritten else None, reopened=True)


def _source(citation: Citation, chunk: Chunk) -> Source:
    labelled = citation.locator_kind != LOCATOR_PAGE  # a Word, Excel or PowerPoint chunk's own label
    return Source(rank=citation.number, chunk_id=citation.chunk_id or 0, document_id=citation.document_key or 0,
                  title=citation.title, filename=citation.filename, page_start=citation.page_start,
                  page_end=citation.page_end, article=citation.article, score=0.0, text=chunk.text,
                  document_public_id=citation.document_id, locator_kind=citation.locator_kind,
                  locator=citation.locator if labelled else None, ocr=chunk.ocr,
                  version_no=(citation.version.number if citation.version else None) or 1,
                  version_date=citation.version.uploaded_at if citation.version else None)


# ----------------------------------------------------------------------------- the sidebar


def render_conversations(ctx: AppContext, user: User) -> None:
    """The open conversation's actions, then the user's conversations, most recently used first."""
    try:
        conversations = list_conversations(ctx.db, ctx.settings, user)
    except ConversationError as exc:
        st.warning(escape_markdown(str(exc)))
        return
    _show_message()
    current_id = st.session_state.get(CONVERSATION)
    current = next((c for c in conversations if c.id == current_id), None)
    if current is not None:
        render_actions(ctx, user, current)
    st.caption("Kayıtlı sohbetler")
    if not conversations:
        st.caption(NO_CONVERSATIONS)
    for conversation in conversations:
        st.button(escape_markdown(conversation.title), key=f"conv_open_{conversation.id}", width="stretch",
                  type="primary" if conversation.id == current_id else "secondary",
                  on_click=open_conversation, args=(conversation.id,))
        st.caption(escape_markdown(f"{format_date_time(conversation.updated_at)} · {conversation.turn_count} soru"))


def render_actions(ctx: AppContext, user: User, conversation: Conversation) -> None:
    """Rename, export (Markdown, PDF) and delete the open conversation."""
    cid = conversation.id
    st.caption("Açık sohbet")
    with st.popover("Yeniden adlandır", icon=":material/edit:", width="stretch"), \
            st.form(f"conv_rename_{cid}", border=False):
        st.text_input("Sohbetin yeni adı", value=conversation.title, max_chars=MAX_TITLE_CHARS,
                      key=f"conv_title_{cid}")
        st.form_submit_button("Kaydet", on_click=_rename, args=(ctx, user, cid), type="primary")
    st.download_button("Markdown olarak indir", data=partial(_export_data, ctx, user, cid, MARKDOWN),
                       file_name=f"sohbet-{short_id(cid)}.md", mime="text/markdown", icon=":material/download:",
                       key=f"conv_md_{cid}", width="stretch")
    made = st.session_state.get(PDF_FILE)
    if made is not None and made[:2] == (cid, conversation.turn_count):
        st.download_button("PDF'yi indir", data=made[2].data, file_name=made[2].filename, mime=made[2].media_type,
                           icon=":material/picture_as_pdf:", key=f"conv_pdf_{cid}", width="stretch")
    else:
        st.button("PDF hazırla", icon=":material/picture_as_pdf:", key=f"conv_make_pdf_{cid}", width="stretch",
                  on_click=_make_pdf, args=(ctx, user, conversation), help="Sohbeti PDF dosyası olarak hazırlar.")
    if st.session_state.get(CONFIRM_DELETE) == cid:
        st.warning(escape_markdown(f"“{conversation.title}” silinsin mi? Sohbet, soruları ve cevaplarıyla "
                                   "birlikte kalıcı olarak silinir."), icon=":material/delete:")
        cols = st.columns(2)
        cols[0].button("Evet, sil", key="conv_delete_yes", type="primary", on_click=_delete, args=(ctx, user, cid))
        cols[1].button("Vazgeç", key="conv_delete_no", on_click=_forget_actions)
    else:
        st.button("Sohbeti sil", icon=":material/delete:", key=f"conv_delete_{cid}", width="stretch",
                  on_click=_confirm_delete, args=(cid,))


def _export_data(ctx: AppContext, user: User, conversation_id: str, fmt: str) -> bytes:
    return export_conversation(ctx.db, ctx.settings, user, conversation_id, fmt).data


def _make_pdf(ctx: AppContext, user: User, conversation: Conversation) -> None:
    try:
        made = export_conversation(ctx.db, ctx.settings, user, conversation.id, PDF)
    except ConversationError as exc:  # ExportError among them: no font; Turkish, says what to do
        st.session_state[MESSAGE] = ("error", str(exc))
        return
    st.session_state[PDF_FILE] = (conversation.id, conversation.turn_count, made)


def _rename(ctx: AppContext, user: User, conversation_id: str) -> None:
    title = st.session_state.get(f"conv_title_{conversation_id}") or ""
    try:
        rename_conversation(ctx.db, ctx.settings, user, conversation_id, title)
    except ConversationError as exc:
        st.session_state[MESSAGE] = ("error", str(exc))
        return
    st.session_state[MESSAGE] = ("success", RENAMED)


def _confirm_delete(conversation_id: str) -> None:
    st.session_state[CONFIRM_DELETE] = conversation_id


def _delete(ctx: AppContext, user: User, conversation_id: str) -> None:
    try:
        delete_conversation(ctx.db, user, conversation_id)
    except ConversationError as exc:
        st.session_state[MESSAGE] = ("error", str(exc))
        return
    if st.session_state.get(CONVERSATION) == conversation_id:
        new_conversation()
    _forget_actions()
    st.session_state[MESSAGE] = ("success", DELETED)


def _forget_actions() -> None:
    st.session_state.pop(CONFIRM_DELETE, None)
    st.session_state.pop(PDF_FILE, None)


def _show_message() -> None:
    kind, text = st.session_state.pop(MESSAGE, (None, None))
    if kind == "error":
        st.error(escape_markdown(text))
    elif kind == "success":
        st.success(escape_markdown(text))
