"""POST /v1/chat: the app's answer service, as JSON or as server-sent events, in a saved conversation.

The same `AnswerService.stream` the Sohbet page iterates: retrieval with the role predicate
inside SQL, the refusal check, the prompt, the generator, the citation policy and the log.
With `Accept: text/event-stream` every text piece is an `event: delta`, and the last event
(`event: done`) carries the final answer, its sources and the question id — and
`replaced: true` when the final text is not the concatenated pieces (a refusal or an
unreliable model answer was replaced, exactly when the page swaps its streamed text).

Every question is asked in a conversation (`ragcore.conversations`): the one `conversation_id`
names — somebody else's or a missing one is the same 404, before anything is answered — or a new
one. A follow-up is first resolved into a standalone question from the conversation's earlier
turns (by the language model when the answers come from one, else by the rules); that question
is what is answered and logged, `understood` says how it was read, and the turn is saved once the
answer is complete (`conversation_id` and `turn` in the answer and in the `done` event).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator

from fastapi import APIRouter, Request
from fastapi.sse import EventSourceResponse, format_sse_event

from ragcore import conversations as convs
from ragcore.answer import AnswerService, AnswerStream, QuestionError, validate_question
from ragcore.api import errors
from ragcore.api.context import ApiContext
from ragcore.api.deps import Context, CurrentUser, ModelServices
from ragcore.api.routes.conversations import conversation_error
from ragcore.api.schemas import ChatAnswer, ChatDone, ChatRequest, ErrorResponse, Understood
from ragcore.core import Answer, User
from ragcore.documents import CollectionError, CollectionNotFound, DocumentNotFound, Scope, checked_scope

log = logging.getLogger(__name__)
router = APIRouter(tags=["chat"])

SSE_EXAMPLE = ('event: delta\ndata: {"text": "Alıntı modu: …"}\n\n'
               'event: done\ndata: {"text": "…", "sources": [...], "question_id": "3f2a9c1e-…", "replaced": false, …}\n\n')


def checked_question(question: str, max_chars: int) -> str:
    """The service's own validation, with an English message next to its Turkish one."""
    try:
        return validate_question(question, max_chars)
    except QuestionError as exc:
        if not (question or "").strip():
            raise errors.ApiError(422, "question_empty", str(exc), "The question is empty.") from None
        raise errors.ApiError(422, "question_too_long", str(exc),
                              f"The question is too long: at most {max_chars} characters "
                              f"(it has {len(question.strip())}).") from None


def request_scope(context: ApiContext, user: User, *, collection: str | None, document: str | None) -> Scope:
    """The question's restriction, checked before anything is answered: a collection or a document
    that is missing and one the caller may not read get the same 404; both named, a 422."""
    try:
        return checked_scope(context.database(), user.roles, collection=collection, document=document)
    except CollectionError as exc:
        raise errors.ApiError(422, "scope_conflict", f"{exc} Birini kaldırın.",
                              "Restrict the question to a collection or to a document, not both.") from None
    except CollectionNotFound:
        raise errors.collection_not_found() from None
    except DocumentNotFound:
        raise errors.document_not_found() from None


def wants_events(request: Request) -> bool:
    return "text/event-stream" in request.headers.get("accept", "").lower()


def _event(name: str, payload: dict) -> bytes:
    return format_sse_event(event=name, data_str=json.dumps(payload, ensure_ascii=False, default=str))


def _events(stream: AnswerStream, save: Callable[[Answer], ChatAnswer]) -> Iterator[bytes]:
    try:
        for piece in stream:
            if piece:
                yield _event("delta", {"text": piece})
        assert stream.answer is not None
        answer = save(stream.answer)
    except errors.ApiError as exc:  # the turn could not be saved (the conversation went meanwhile)
        yield _event("error", exc.body())
        return
    except Exception:  # the response has started: the error must travel as an event
        log.exception("chat stream failed")
        yield _event("error", errors.error_body(
            "stream_failed", "Cevap üretilirken bir hata oluştu; lütfen yeniden deneyin.",
            "Answering failed midway; please try again."))
        return
    done = ChatDone(**answer.model_dump(), replaced=stream.replaced)
    yield _event("done", done.model_dump(mode="json"))


def _start(answers: AnswerService, user, question: str, scope: Scope) -> AnswerStream:
    try:
        return answers.stream(user, question, scope=scope)
    except QuestionError as exc:  # the account went inactive between the token check and now
        raise errors.ApiError(403, "account_inactive", str(exc), "Your account was not found or is deactivated.") \
            from None


def _prepare(answers: AnswerService, user: User, conversation_id: str | None, question: str) -> convs.PreparedTurn:
    """The conversation checked (404 for a missing one and somebody else's alike) and the follow-up resolved."""
    try:
        return convs.prepare_turn(answers, user, conversation_id, question, generator=convs.condenser(answers))
    except convs.ConversationError as exc:
        raise conversation_error(exc) from None
    except QuestionError as exc:
        raise errors.ApiError(422, "question_invalid", str(exc), "The question cannot be asked as given.") from None


def _saver(answers: AnswerService, user: User, prepared: convs.PreparedTurn) -> Callable[[Answer], ChatAnswer]:
    """Store the finished answer's turn; the answer as the API returns it, with its conversation."""
    def save(answer: Answer) -> ChatAnswer:
        try:
            conversation, turn = convs.record_turn(answers, user, prepared, answer)
        except convs.ConversationError as exc:
            raise conversation_error(exc) from None
        return ChatAnswer.of(answer, conversation_id=conversation.id, turn=turn.position,
                             understood=Understood.of(prepared))

    return save


@router.post(
    "/v1/chat", response_model=ChatAnswer,
    summary="Ask a question in a conversation (JSON, or server-sent events with Accept: text/event-stream)",
    responses={200: {"content": {"text/event-stream": {"example": SSE_EXAMPLE}}},
               401: {"model": ErrorResponse}, 404: {"model": ErrorResponse}, 409: {"model": ErrorResponse},
               422: {"model": ErrorResponse}, 429: {"model": ErrorResponse}, 503: {"model": ErrorResponse}},
)
def chat(body: ChatRequest, request: Request, user: CurrentUser, context: Context, models: ModelServices):
    question = checked_question(body.question, context.settings.max_question_chars)
    scope = request_scope(context, user, collection=body.collection, document=body.document)
    prepared = _prepare(models.answers, user, body.conversation_id, question)
    stream = _start(models.answers, user, prepared.resolution.question, scope)
    save = _saver(models.answers, user, prepared)
    if wants_events(request):
        return EventSourceResponse(_events(stream, save),
                                   headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    for _ in stream:
        pass
    assert stream.answer is not None
    return save(stream.answer)
