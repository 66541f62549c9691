"""GET /v1/roles: the roles an API client can name — the `roles` of POST /v1/documents, the
`role` an admin may search as — with the labels people see in the app.

An admin gets every role (the built-in ones and those made on the Kullanıcılar page); anyone
else gets only their own roles, so the list tells a user nothing about how the company is
divided beyond what they already are. Making, renaming and deleting roles stays on the
Kullanıcılar page.
"""

from __future__ import annotations

from fastapi import APIRouter

from ragcore.access import list_roles
from ragcore.api.deps import Context, CurrentUser
from ragcore.api.schemas import ErrorResponse, RoleList, RoleOut

router = APIRouter(tags=["roles"])


@router.get("/v1/roles", response_model=RoleList, summary="The roles the caller may name",
            responses={401: {"model": ErrorResponse}})
def roles(user: CurrentUser, context: Context) -> RoleList:
    every = list_roles(context.database())
    shown = every if user.is_admin else [r for r in every if r.name in user.roles]
    return RoleList(roles=[RoleOut(name=r.name, label=r.label, description=r.description, builtin=r.builtin)
                           for r in shown])
