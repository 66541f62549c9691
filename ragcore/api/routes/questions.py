"""POST /v1/questions/{id}/feedback: rate an answer, only as the user who asked it.

`ragcore.answer.questions.set_feedback` matches the question's public id *and* the asker in one
UPDATE, so somebody else's question, a missing one and text that is no id at all (a sequential key
like `17` included) get the same 404. A −1 puts the question in the
review queue (İnceleme kuyruğu), as the 👎 in the chat does.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from ragcore.answer import QuestionLogError, set_feedback
from ragcore.api import errors
from ragcore.api.deps import Context, CurrentUser
from ragcore.api.schemas import ErrorResponse, FeedbackRequest, FeedbackResult
from ragcore.core import parse_public_id

router = APIRouter(tags=["questions"])


@router.post("/v1/questions/{question_id}/feedback", response_model=FeedbackResult,
             summary="Rate your own answer: +1 or -1, with an optional comment",
             responses={401: {"model": ErrorResponse}, 404: {"model": ErrorResponse}, 422: {"model": ErrorResponse}})
def feedback(question_id: Annotated[str, Path(description="the question's public id (`question_id` of the answer)")],
             body: FeedbackRequest, user: CurrentUser, context: Context) -> FeedbackResult:
    try:
        set_feedback(context.database(), question_id, user.username, body.value, body.comment)
    except QuestionLogError:
        raise errors.question_not_found() from None
    return FeedbackResult(question_id=parse_public_id(question_id), value=body.value)
