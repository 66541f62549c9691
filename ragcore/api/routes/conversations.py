"""The caller's saved conversations: list, open, rename, delete, export as Markdown or PDF.

Thin over `ragcore.conversations`: every function there names the owner beside the id, so
somebody else's conversation, a missing one, an expired one and text that is no id at all (a
sequential key like `17` included) get the same 404 bytes, through the same two queries. Nobody —
an admin neither — reads another user's conversations here; the review queue is the app's. A
reopened conversation shows what the caller may read now: an answer from a document the caller's
role can no longer read is hidden (`hidden: true`), in the export too.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response
from fastapi import Path as PathParam

from ragcore import conversations as convs
from ragcore.api import errors
from ragcore.api.deps import Context, CurrentUser
from ragcore.api.schemas import (
    ConversationDeleted,
    ConversationDetail,
    ConversationList,
    ConversationOut,
    ErrorResponse,
    RenameRequest,
)
from ragcore.core import parse_public_id

router = APIRouter(tags=["conversations"])

Id = Annotated[str, PathParam(description="the conversation's public id (a random UUID)")]
NOT_FOUND = {401: {"model": ErrorResponse}, 404: {"model": ErrorResponse}}


def conversation_error(exc: convs.ConversationError) -> errors.ApiError:
    """The API's answer to a refused conversation action (the Turkish text is the service's)."""
    if isinstance(exc, convs.ConversationNotFound):
        return errors.conversation_not_found()
    if isinstance(exc, convs.ConversationFull):
        return errors.ApiError(409, "conversation_full", str(exc),
                               "The conversation holds its maximum of questions; ask in a new conversation.")
    if isinstance(exc, convs.AccountInactive):
        return errors.ApiError(403, "account_inactive", str(exc), "Your account was not found or is deactivated.")
    if isinstance(exc, convs.InvalidTitle):
        return errors.ApiError(422, "invalid_title", str(exc),
                               f"The title must be 1 to {convs.MAX_TITLE_CHARS} characters.")
    if isinstance(exc, convs.ExportError):
        return errors.ApiError(503, "export_unavailable", str(exc),
                               "The file cannot be made on this server (see message_tr); Markdown still works.")
    return errors.ApiError(422, "conversation_refused", str(exc), "The conversation action was refused.")


@router.get("/v1/conversations", response_model=ConversationList, responses={401: {"model": ErrorResponse}},
            summary="Your saved conversations, most recently used first")
def list_conversations(user: CurrentUser, context: Context,
                       limit: Annotated[int, Query(ge=1, le=convs.MAX_LIST_LIMIT)] = convs.LIST_LIMIT
                       ) -> ConversationList:
    try:
        found = convs.list_conversations(context.database(), context.settings, user, limit=limit)
    except convs.ConversationError as exc:
        raise conversation_error(exc) from None
    return ConversationList(conversations=[ConversationOut.of(c) for c in found])


@router.get("/v1/conversations/{conversation_id}", response_model=ConversationDetail, responses=NOT_FOUND,
            summary="One of your conversations with every question and answer (404 when missing or not yours)")
def get_conversation(conversation_id: Id, user: CurrentUser, context: Context) -> ConversationDetail:
    try:
        return ConversationDetail.of(convs.get_conversation(context.database(), context.settings, user,
                                                            conversation_id))
    except convs.ConversationError as exc:
        raise conversation_error(exc) from None


@router.patch("/v1/conversations/{conversation_id}", response_model=ConversationOut,
              responses={**NOT_FOUND, 422: {"model": ErrorResponse}}, summary="Rename one of your conversations")
def rename_conversation(conversation_id: Id, body: RenameRequest, user: CurrentUser,
                        context: Context) -> ConversationOut:
    try:
        return ConversationOut.of(convs.rename_conversation(context.database(), context.settings, user,
                                                            conversation_id, body.title))
    except convs.ConversationError as exc:
        raise conversation_error(exc) from None


@router.delete("/v1/conversations/{conversation_id}", response_model=ConversationDeleted, responses=NOT_FOUND,
               summary="Delete one of your conversations with its questions and answers")
def delete_conversation(conversation_id: Id, user: CurrentUser, context: Context) -> ConversationDeleted:
    try:
        convs.delete_conversation(context.database(), user, conversation_id)
    except convs.ConversationError as exc:
        raise conversation_error(exc) from None
    return ConversationDeleted(deleted=parse_public_id(conversation_id))


@router.get("/v1/conversations/{conversation_id}/export", response_class=Response,
            responses={**NOT_FOUND, 503: {"model": ErrorResponse},
                       200: {"content": {"text/markdown": {}, "application/pdf": {}}}},
            summary="One of your conversations as a Markdown or PDF file (answers, citations, versions)")
def export_conversation(conversation_id: Id, user: CurrentUser, context: Context,
                        format: Annotated[Literal["md", "pdf"], Query(description="md or pdf")] = "md") -> Response:
    try:
        file = convs.export_conversation(context.database(), context.settings, user, conversation_id, format)
    except convs.ConversationError as exc:
        raise conversation_error(exc) from None
    return Response(file.data, media_type=file.media_type,
                    headers={"Content-Disposition": f'attachment; filename="{file.filename}"'})
