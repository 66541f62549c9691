"""Who is asking: the bearer token → the user and role as the database holds them now (and, for
a directory user past LDAP_RECHECK_SECONDS since the last check, as the directory holds them now).

Every authenticated request reads the token and its user afresh (`ragcore.access.tokens.authenticate`),
so a role change applies to the next request and a deactivated user's token stops at once.
Rejected tokens are throttled per client address, a valid token never (ragcore.access.tokens);
the address is the TCP peer, or the client named by X-Forwarded-For when that peer is one of
TRUSTED_PROXIES (the app's outermost middleware; ragcore.access.addresses, SECURITY.md).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ragcore.access import authenticate_token, ldap_recheck
from ragcore.api import errors
from ragcore.api.context import ApiContext, Services
from ragcore.audit import can_read_audit
from ragcore.core import User

# auto_error=False: a missing or non-Bearer header gets our bilingual 401, not FastAPI's 403.
bearer = HTTPBearer(auto_error=False, description="API anahtarı / API token: `dyk_…`",
                    bearerFormat="dyk_<43 characters>")


def get_context(request: Request) -> ApiContext:
    return request.app.state.context


Context = Annotated[ApiContext, Depends(get_context)]


def client_address(request: Request) -> str | None:
    return request.client.host if request.client else None


def current_user(request: Request, context: Context,
                 credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> User:
    """The token's user, read now; 401 for a missing/invalid token, 429 for an invalid one from a
    throttled address (a valid token always passes)."""
    if credentials is None or not credentials.credentials.strip():
        raise errors.missing_token()
    check = authenticate_token(context.database(), credentials.credentials.strip(), client_address(request))
    if check.throttled:
        raise errors.too_many_attempts(check.gate.retry_after)
    if check.user is None:
        raise errors.invalid_token()
    user = ldap_recheck(context.database(), context.settings, check.user)  # a directory user still in the directory?
    if user is None:  # just deactivated: the token is revoked with it
        raise errors.invalid_token()
    return user


CurrentUser = Annotated[User, Depends(current_user)]


def require_admin(user: CurrentUser) -> User:
    """403 for everyone but an admin — before any document or job is looked up, so the answer
    says nothing about what exists."""
    if not user.is_admin:
        raise errors.admin_only()
    return user


Admin = Annotated[User, Depends(require_admin)]


def require_audit_reader(user: CurrentUser) -> User:
    """403 for everyone but an admin or an auditor (`ragcore.audit.can_read_audit`), before any
    filter is read, so the answer says nothing about what the log holds."""
    if not can_read_audit(user):
        raise errors.audit_only()
    return user


AuditReader = Annotated[User, Depends(require_audit_reader)]


def search_role(user: User, requested: str | None, known: tuple[str, ...]) -> str:
    """The reader a search runs as: the caller's own (their roles together); an admin may name
    another role (as on Kaynak arama). `known`: the roles that exist (ragcore.access.roles)."""
    if requested is None or requested == user.reader:
        return user.reader
    if requested not in known:
        raise errors.ApiError(422, "unknown_role", f"Bilinmeyen rol: {requested!r}. Geçerli roller: {', '.join(known)}.",
                              f"Unknown role {requested!r}. Valid roles: {', '.join(known)}.")
    if not user.is_admin:
        raise errors.ApiError(403, "role_not_allowed",
                              "Yalnızca yönetici başka bir rolün gözüyle arama yapabilir.",
                              "Only an administrator may search as another role.")
    return requested


def services(context: Context) -> Services:
    found = context.services()
    if found is None:
        raise errors.models_unavailable()
    return found


ModelServices = Annotated[Services, Depends(services)]
