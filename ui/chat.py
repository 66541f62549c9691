"""The chat: history per session, streamed answers, sources, generator badge and feedback.

A submitted prompt is stored as "pending" in session state before anything else happens and
removed only once its answer is in the history: right after login the cookie component
triggers extra reruns, and a rerun that interrupts the run holding a fresh `st.chat_input`
value used to swallow the message (1 time in 6 in the previous prototype). With the pending
slot the next run simply answers it.

The history follows permissions: on every run the sources still on screen are checked
against the user's current role (`ragcore.documents.catalog.readable_chunks`). A turn with a source
that was deleted or is no longer readable loses its answer and all its sources — from the
session state too, not just from the page — because the answer was written from all of
them and may repeat any; a Turkish notice says why.

Every question is asked in a saved conversation (`ragcore.conversations`): the first one makes
it, its id is kept in the session (`CONVERSATION`) and in the address (`?sohbet=…`, kept by
`ui.conversations`), and a follow-up is resolved into a standalone question before it is
answered. The question searched is shown above the answer ("Şöyle anladım: …") with a "Düzelt"
control that asks the corrected question exactly as written (no second rewrite: the user has
said what they meant).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

import streamlit as st

from ragcore.answer import EXTRACTIVE_NOTICE
from ragcore.conversations import UNDERSTOOD
from ragcore.core import (
    OUTCOME_ANSWER,
    OUTCOME_CLOSEST,
    STATUS_ERROR,
    STATUS_NEEDS_REVIEW,
    Answer,
    Source,
    User,
)
from ui.context import AppContext, Services, badge_for_label, get_services
from ui.markdown import escape_answer, escape_markdown
from ui.sources import render_source

log = logging.getLogger("dayanak.app")

HISTORY = "chat_history"
PENDING = "chat_pending"
PENDING_AS_TYPED = "chat_pending_as_typed"  # the pending question is a correction: ask it as written
CONVERSATION = "chat_conversation"  # the open conversation's public id; None: the next question starts one
FIX_BUTTON = "Düzelt"
FIX_LABEL = "Soruyu tam hâliyle yazın"
FIX_SUBMIT = "Bu soruyu sor"
FIX_HELP = "Soru yanlış anlaşıldıysa düzeltin: yazdığınız soru, yeniden yorumlanmadan olduğu gibi sorulur."
ASK_AGAIN = "Sorunuzu yeniden gönderin; yeni bir sohbette cevaplanır."
NOT_SAVED = "Bu cevap sohbete kaydedilemedi; sonraki sorunuz yeni bir sohbet başlatır."
NO_MODEL_BADGE = "Model çağrılmadı: kaynaklarda yeterli dayanak bulunamadı"
NO_MODEL_HELP = ("Arama, erişebildiğiniz dokümanlarda bu soruya yetecek kadar ilgili bir parça bulamadı; bu yüzden "
                 "ne bir dil modeli ne de alıntı modu çalıştırıldı.")
ANSWER_FAILED = ("Cevap oluşturulurken beklenmeyen bir hata oluştu. Sorunuzu biraz sonra yeniden gönderin; sorun "
                 "sürerse yöneticinize başvurun.")
REVOKED_NOTICE = ("Bu cevabın dayandığı kaynaklardan en az birine artık erişiminiz yok (doküman silindi ya da "
                  "erişim rolleri değişti); cevap ve kaynakları gizlendi.")


SCOPE = "chat_scope"  # the picker's key: "" everything, "k:<collection id>", "d:<document id>"
SCOPE_NAMES = "chat_scope_names"  # the picker's choices by name, for the answer's caption
SCOPE_LABEL = "Nerede arayayım?"
EVERYWHERE_KEY = ""
EVERYWHERE = "Tüm belgelerim"

NOT_FOUND = "Kaynaklarda bu sorunun cevabı bulunamadı."
CLOSEST_NOTE = ("Bu bir cevap değil: yukarıdakiler konuya en yakın parçalardır; lütfen aşağıdaki kaynaklardan "
                "kendiniz okuyun. Soru, yöneticinin inceleme kuyruğuna eklendi.")
UNUSED_SOURCES = "Cevapta kullanılmayan diğer kaynaklar"
NEAREST_CAPTION = "Kaynaklar · her parçada sorunuza en yakın cümle renkle işaretlidir (bir cevap değildir)"


@dataclass
class Turn:
    question: str
    text: str = ""
    status: str = ""
    badge: str = ""
    sources: tuple[Source, ...] = ()
    cited: tuple[int, ...] = ()
    question_id: str | None = None  # the public id: it is in widget keys, and those reach the browser
    notice: str | None = None
    error: str | None = None
    timings: dict = field(default_factory=dict)
    revoked: bool = False  # a source became unreadable: answer and sources dropped
    terms: frozenset[str] = frozenset()  # the question's words bolded in the sources
    outcome: str | None = OUTCOME_ANSWER  # answer | closest | refused (ragcore.retrieval.abstention)
    nearest: tuple[str, ...] = ()  # closest outcome: each source's sentence nearest the question, marked
    cut: bool = False  # the model's answer was cut (time, length, loop, echo): `notice` says why
    resolved: str | None = None  # a follow-up rewritten: the question searched ("Şöyle anladım: …")
    reopened: bool = False  # read back from a saved conversation: its cited sources only, no scores
    scope: str = ""  # where it was searched when restricted ("Talimatlar" koleksiyonu); "" everywhere

    @property
    def is_fallback(self) -> bool:
        return self.status in ("fallback", STATUS_NEEDS_REVIEW)

    @property
    def quoted(self) -> bool:
        """Written by the extractive quoter (no language model)."""
        return self.badge == badge_for_label("extractive")


def turn_from_answer(answer: Answer, terms: frozenset[str] = frozenset()) -> Turn:
    """The answer as the chat keeps it. No badge when no generator ran (the refusal gate
    answered before any model was asked): the footer says so instead."""
    return Turn(
        question=answer.question,
        text=answer.text,
        status=answer.status,
        outcome=answer.outcome,
        badge=badge_for_label(answer.generator),
        sources=tuple(answer.sources),
        cited=tuple(answer.cited),
        question_id=answer.question_id,
        notice=answer.notice,
        timings={"retrieval_ms": answer.retrieval_ms, "first_token_ms": answer.first_token_ms,
                 "total_ms": answer.total_ms},
        terms=terms,
        nearest=tuple(answer.nearest),
        cut=bool(answer.extra.get("cut")),
    )


def history() -> list[Turn]:
    return st.session_state.setdefault(HISTORY, [])


def take_prompt(settings_max_chars: int) -> None:
    """Read the chat input first thing and park it in the pending slot."""
    prompt = st.chat_input("Sorunuzu yazın…", max_chars=settings_max_chars, key="chat_input")
    if prompt is not None:
        st.session_state[PENDING] = prompt


def render_sources(ctx: AppContext, user: User, turn: Turn, key: str) -> None:
    """The cited sources first, numbered as the answer cites them ([1] is the first citation,
    `ragcore.answer.postprocess.renumber`), then the rest of the context, labelled as not used."""
    if not turn.sources:
        return
    cited = set(turn.cited)
    closest = turn.outcome == OUTCOME_CLOSEST
    used = list(turn.sources) if closest else [s for s in turn.sources if s.rank in cited]
    unused = [s for s in turn.sources if s not in used]
    marks = dict(zip((s.rank for s in turn.sources), turn.nearest, strict=False)) if closest else {}
    if used:
        st.caption(NEAREST_CAPTION if marks else "Kaynaklar")
    for source in used:
        render_source(ctx, user, source, turn.terms, f"{key}_src{source.rank}", marked=marks.get(source.rank, ""),
                      score_name=None if turn.reopened else "benzerlik skoru")
    if unused:
        st.caption(UNUSED_SOURCES)
    for source in unused:
        render_source(ctx, user, source, turn.terms, f"{key}_src{source.rank}")


def render_answer_text(turn: Turn) -> None:
    """The answer itself. The closest passages get a box of their own — a warning with the lead,
    the "Yakın parça n" lines and what they are — so they cannot be read as an answer."""
    if turn.outcome == OUTCOME_CLOSEST:
        st.warning(escape_markdown(f"{turn.text}\n\n{CLOSEST_NOTE}"), icon=":material/travel_explore:")
    else:
        st.markdown(escape_answer(turn.text))


def _save_feedback(ctx: AppContext, user: User, question_id: str) -> None:
    from ragcore.answer import QuestionLogError, set_feedback

    choice = st.session_state.get(f"fb_{question_id}")
    comment = st.session_state.get(f"fb_comment_{question_id}") or None
    if choice is None:
        return
    try:
        set_feedback(ctx.db, question_id, user.username, 1 if choice == 1 else -1, comment)
        st.session_state[f"fb_saved_{question_id}"] = "Geri bildiriminiz kaydedildi. Teşekkürler!"
    except QuestionLogError as exc:
        st.session_state[f"fb_saved_{question_id}"] = f"⚠️ {exc}"


def render_feedback(ctx: AppContext, user: User, turn: Turn) -> None:
    if turn.question_id is None:
        return
    qid = turn.question_id
    st.feedback("thumbs", key=f"fb_{qid}", on_change=_save_feedback, args=(ctx, user, qid))
    if st.session_state.get(f"fb_{qid}") is not None:
        with st.form(f"fb_form_{qid}", border=False):
            st.text_input("Yorum (isteğe bağlı)", key=f"fb_comment_{qid}", max_chars=2000,
                          placeholder="Cevapta eksik ya da yanlış olan neydi?")
            st.form_submit_button("Yorumu gönder", on_click=_save_feedback, args=(ctx, user, qid))
    if st.session_state.get(f"fb_saved_{qid}"):
        st.caption(escape_markdown(st.session_state[f"fb_saved_{qid}"]))


def render_badge(turn: Turn) -> None:
    """Who wrote the answer; when nobody did (the refusal gate), that no model was called."""
    if not turn.badge:
        if turn.is_fallback and not turn.reopened:  # a saved turn does not keep who wrote it
            st.badge(NO_MODEL_BADGE, icon=":material/block:", color="gray", help=NO_MODEL_HELP)
        return
    suffix = " · dil modeli kullanılmadı" if turn.quoted else ""  # no language model: say so, explain on hover
    st.badge(escape_markdown(f"Üreten: {turn.badge}{suffix}"), icon=":material/smart_toy:",
             color="gray" if turn.is_fallback else "blue", help=escape_markdown(EXTRACTIVE_NOTICE) if turn.quoted else None)


def render_footer(ctx: AppContext, user: User, turn: Turn, key: str) -> None:
    """Everything under the answer text: status, badge, notice, sources, feedback."""
    if turn.outcome == OUTCOME_CLOSEST:
        pass  # said in the answer's own box (render_answer_text)
    elif turn.status == STATUS_NEEDS_REVIEW:
        st.warning("Erişebildiğiniz dokümanlarda bu sorunun cevabı bulunamadı. Soru, yöneticinin "
                   "inceleme kuyruğuna eklendi.", icon=":material/help:")
    elif turn.is_fallback and turn.reopened:
        st.warning(NOT_FOUND, icon=":material/help:")
    elif turn.is_fallback:
        st.warning("Alıntı modu, kaynaklarda bu soruyu cevaplayan bir cümle bulamadı." if turn.quoted
                   else "Dil modeli, kaynaklarda bu sorunun cevabını bulamadı.", icon=":material/help:")
    if turn.notice and turn.status != STATUS_ERROR:
        st.info(escape_markdown(turn.notice), icon=":material/info:")
    if turn.status == STATUS_ERROR and turn.notice and turn.cut:  # the server answered, but not usably
        st.warning(escape_markdown(turn.notice), icon=":material/content_cut:")
    elif turn.status == STATUS_ERROR and turn.notice:
        st.error(escape_markdown(f"Model sunucusu cevap veremedi: {turn.notice} En ilgili parçalar alıntılandı."),
                 icon=":material/cloud_off:")
    render_badge(turn)
    render_sources(ctx, user, turn, key)
    render_feedback(ctx, user, turn)


def apply_permissions(ctx: AppContext, user: User, turns: list[Turn]) -> None:
    """Drop, in place, every answer that cites a chunk the user's role may no longer read."""
    from ragcore.documents import readable_chunks

    shown = {source.chunk_id for turn in turns for source in turn.sources}
    if not shown:
        return
    permitted = readable_chunks(ctx.db, shown, user.role)
    for index, turn in enumerate(turns):
        if any(source.chunk_id not in permitted for source in turn.sources):
            turns[index] = Turn(question=turn.question, status=turn.status, question_id=turn.question_id,
                                revoked=True)
        elif turn.resolved is not None and any(t.revoked for t in turns[:index]):
            # The rewrite may carry words of an answer now hidden (the rules: its article; a model:
            # its text), so it is shown as typed, as a reopened conversation shows it.
            turns[index] = replace(turn, resolved=None)


