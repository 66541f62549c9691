"""GET /v1/search: retrieval only, with the evidence and the refusal decision (Kaynak arama).

Exactly the retrieval the chat runs (`ragcore.retrieval.hybrid.retrieve`, same role predicate, same
mode unless `mode` names another) and the chat's threshold, but no generator is called and
nothing is logged, so it is cheap to try many phrasings while calibrating REFUSAL_THRESHOLD.
The role is the caller's; an admin may pass `role=` to see what another role would see.
`collection=` / `document=` restrict the search as on POST /v1/chat (checked against the caller's
own roles; the role searched applies its predicate inside the SQL as well).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from ragcore.access import role_names
from ragcore.api.deps import Context, CurrentUser, ModelServices, search_role
from ragcore.api.routes.chat import checked_question, request_scope
from ragcore.api.schemas import ErrorResponse, EvidenceOut, SearchHit, SearchResult, SourceOut, ThresholdOut
from ragcore.retrieval import resolve_mode, retrieve, should_refuse, threshold_for

router = APIRouter(tags=["search"])
MAX_K = 50  # as on the Kaynak arama page

Mode = Literal["auto", "rrf", "weighted", "dense", "lexical"]


@router.get(
    "/v1/search", response_model=SearchResult, summary="Retrieval only: sources, evidence, threshold decision",
    responses={401: {"model": ErrorResponse}, 403: {"model": ErrorResponse}, 422: {"model": ErrorResponse}},
)
def search(
    user: CurrentUser, context: Context, models: ModelServices,
    q: Annotated[str, Query(description="the question or search text")],
    k: Annotated[int | None, Query(ge=1, le=MAX_K, description="results (default TOP_K)")] = None,
    mode: Annotated[Mode, Query(description="auto = RETRIEVAL_MODE / the measured default")] = "auto",
    role: Annotated[str | None, Query(description="admin only: search as this role")] = None,
    collection: Annotated[str | None, Query(max_length=64, description="search only this collection")] = None,
    document: Annotated[str | None, Query(max_length=64, description="search only this document")] = None,
) -> SearchResult:
    question = checked_question(q, context.settings.max_question_chars)
    as_role = search_role(user, role, role_names(context.database()))
    scope = request_scope(context, user, collection=collection, document=document)
    concrete = resolve_mode(context.settings, models.embedder, None if mode == "auto" else mode)
    count = k or context.settings.top_k
    result = retrieve(context.retrieval_database(), models.embedder, question, as_role, k=count, mode=concrete,
                      windows=context.settings.dense_windows, scope=scope,
                      postings_budget=context.settings.lexical_postings_budget)
    threshold = threshold_for(getattr(models.embedder, "name", ""), concrete, context.settings)
    evidence = result.evidence
    return SearchResult(
        question=question, role=as_role, mode=concrete, k=count,
        results=[SearchHit(**SourceOut.of(h.source).model_dump(), dense_score=h.dense_score,
                           lexical_score=h.lexical_score) for h in result.hits],
        evidence=EvidenceOut(**evidence.as_dict()),
        threshold=ThresholdOut(signal=threshold.signal, value=threshold.value, measured=threshold.measured,
                               score=threshold.score(evidence), refuse=should_refuse(evidence, threshold)),
        retrieval_ms=round(result.ms, 1),
    )
