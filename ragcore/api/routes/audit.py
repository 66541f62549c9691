"""The audit trail for an admin or an auditor: GET /v1/audit/questions (a page, as JSON) and
GET /v1/audit/questions.csv (the same rows as a file for Excel, streamed, at most
AUDIT_EXPORT_MAX_ROWS).

Thin over `ragcore.audit`. Every other caller gets the same 403 before any filter is read; a
document filter that names no stored document is the usual 404 (`document_not_found`).
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from ragcore import audit
from ragcore.api import errors
from ragcore.api.deps import AuditReader, Context
from ragcore.api.schemas import AuditQuestionList, ErrorResponse

router = APIRouter(tags=["audit"])

REFUSED = {401: {"model": ErrorResponse}, 403: {"model": ErrorResponse}, 404: {"model": ErrorResponse},
           422: {"model": ErrorResponse}}
User = Annotated[str | None, Query(description="only this user's questions (user name)")]
Role = Annotated[str | None, Query(description="only questions asked while holding this role")]
Document = Annotated[str | None, Query(description="only questions shown a passage of this document (public id)")]
Since = Annotated[date | None, Query(description="from this day (YYYY-MM-DD, inclusive)")]
Until = Annotated[date | None, Query(description="to this day (YYYY-MM-DD, inclusive)")]
Outcome = Annotated[Literal["answer", "closest", "refused", "error"] | None, Query(description="only this outcome")]


def _filters(context: Context, user: str | None, role: str | None, document: str | None, since: date | None,
             until: date | None, outcome: str | None) -> audit.AuditFilter:
    key = None
    if document is not None:
        key = audit.document_key(context.database(), document)
        if key is None:
            raise errors.document_not_found()
    filters = audit.AuditFilter(username=user, role=role, document=key, since=since, until=until, outcome=outcome)
    try:
        filters.params()
    except audit.AuditFilterError as exc:
        raise errors.ApiError(422, "invalid_filter", str(exc), "The filters cannot be used (see message_tr).") from None
    return filters


@router.get("/v1/audit/questions", response_model=AuditQuestionList, responses=REFUSED,
            summary="The questions log as an audit trail (admin or auditor): who asked what, when, with which "
                    "roles, the outcome and every passage shown")
def audit_questions(reader: AuditReader, context: Context, user: User = None, role: Role = None,
                    document: Document = None, since: Since = None, until: Until = None, outcome: Outcome = None,
                    page: Annotated[int, Query(ge=1)] = 1,
                    page_size: Annotated[int, Query(ge=1, le=audit.MAX_PAGE_SIZE)] = audit.PAGE_SIZE,
                    ) -> AuditQuestionList:
    filters = _filters(context, user, role, document, since, until, outcome)
    return AuditQuestionList.of(audit.audit_page(context.database(), reader, filters, page, page_size))


@router.get("/v1/audit/questions.csv", response_class=StreamingResponse,
            responses={**REFUSED, 200: {"content": {"text/csv": {}}}},
            summary="The same rows as a CSV file for Excel (UTF-8 with BOM, ';'), at most AUDIT_EXPORT_MAX_ROWS")
def audit_questions_csv(reader: AuditReader, context: Context, user: User = None, role: Role = None,
                        document: Document = None, since: Since = None, until: Until = None,
                        outcome: Outcome = None) -> StreamingResponse:
    filters = _filters(context, user, role, document, since, until, outcome)
    chunks = (chunk.encode("utf-8") for chunk in
              audit.csv_chunks(context.database(), context.settings, reader, filters))
    return StreamingResponse(chunks, media_type="text/csv; charset=utf-8",
                             headers={"Content-Disposition": f'attachment; filename="{audit.csv_filename()}"'})
