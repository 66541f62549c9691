"""The FastAPI application: thin routers over the product's own services.

No retrieval, answering, ingest or permission rule lives here: chat is `AnswerService`,
search is `ragcore.retrieval.hybrid.retrieve` with the chat's threshold, documents are
`ragcore.documents.catalog` (role predicate in SQL), saved conversations are `ragcore.conversations`
(the owner in every query), uploads are `ragcore.jobs` jobs, feedback is
`ragcore.answer.questions`, the audit trail is `ragcore.audit` (an admin or an auditor only), and
the caller is whoever `ragcore.access.tokens` says the bearer token belongs to — read from the
database on every request.

Every request body is limited (`MAX_BODY_BYTES`; the upload route MAX_UPLOAD_MB plus
multipart overhead) while it streams in, the headers to `MAX_HEADER_BYTES` (a JSON 431; the
server must read them first, see `HEADER_READ_LIMIT`), every error is `{"error": {code, message_tr,
message_en}}` (ragcore/api/errors.py), and the OpenAPI document is at /openapi.json, its
Swagger page at /docs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from ragcore.api import errors
from ragcore.api.context import ApiContext
from ragcore.api.routes import (
    audit,
    chat,
    collections,
    conversations,
    documents,
    health,
    questions,
    roles,
    search,
)
from ragcore.core import Settings

MAX_BODY_BYTES = 64 * 1024  # JSON bodies: a question is at most MAX_QUESTION_CHARS, a comment 2,000
# All request headers together; h11's own default, so nothing that passed before is refused.
MAX_HEADER_BYTES = 16 * 1024
# What uvicorn's HTTP parser (h11) buffers for one header block before it gives up. Beyond it h11
# answers a plain 400 and closes the connection while the client is still sending, which the
# client sees as a reset; up to it the block reaches `HeaderSizeGuard`, which answers a JSON 431.
HEADER_READ_LIMIT = 2 * 1024 * 1024
API_VERSION = "1"

DESCRIPTION = """\
Dayanak's REST API: the same answers, sources and permissions as the app.

**Kimlik doğrulama / authentication**: `Authorization: Bearer dyk_…` — an API token made by an
admin on the Kullanıcılar page or with `python -m ragcore token create USER`. The token's user
and role are read from the database on every request.

Every error is `{"error": {"code", "message_tr", "message_en"}}`; a document the caller may not
read is answered exactly like a missing one (404).
"""


class DeclaredSizeGuard:
    """Refuse a body whose Content-Length exceeds its route's limit before a byte is read.

    The routes' own limits (FastAPI's `max_body_size`, Starlette's limiter) also stop a body
    without a Content-Length while it streams in, and answer that with our JSON error; a
    declared oversize body, though, Starlette answers in plain text. This guard answers it
    first, with the one error shape.
    """

    def __init__(self, app: ASGIApp, upload_limit: int) -> None:
        self.app = app
        self.upload_limit = upload_limit

    def limit(self, scope: Scope) -> int:
        upload = scope["method"] == "POST" and scope["path"].rstrip("/") == "/v1/documents"
        return self.upload_limit if upload else MAX_BODY_BYTES

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            declared = Headers(scope=scope).get("content-length", "")
            limit = self.limit(scope)
            if declared.isdigit() and int(declared) > limit:
                error = errors.request_too_large(limit)
                await error.response()(scope, receive, send)
                return
        await self.app(scope, receive, send)


class HeaderSizeGuard:
    """Answer 431 in the one error shape when the request's headers exceed `MAX_HEADER_BYTES`,
    before authentication or routing reads any of them (a 1 MB Authorization header included)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            size = sum(len(name) + len(value) + 4 for name, value in scope["headers"])  # "name: value\r\n"
            if size > MAX_HEADER_BYTES:
                await errors.headers_too_large(MAX_HEADER_BYTES).response()(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(
    settings: Settings,
    *,
    db: Any = None,
    read_db: Any = None,
    embedder: Any = None,
    generator: Any = None,
    own_db: bool = False,
    worker: bool = False,
) -> FastAPI:
    """The API over `settings`; tests inject `db` (and a replica's `read_db`), `embedder` and `generator`.

    `own_db`: close the given pool on shutdown (the CLI opens it before serving). `worker`:
    run a background job worker in this process while it serves (WORKER_IN_APP).
    """
    context = ApiContext(settings, db=db, read_db=read_db, embedder=embedder, generator=generator, owns_db=own_db or db is None)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        context.database()
        context.services()  # load the models before the first question; failures are retried per request
        if worker:
            context.start_worker()
        try:
            yield
        finally:
            context.close()

    app = FastAPI(title="Dayanak API", version=API_VERSION, description=DESCRIPTION, lifespan=lifespan)
    app.state.context = context
    errors.install(app)
    for module in (chat, conversations, collections, search, documents, questions, roles, audit, health):
        app.include_router(module.router, max_body_size=MAX_BODY_BYTES)
    upload_limit = documents.upload_limit(settings)
    app.include_router(documents.upload_router, max_body_size=upload_limit)
    app.add_middleware(DeclaredSizeGuard, upload_limit=upload_limit)
    app.add_middleware(HeaderSizeGuard)
    # Outermost: X-Forwarded-For names the client only when the TCP peer is in TRUSTED_PROXIES
    # (none by default), whichever server runs the app; `python -m ragcore api` turns uvicorn's
    # own copy of this middleware off (ragcore.access.addresses).
    app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=list(settings.trusted_proxies))
    return app