def turn_key(turn: Turn, index: int) -> str:
    """Widget keys of a turn: its question's id once logged, else its place in the history."""
    return f"chat_q{turn.question_id}" if turn.question_id is not None else f"chat_t{index}"


def _ask_corrected(key: str) -> None:
    text = (st.session_state.get(key) or "").strip()
    if text:
        st.session_state[PENDING] = text
        st.session_state[PENDING_AS_TYPED] = True


def render_fix(ctx: AppContext, turn: Turn, key: str) -> None:
    """The "Düzelt" control: the question searched, editable, asked as written when sent."""
    with st.popover(FIX_BUTTON, icon=":material/edit:", help=FIX_HELP), st.form(f"{key}_fix", border=False):
        st.text_area(FIX_LABEL, value=turn.resolved or turn.question, key=f"{key}_fix_text",
                     max_chars=ctx.settings.max_question_chars, height=80)
        st.form_submit_button(FIX_SUBMIT, on_click=_ask_corrected, args=(f"{key}_fix_text",), type="primary")


def render_understood(ctx: AppContext, turn: Turn, key: str) -> None:
    """"Şöyle anladım: …" above the answer to a rewritten follow-up, with its "Düzelt" control."""
    if turn.resolved is None:
        return
    cols = st.columns([3, 1], vertical_alignment="center")
    cols[0].caption(escape_markdown(UNDERSTOOD + turn.resolved))
    with cols[1]:
        render_fix(ctx, turn, key)


