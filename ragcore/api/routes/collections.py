"""GET /v1/collections: the collections the caller can ask within (`collection` on POST /v1/chat).

Only what the caller's roles read shows: a collection holding none of their documents is not
listed (and is a 404 when named), and each count is of their readable documents alone, so the
list says nothing about documents they cannot read. Creating and filling collections is the
admin's, on the Dokümanlar page.
"""

from __future__ import annotations

from fastapi import APIRouter

from ragcore.api.deps import Context, CurrentUser
from ragcore.api.schemas import CollectionList, CollectionOut, ErrorResponse
from ragcore.documents import list_collections

router = APIRouter(tags=["collections"])


@router.get("/v1/collections", response_model=CollectionList, summary="Collections the caller can ask within",
            responses={401: {"model": ErrorResponse}})
def collections(user: CurrentUser, context: Context) -> CollectionList:
    found = list_collections(context.database(), user.roles)
    return CollectionList(collections=[CollectionOut(id=c.public_id, name=c.name, description=c.description,
                                                     documents=c.documents) for c in found])
