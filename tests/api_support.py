"""Helpers for the REST API tests: an app over the test database, users with tokens, SSE parsing.

The app is the real `ragcore.api.create_app` with the real database, the embedded USE
embedder behind the shared embedding cache and the generator the settings choose (the
extractive quoter unless a test points it at the fake LLM server). Requests go through
`fastapi.testclient.TestClient` (in-process ASGI), each client with its own address, so the
per-address throttle can be exercised.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient

from ragcore.access import create_token, create_user, get_user
from ragcore.answer import make_generator
from ragcore.api import create_app
from ragcore.core import Settings
from ragcore.embed import CachedEmbedder
from ragcore.store import Database, ensure_embedding_space

PASSWORD = "api-test-parola-1"


@dataclass
class Api:
    client: TestClient
    app: Any
    db: Database
    settings: Settings
    embedder: Any
    generator: Any

    def as_address(self, host: str) -> TestClient:
        """Another client of the same app, seen from `host`."""
        return TestClient(self.app, client=(host, 40000))


@contextmanager
def api_app(db: Database, settings: Settings, model: Any, generator: Any = None,
            address: str = "10.0.0.1", read_db: Database | None = None) -> Iterator[Api]:
    embedder = CachedEmbedder(model, db)
    ensure_embedding_space(db, embedder.name, embedder.dim)
    generator = generator if generator is not None else make_generator(settings, embedder)
    app = create_app(settings, db=db, read_db=read_db, embedder=embedder, generator=generator)
    with TestClient(app, client=(address, 40000)) as client:
        yield Api(client, app, db, settings, embedder, generator)


@contextmanager
def api_with_regulation(db: Database, settings: Settings, model: Any) -> Iterator[Any]:
    """The API over the test regulation (roles isg and personel), every question past the gate:
    what the conversation and audit suites ask against."""
    from ragcore.documents import ingest_pdf
    from tests import pdfs

    with api_app(db, settings.replace(refusal_threshold=0.0), model) as api:
        ingest_pdf(api.db, api.settings, api.embedder, pdfs.law_pdf(), filename="yonetmelik.pdf",
                   roles=["isg", "personel"])
        yield api


def person(db: Database, username: str, role: str, **token_options: Any) -> str:
    """A user with `role` and a fresh token; returns the token's secret."""
    if get_user(db, username) is None:
        create_user(db, username, role, PASSWORD)
    return create_token(db, username, created_by="test", **token_options).secret


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def sse_events(body: str) -> list[tuple[str, Any]]:
    """(event name, decoded JSON data) for every event of a text/event-stream body."""
    events = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[len("event:"):].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:"):].lstrip(" "))
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events


def error_code(response: Any) -> str:
    """The error's code, after checking the one error shape (code, Turkish, English)."""
    body = response.json()
    error = body["error"]
    assert set(error) >= {"code", "message_tr", "message_en"}, body
    assert error["message_tr"] and error["message_en"] and error["message_tr"] != error["message_en"], body
    return error["code"]