def render_turn(ctx: AppContext, user: User, turn: Turn, key: str) -> None:
    with st.chat_message("user"):
        st.markdown(escape_markdown(turn.question))
    with st.chat_message("assistant"):
        if turn.revoked:
            st.warning(REVOKED_NOTICE, icon=":material/lock:")
            return
        render_understood(ctx, turn, key)
        if turn.scope:
            st.caption(escape_markdown(f"Yalnızca şurada arandı: {turn.scope}"))
        if turn.error:
            st.error(escape_markdown(turn.error))
            return
        render_answer_text(turn)
        render_footer(ctx, user, turn, key)


def _escaped(pieces: Iterable[str]) -> Iterator[str]:
    at_line_start = True
    for piece in pieces:
        if piece:
            yield escape_answer(piece, at_line_start)
            at_line_start = piece.endswith("\n")


def answer_pending(ctx: AppContext, services: Services, user: User) -> None:
    """Answer the pending prompt in the open conversation (streaming), store the turn, append it
    to the history, then clear the slot."""
    prompt = st.session_state.get(PENDING)
    if prompt is None:
        return
    from ragcore.answer import GeneratorError, QuestionError
    from ragcore.conversations import ConversationError, ConversationNotFound
    from ragcore.embed import EmbeddingError

    as_typed = bool(st.session_state.pop(PENDING_AS_TYPED, False))
    with st.chat_message("user"):
        st.markdown(escape_markdown(prompt.strip() or " "))
    with st.chat_message("assistant"):
        turn = Turn(question=prompt.strip())
        if services.answers is None:
            turn.error = unavailable_message(services)
        else:
            try:
                turn = _answer(ctx, services, user, prompt, as_typed)
            except ConversationNotFound as exc:  # deleted in another tab, or expired: start afresh
                st.session_state[CONVERSATION] = None
                turn.error = f"{exc} {ASK_AGAIN}"
            except (QuestionError, ConversationError) as exc:  # Turkish, and say what to do
                turn.error = str(exc)
            except (EmbeddingError, GeneratorError) as exc:  # their messages are Turkish and say what to do
                log.warning("answering a question of %s failed: %s", user.username, exc)
                turn.error = f"Cevap oluşturulurken bir hata oluştu: {exc}"
            except Exception:  # the UI must say what went wrong, in Turkish; the details go to the log
                log.exception("answering a question of %s failed", user.username)
                turn.error = ANSWER_FAILED
        if turn.error:
            st.error(escape_markdown(turn.error))
    history().append(turn)
    st.session_state.pop(PENDING, None)


def _answer(ctx: AppContext, services: Services, user: User, prompt: str, as_typed: bool) -> Turn:
    """Resolve the question in the open conversation, stream its answer, store the turn.

    A correction ("Düzelt", `as_typed`) is checked like any question but searched as written."""
    from ragcore.conversations import ConversationError, Resolution, condenser, prepare_turn, record_turn

    service = services.answers
    prepared = prepare_turn(service, user, st.session_state.get(CONVERSATION), prompt, generator=condenser(service))
    if as_typed:
        prepared = replace(prepared, resolution=Resolution.as_typed(prepared.question))
    resolution = prepared.resolution
    fix = st.empty()
    if resolution.shown:
        cols = st.columns([3, 1], vertical_alignment="center")
        cols[0].caption(escape_markdown(resolution.shown))
        fix = cols[1].empty()
    if resolution.notice:
        st.caption(escape_markdown(resolution.notice))
    scope, where = chosen_scope(ctx, user)
    if where:
        st.caption(escape_markdown(f"Yalnızca şurada arandı: {where}"))
    stream = service.stream(user, resolution.question, scope=scope)
    placeholder = st.empty()
    with placeholder.container():
        st.write_stream(_escaped(stream))
    answer = stream.answer
    if answer is None:
        raise RuntimeError("cevap tamamlanamadı")
    turn = replace(turn_from_answer(answer, _terms(ctx, user, answer)), question=prepared.question,
                   resolved=resolution.question if resolution.rewritten else None, scope=where)
    key = turn_key(turn, len(history()))
    if turn.resolved is not None:
        with fix.container():
            render_fix(ctx, turn, key)
    if stream.replaced or turn.outcome == OUTCOME_CLOSEST:
        with placeholder.container():
            render_answer_text(turn)
    render_footer(ctx, user, turn, key)
    try:
        conversation, _ = record_turn(service, user, prepared, answer)
    except ConversationError as exc:  # deleted in another tab meanwhile, or full: the answer stays on screen
        log.warning("a turn of %s was not stored: %s", user.username, exc)
        st.warning(escape_markdown(f"{exc} {NOT_SAVED}"), icon=":material/warning:")
        st.session_state[CONVERSATION] = None
        return turn
    st.session_state[CONVERSATION] = conversation.id
    return turn


def _terms(ctx: AppContext, user: User, answer: Answer) -> frozenset[str]:
    """The question's words to bold in this answer's sources (rare in what the role reads)."""
    if not answer.sources:
        return frozenset()
    from ragcore.retrieval import highlight_terms

    return highlight_terms(ctx.retrieval_db, answer.question, user.role)


def keep_unsent_question(ctx: AppContext, error: Exception) -> bool:
    """The database went down before this run reached the chat: put the question just submitted
    (if any) in the spool as an unanswered one, for the user last signed in. Returns whether one was."""
    from ragcore.answer import QuestionSpool, question_record, spool_path
    from ragcore.core import STATUS_ERROR, sanitize
    from ui.auth import USER

    prompt, user = st.session_state.get("chat_input"), st.session_state.get(USER)
    if not prompt or not sanitize(prompt).strip() or user is None:
        return False
    QuestionSpool(spool_path(ctx.settings)).append(question_record(
        user, sanitize(prompt).strip(), answer=None, status=STATUS_ERROR, generator=None, llm_called=False,
        error=f"veritabanına ulaşılamadı: {error}"))
    return True


def unavailable_message(services: Services) -> str:
    if "embedder" in services.errors:
        return f"Arama modeli kullanılamıyor, soru cevaplanamadı. Ayrıntı: {services.errors['embedder']}"
    detail = services.errors.get("generator", "bilinmeyen hata")
    return f"Cevap modeli (Ollama / OpenAI uyumlu sunucu) kullanılamıyor. Ayrıntı: {detail}"


def scope_choices(ctx: AppContext, user: User) -> dict[str, tuple[str, str]]:
    """The picker's choices, key -> (label, name): everything, the collections the user can ask
    within (those holding a document their roles read, counted over those alone), and each
    readable document. Nothing the user cannot read is named."""
    from ragcore.documents import list_collections, list_documents

    choices = {EVERYWHERE_KEY: (EVERYWHERE, "")}
    for collection in list_collections(ctx.db, user.roles):
        choices[f"k:{collection.public_id}"] = (f"Koleksiyon: {collection.name} ({collection.documents} belge)",
                                                collection.name)
    readable = list_documents(ctx.db, user.reader)  # current versions the user's roles read, one listing
    for doc in sorted(readable, key=lambda d: d.title.casefold()):
        choices[f"d:{doc.public_id}"] = (f"Belge: {doc.title}", doc.title)
    return choices


def render_scope_picker(ctx: AppContext, user: User) -> None:
    """"Nerede arayayım?" beside the question box. The choice stays for the session (a follow-up
    is asked where the question before it was) until changed; it is each question's own and is
    not saved with the conversation, so a reopened conversation asks everywhere again."""
    choices = scope_choices(ctx, user)
    if st.session_state.get(SCOPE) not in choices:  # deleted, emptied or no longer readable meanwhile
        st.session_state[SCOPE] = EVERYWHERE_KEY
    st.selectbox(SCOPE_LABEL, options=list(choices), format_func=lambda key: choices[key][0], key=SCOPE,
                 help="Soru yalnızca seçtiğiniz koleksiyonun ya da belgenin içinde aranır; yine yalnızca "
                      "okuyabildiğiniz belgeler.")
    st.session_state[SCOPE_NAMES] = {key: name for key, (_, name) in choices.items()}


def chosen_scope(ctx: AppContext, user: User):
    """The picker's current choice as a retrieval scope, and its label ("" for everything)."""
    from ragcore.documents import Scope

    key = st.session_state.get(SCOPE) or EVERYWHERE_KEY
    name = st.session_state.get(SCOPE_NAMES, {}).get(key, "")
    if key.startswith("k:"):
        return Scope(collection=key[2:]), name
    if key.startswith("d:"):
        return Scope(document=key[2:]), name
    return None, ""


def render_chat(ctx: AppContext, user: User) -> None:
    """The history and the pending question's answer (`take_prompt` has run first: ui.conversations)."""
    turns = history()
    apply_permissions(ctx, user, turns)
    if not turns and st.session_state.get(PENDING) is None:
        st.info("Dokümanlarınız hakkında Türkçe bir soru sorun; cevap, kaynak sayfalarıyla birlikte gelir. "
                "Örnek: *İşveren risk değerlendirmesi yapmakla yükümlü müdür?*", icon=":material/chat:")
    for index, turn in enumerate(turns):
        render_turn(ctx, user, turn, turn_key(turn, index))
    if st.session_state.get(PENDING) is not None:
        answer_pending(ctx, get_services_safely(), user)


def get_services_safely() -> Services:
    with st.spinner("Modeller hazırlanıyor…"):
        return get_services()


def clear_history() -> None:
    """"Yeni sohbet": an empty chat; the next question starts a new conversation."""
    st.session_state[HISTORY] = []
    st.session_state.pop(PENDING, None)
    st.session_state.pop(PENDING_AS_TYPED, None)
    st.session_state[CONVERSATION] = None
