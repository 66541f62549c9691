"""The REST API (ragcore.api) in-process, on the real database, embedder and generators.

Auth (tokens, revocation, throttling per address), every endpoint's happy path, the error
shape, and bad input: wrong types, empty/over-long questions, huge bodies, non-PDF uploads,
unknown roles and modes — each a 4xx with a Turkish and an English message, and nothing
written. Streaming runs with the extractive generator and against the fake LLM server.
The permission suite over the API is tests/test_api_permissions.py; one test against a real
uvicorn process is tests/test_api_server.py.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from ragcore import jobs
from ragcore.access import revoke_sessions, tokens, users
from ragcore.answer import make_generator
from ragcore.api import MAX_HEADER_BYTES
from ragcore.core import FALLBACK_ANSWER, disk_space, format_integer
from ragcore.documents import find_document, ingest_pdf
from tests import docxs, pdfs
from tests.api_support import api_app, bearer, error_code, person, sse_events
from tests.retrieval_support import make_test_embedder

QUESTION = "Yonetmeligin amaci nedir?"


@pytest.fixture(scope="module")
def model():
    return make_test_embedder()


@pytest.fixture()
def api(db, settings, model):
    with api_app(db, settings, model) as api:
        yield api


@pytest.fixture()
def law(api) -> str:
    """The sample regulation, readable by isg and personel: its public id, what the API knows it by."""
    return ingest_pdf(api.db, api.settings, api.embedder, pdfs.law_pdf(), filename="yonetmelik.pdf",
                      roles=["isg", "personel"]).public_id


def nobodys() -> str:
    """A public id no row has."""
    return str(uuid.uuid4())


def count(db, table: str) -> int:
    with db.connection() as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def incoming(settings) -> list[Path]:
    folder = settings.incoming_dir
    return sorted(folder.iterdir()) if folder.is_dir() else []


# ----------------------------------------------------------------------------- health, docs, errors


def test_health_needs_no_token_and_names_nothing_but_the_database(api) -> None:
    response = api.client.get("/v1/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": True}


def test_health_and_requests_when_the_database_is_gone(db, settings, model, pg_url) -> None:
    from ragcore.store import Database

    closed = Database(pg_url)
    closed.close()
    closed.url = "postgresql://postgres@127.0.0.1:9/postgres"  # where it would reconnect: nobody answers
    with api_app(db, settings, model) as api:
        api.app.state.context.db = closed
        response = api.client.get("/v1/health")
        assert response.status_code == 503 and response.json() == {"status": "unavailable", "database": False}
        response = api.client.get("/v1/documents", headers=bearer("dyk_" + "x" * 43))
        assert response.status_code == 503 and error_code(response) == "database_unavailable"
        assert pg_url not in response.text and "password" not in response.text


def test_openapi_document_and_docs_page(api) -> None:
    spec = api.client.get("/openapi.json").json()
    assert {"/v1/chat", "/v1/search", "/v1/documents", "/v1/documents/{document_id}",
            "/v1/documents/{document_id}/file", "/v1/jobs/{job_id}", "/v1/questions/{question_id}/feedback",
            "/v1/health"} <= set(spec["paths"])
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert "text/event-stream" in spec["paths"]["/v1/chat"]["post"]["responses"]["200"]["content"]
    page = api.client.get("/docs")
    assert page.status_code == 200 and "swagger" in page.text.lower()


def test_no_cross_origin_access_is_offered(api) -> None:
    secret = person(api.db, "mehmet", "isg")
    preflight = api.client.options("/v1/chat", headers={"Origin": "https://baska.example",
                                                        "Access-Control-Request-Method": "POST"})
    response = api.client.get("/v1/documents", headers=bearer(secret) | {"Origin": "https://baska.example"})
    assert response.status_code == 200
    for answer in (preflight, response):
        assert not [h for h in answer.headers if h.lower().startswith("access-control-")]


def test_unknown_route_and_method_get_the_error_shape(api) -> None:
    assert api.client.get("/v1/nothing-here").status_code == 404
    assert error_code(api.client.get("/v1/nothing-here")) == "not_found"
    response = api.client.put("/v1/health")
    assert response.status_code == 405 and error_code(response) == "method_not_allowed"


# ----------------------------------------------------------------------------- authentication


def test_missing_malformed_and_unknown_tokens_are_refused(api) -> None:
    response = api.client.get("/v1/documents")
    assert response.status_code == 401 and error_code(response) == "missing_token"
    assert response.headers["www-authenticate"] == "Bearer"
    response = api.client.get("/v1/documents", headers={"Authorization": "Basic YWRtaW46eA=="})
    assert response.status_code == 401 and error_code(response) == "missing_token"
    for bad in ("dyk_kisa", "dyk_" + "A" * 43, "baska-bir-sey", "dyk_" + "A" * 42 + "!"):
        response = api.client.get("/v1/documents", headers=bearer(bad))
        assert response.status_code == 401 and error_code(response) == "invalid_token", bad


def test_a_token_works_and_records_when_it_was_used(api, law) -> None:
    secret = person(api.db, "mehmet", "isg")
    (token,) = tokens.list_tokens(api.db, "mehmet")
    assert token.last_used_at is None
    response = api.client.get("/v1/documents", headers=bearer(secret))
    assert response.status_code == 200
    assert [d["id"] for d in response.json()["documents"]] == [law]
    assert tokens.get_token(api.db, token.id).last_used_at is not None


def test_revoked_and_expired_tokens_stop_at_once(api) -> None:
    secret = person(api.db, "mehmet", "isg")
    token = tokens.list_tokens(api.db, "mehmet")[0]
    assert api.client.get("/v1/documents", headers=bearer(secret)).status_code == 200
    tokens.revoke_token(api.db, token.id)
    assert error_code(api.client.get("/v1/documents", headers=bearer(secret))) == "invalid_token"

    other = person(api.db, "mehmet", "isg", expires_days=30)
    assert api.client.get("/v1/documents", headers=bearer(other)).status_code == 200
    with api.db.connection() as conn:
        conn.execute("UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE revoked_at IS NULL")
    assert error_code(api.client.get("/v1/documents", headers=bearer(other))) == "invalid_token"


def test_role_change_applies_to_the_next_request(api, law) -> None:
    secret = person(api.db, "ayse", "ik")
    assert api.client.get("/v1/documents", headers=bearer(secret)).json()["documents"] == []
    assert api.client.get(f"/v1/documents/{law}", headers=bearer(secret)).status_code == 404
    users.set_role(api.db, "ayse", "isg")
    assert [d["id"] for d in api.client.get("/v1/documents", headers=bearer(secret)).json()["documents"]] == [law]
    users.set_role(api.db, "ayse", "ik")
    assert api.client.get("/v1/documents", headers=bearer(secret)).json()["documents"] == []


def test_deactivation_and_password_reset_revoke_tokens_but_logout_does_not(api) -> None:
    secret = person(api.db, "mehmet", "isg")
    revoke_sessions(api.db, "mehmet")  # logout in the browser: the integration's token keeps working
    assert api.client.get("/v1/documents", headers=bearer(secret)).status_code == 200

    users.set_active(api.db, "mehmet", False)
    assert error_code(api.client.get("/v1/documents", headers=bearer(secret))) == "invalid_token"
    users.set_active(api.db, "mehmet", True)  # a reactivation does not revive the token
    assert error_code(api.client.get("/v1/documents", headers=bearer(secret))) == "invalid_token"
    assert tokens.list_tokens(api.db, "mehmet")[0].revoked_reason == "deactivated"

    fresh = person(api.db, "mehmet", "isg")
    assert api.client.get("/v1/documents", headers=bearer(fresh)).status_code == 200
    users.set_password(api.db, "mehmet", "yeni-parola-123")
    assert error_code(api.client.get("/v1/documents", headers=bearer(fresh))) == "invalid_token"
    assert tokens.list_tokens(api.db, "mehmet")[0].revoked_reason == "password"


def throttle_address(api, client, headers=None) -> None:
    """Use up the bad-token allowance of `client`'s address (as the API sees it)."""
    for attempt in range(tokens.TOKEN_POLICY.max_attempts):
        response = client.get("/v1/documents", headers=bearer(f"dyk_{attempt:043d}") | (headers or {}))
        assert response.status_code == 401, attempt


def counted_addresses(db) -> set[str]:
    with db.connection() as conn:
        return {row[0] for row in conn.execute("SELECT address FROM login_attempts WHERE username = %s",
                                                (tokens.THROTTLE_KEY,))}


@pytest.mark.parametrize("peer", ["10.9.9.9", "127.0.0.1"])
def test_forwarded_for_from_an_untrusted_peer_is_ignored(api, peer) -> None:
    """TRUSTED_PROXIES is empty by default, so not even a local peer may name its own address:
    rotating X-Forwarded-For opens no fresh counter."""
    assert api.settings.trusted_proxies == ()
    client = api.as_address(peer)
    throttle_address(api, client, {"X-Forwarded-For": "198.51.100.1"})
    for n in range(3):
        response = client.get("/v1/documents", headers=bearer("dyk_" + "e" * 43) | {"X-Forwarded-For": f"198.51.100.{n + 2}"})
        assert response.status_code == 429 and error_code(response) == "too_many_attempts", n
    assert counted_addresses(api.db) == {peer}


def test_forwarded_for_from_a_trusted_proxy_names_the_client(db, settings, model) -> None:
    with api_app(db, settings.replace(trusted_proxies=("10.0.0.0/24",)), model) as api:
        proxy = api.as_address("10.0.0.7")
        good = person(api.db, "mehmet", "isg")
        throttle_address(api, proxy, {"X-Forwarded-For": "203.0.113.5"})
        bad = bearer("dyk_" + "f" * 43)
        assert proxy.get("/v1/documents", headers=bad | {"X-Forwarded-For": "203.0.113.5"}).status_code == 429
        # Another client behind the same proxy has its own counter; the proxy's address none.
        assert error_code(proxy.get("/v1/documents", headers=bad | {"X-Forwarded-For": "203.0.113.6"})) == "invalid_token"
        assert counted_addresses(api.db) == {"203.0.113.5", "203.0.113.6"}
        # A client that writes the header itself while its proxy appends the real peer: the
        # rightmost address the proxy vouches for counts, not the forged one.
        forged = proxy.get("/v1/documents", headers=bad | {"X-Forwarded-For": "192.0.2.77, 203.0.113.5"})
        assert forged.status_code == 429
        assert proxy.get("/v1/documents", headers=bearer(good) | {"X-Forwarded-For": "203.0.113.5"}).status_code == 200


def test_a_burst_of_bad_tokens_is_throttled_per_address_only(api) -> None:
    good = person(api.db, "mehmet", "isg")
    attacker, neighbour = api.as_address("10.9.9.9"), api.as_address("10.9.9.10")
    limit = tokens.TOKEN_POLICY.max_attempts
    for attempt in range(limit):
        response = attacker.get("/v1/documents", headers=bearer(f"dyk_{attempt:043d}"))
        assert response.status_code == 401, attempt
    response = attacker.get("/v1/documents", headers=bearer("dyk_" + "b" * 43))
    assert response.status_code == 429 and error_code(response) == "too_many_attempts"
    assert 0 < int(response.headers["retry-after"]) <= 15 * 60
    # A valid token from the throttled address is checked first and passes: one client with a
    # stale token behind a NAT or proxy does not lock out the others behind it ...
    assert attacker.get("/v1/documents", headers=bearer(good)).status_code == 200
    assert attacker.get("/v1/documents", headers=bearer("dyk_" + "d" * 43)).status_code == 429
    # ... and every other client goes on as before.
    assert neighbour.get("/v1/documents", headers=bearer(good)).status_code == 200
    assert api.client.get("/v1/documents", headers=bearer(good)).status_code == 200
    assert error_code(neighbour.get("/v1/documents", headers=bearer("dyk_" + "c" * 43))) == "invalid_token"
    assert attacker.get("/v1/health").status_code == 200  # no token, no throttle
    # No login counter moved: the key cannot be a username.
    with api.db.connection() as conn:
        keys = {row[0] for row in conn.execute("SELECT username FROM login_attempts")}
    assert keys == {tokens.THROTTLE_KEY}


# ----------------------------------------------------------------------------- chat


def test_chat_json_answers_with_sources_and_logs_the_question(api, law) -> None:
    secret = person(api.db, "mehmet", "isg")
    response = api.client.post("/v1/chat", json={"question": QUESTION}, headers=bearer(secret))
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "answered" and body["generator"] == "extractive" and body["llm_called"] is False
    assert body["outcome"] == "answer" and body["nearest_sentences"] == []  # marks come with the closest outcome only
    assert body["cited"] and set(body["cited"]) <= {s["rank"] for s in body["sources"]}
    first = body["sources"][0]
    assert first["document_id"] == law and first["title"] == "Ornek Yonetmelik" and first["page_label"] == "s. 1"  # the title is the PDF's first heading
    assert first["article"] == "Madde 1" and "amaci" in first["text"]
    assert set(body["timings"]) == {"retrieval_ms", "first_token_ms", "total_ms"}
    with api.db.connection() as conn:
        logged = conn.execute("SELECT username, role, question FROM questions WHERE public_id = %s",
                              (body["question_id"],)).fetchone()
    assert logged == ("mehmet", "isg", QUESTION)


def test_chat_for_a_role_without_documents_is_the_fallback(api, law) -> None:
    secret = person(api.db, "ayse", "ik")
    body = api.client.post("/v1/chat", json={"question": QUESTION}, headers=bearer(secret)).json()
    assert body["outcome"] == "refused"
    assert body["text"] == FALLBACK_ANSWER and body["sources"] == [] and body["status"] == "needs_review"


def test_chat_server_sent_events_end_with_sources_and_question_id(api, law) -> None:
    secret = person(api.db, "mehmet", "isg")
    response = api.client.post("/v1/chat", json={"question": QUESTION},
                               headers=bearer(secret) | {"Accept": "text/event-stream"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    names = [name for name, _ in events]
    assert names[-1] == "done" and set(names[:-1]) == {"delta"} and len(names) >= 2
    done = events[-1][1]
    streamed = "".join(data["text"] for name, data in events if name == "delta")
    assert done["replaced"] is False and done["text"] == streamed
    assert done["question_id"] and done["sources"][0]["document_id"] == law


@pytest.fixture()
def llm_api(db, settings, model, fake_llm):
    llm_settings = settings.replace(llm_backend="ollama", ollama_base_url=fake_llm.url)
    with api_app(db, llm_settings, model) as api:
        api.generator = api.app.state.context.services().generator
        yield api, fake_llm


def test_sse_streams_the_model_pieces_as_they_come(llm_api, law) -> None:
    api, fake = llm_api
    fake.behaviour.reply = "Yonetmeligin amaci isyerlerinde guvenligi saglamaktir [1]."
    fake.behaviour.reply_chunks = 5
    secret = person(api.db, "mehmet", "isg")
    events = sse_events(api.client.post("/v1/chat", json={"question": QUESTION},
                                        headers=bearer(secret) | {"Accept": "text/event-stream"}).text)
    deltas = [data["text"] for name, data in events if name == "delta"]
    assert deltas == fake.pieces() and len(deltas) == 5
    done = events[-1][1]
    assert done["generator"].startswith("ollama:") and done["llm_called"] is True
    assert done["replaced"] is False and done["cited"] == [1] and done["text"] == "".join(deltas)
    assert fake.bodies("/api/chat"), "the model was not called"


def test_sse_says_when_the_final_text_replaced_the_streamed_one(llm_api, law) -> None:
    """A model answer without a valid [n] is never shown as grounded: the final event carries
    the replacement and `replaced: true`, so a client shows `text`, not the pieces."""
    api, fake = llm_api
    fake.behaviour.reply = "Bence amaci karlilik artirmaktir."
    secret = person(api.db, "mehmet", "isg")
    events = sse_events(api.client.post("/v1/chat", json={"question": QUESTION},
                                        headers=bearer(secret) | {"Accept": "text/event-stream"}).text)
    streamed = "".join(data["text"] for name, data in events if name == "delta")
    done = events[-1][1]
    assert streamed == fake.behaviour.reply
    assert done["replaced"] is True and done["text"] != streamed and "karlilik" not in done["text"]
    assert done["notice"] and done["sources"]


def test_sse_model_failure_midway_still_ends_with_the_answer(llm_api, law) -> None:
    api, fake = llm_api
    fake.behaviour.fail_after_chunks = 1
    secret = person(api.db, "mehmet", "isg")
    events = sse_events(api.client.post("/v1/chat", json={"question": QUESTION},
                                        headers=bearer(secret) | {"Accept": "text/event-stream"}).text)
    done = events[-1]
    assert done[1]["outcome"] is None
    assert done[0] == "done" and done[1]["status"] == "error" and done[1]["replaced"] is True
    assert done[1]["sources"] and done[1]["question_id"]


@pytest.mark.parametrize(("body", "code"), [
    ({"question": 5}, "invalid_request"),
    ({"question": None}, "invalid_request"),
    ({"question": ["soru"]}, "invalid_request"),
    ({}, "invalid_request"),
    ({"question": QUESTION, "role": "admin"}, "invalid_request"),
    ({"question": ""}, "question_empty"),
    ({"question": " \n\t "}, "question_empty"),
    ({"question": "x" * 1001}, "question_too_long"),
])
def test_chat_refuses_bad_bodies_and_logs_nothing(api, law, body, code) -> None:
    secret = person(api.db, "mehmet", "isg")
    response = api.client.post("/v1/chat", json=body, headers=bearer(secret))
    assert response.status_code == 422 and error_code(response) == code
    assert count(api.db, "questions") == 0


@pytest.mark.parametrize(("body", "message"), [
    ({"collection": 5}, "'collection' metin olmalı."),
    ({"document": ["x"]}, "'document' metin olmalı."),
    ({"collection": "x" * 65}, "'collection' en fazla 64 karakter olabilir."),
    ({"collection": "c", "document": "d"}, "ikisiyle birden değil. Birini kaldırın."),
])
def test_chat_scope_fields_are_validated_in_turkish(api, law, body, message) -> None:
    secret = person(api.db, "mehmet", "isg")
    response = api.client.post("/v1/chat", json={"question": QUESTION, **body}, headers=bearer(secret))
    assert response.status_code == 422 and message in response.json()["error"]["message_tr"], response.text
    assert count(api.db, "questions") == 0


def test_chat_and_search_within_a_collection_or_a_document(api, law) -> None:
    """A scope the caller reads answers from it; an unreadable one is the same 404 as a made-up id
    (and as text that is no id at all); GET /v1/collections lists readable ones with their counts."""
    from ragcore.documents import collections, create_collection

    other = ingest_pdf(api.db, api.settings, api.embedder, pdfs.text_pdf(["Madde 1 - Ucret ayda bir odenir."]),
                       filename="ucret.pdf", roles=["ik"]).document_id
    laws = create_collection(api.db, "Yönetmelikler", "İSG yönetmelikleri")
    collections.set_members(api.db, laws.public_id, [find_document(api.db, law, "admin").id, other])
    wages = create_collection(api.db, "Ücretler")
    collections.set_members(api.db, wages.public_id, [other])
    isg = person(api.db, "mehmet", "isg")
    listed = api.client.get("/v1/collections", headers=bearer(isg)).json()
    assert listed == {"collections": [{"id": laws.public_id, "name": "Yönetmelikler",
                                       "description": "İSG yönetmelikleri", "documents": 1}]}
    body = api.client.post("/v1/chat", json={"question": QUESTION, "collection": laws.public_id},
                           headers=bearer(isg)).json()
    assert body["sources"] and {s["document_id"] for s in body["sources"]} == {law}
    found = api.client.get("/v1/search", params={"q": QUESTION, "document": law}, headers=bearer(isg)).json()
    assert found["results"] and {r["document_id"] for r in found["results"]} == {law}
    for field, hidden, unknown in (("collection", wages.public_id, nobodys()),
                                   ("document", find_pid(api, other), nobodys())):
        responses = [api.client.post("/v1/chat", json={"question": QUESTION, field: value}, headers=bearer(isg))
                     for value in (hidden, unknown, "17")]
        assert {(r.status_code, r.content) for r in responses} == {(404, responses[1].content)}
        assert error_code(responses[0]) == f"{field}_not_found"
    assert count(api.db, "questions") == 1


def test_a_restriction_belongs_to_the_question_not_the_conversation(api, law) -> None:
    """A follow-up in the same conversation may carry its own restriction (or none): each turn is
    searched where its own request says, and both are saved in the one conversation."""
    from ragcore.documents import collections, create_collection

    other = ingest_pdf(api.db, api.settings, api.embedder, pdfs.text_pdf(["Madde 1 - Yonetmeligin amaci ucrettir."]),
                       filename="ucret.pdf", roles=["isg"]).document_id
    wages = create_collection(api.db, "Ücretler")
    collections.set_members(api.db, wages.public_id, [other])
    isg = person(api.db, "mehmet", "isg")
    first = api.client.post("/v1/chat", json={"question": QUESTION, "collection": wages.public_id},
                            headers=bearer(isg)).json()
    assert first["sources"] and {s["document_id"] for s in first["sources"]} == {find_pid(api, other)}
    second = api.client.post("/v1/chat", json={"question": QUESTION, "conversation_id": first["conversation_id"]},
                             headers=bearer(isg)).json()
    assert second["conversation_id"] == first["conversation_id"] and second["turn"] == 2
    assert law in {s["document_id"] for s in second["sources"]}  # no restriction carried over


def find_pid(api, document_id: int) -> str:
    with api.db.connection() as conn:
        return conn.execute("SELECT public_id::text FROM documents WHERE id = %s", (document_id,)).fetchone()[0]


def test_chat_refuses_what_is_not_json(api) -> None:
    secret = person(api.db, "mehmet", "isg")
    for content, kind in ((b"{not json", "application/json"), (b"question=x", "application/x-www-form-urlencoded"),
                          (b'"just a string"', "application/json")):
        response = api.client.post("/v1/chat", content=content, headers=bearer(secret) | {"Content-Type": kind})
        assert response.status_code == 422 and error_code(response) == "invalid_request", content
    assert count(api.db, "questions") == 0


def test_huge_bodies_are_refused_before_they_are_read(api) -> None:
    secret = person(api.db, "mehmet", "isg")
    huge = json.dumps({"question": "x" * 200_000}).encode()
    response = api.client.post("/v1/chat", content=huge, headers=bearer(secret) | {"Content-Type": "application/json"})
    assert response.status_code == 413 and error_code(response) == "request_too_large"
    assert "64 KB" in response.json()["error"]["message_en"]

    def chunks():  # no Content-Length: the limit stops the stream itself
        yield b'{"question": "'
        for _ in range(100):
            yield b"y" * 4096
        yield b'"}'

    response = api.client.post("/v1/chat", content=chunks(), headers=bearer(secret) | {"Content-Type": "application/json"})
    assert response.status_code == 413 and error_code(response) == "request_too_large"
    assert count(api.db, "questions") == 0


# ----------------------------------------------------------------------------- search


def test_search_returns_evidence_and_the_decision_without_logging_or_a_model(llm_api, law) -> None:
    api, fake = llm_api
    secret = person(api.db, "mehmet", "isg")
    response = api.client.get("/v1/search", params={"q": QUESTION, "k": 2, "mode": "lexical"}, headers=bearer(secret))
    assert response.status_code == 200
    body = response.json()
    assert body["role"] == "isg" and body["mode"] == "lexical" and body["k"] == 2 and len(body["results"]) == 2
    assert body["results"][0]["article"] == "Madde 1" and body["results"][0]["lexical_score"] > 0
    assert set(body["evidence"]) == {"best_cosine", "best_bm25", "coverage", "permitted_hits"}
    threshold = body["threshold"]
    assert threshold["refuse"] is (threshold["score"] < threshold["value"]) and threshold["signal"]
    assert count(api.db, "questions") == 0 and fake.bodies("/api/chat") == []


def test_search_as_another_role_is_for_admins(api, law) -> None:
    admin, isg = person(api.db, "yonetici", "admin"), person(api.db, "mehmet", "isg")
    as_ik = api.client.get("/v1/search", params={"q": QUESTION, "role": "ik"}, headers=bearer(admin)).json()
    assert as_ik["role"] == "ik" and as_ik["results"] == [] and as_ik["threshold"]["refuse"] is True
    as_isg = api.client.get("/v1/search", params={"q": QUESTION, "role": "isg"}, headers=bearer(admin)).json()
    assert as_isg["results"][0]["document_id"] == law
    response = api.client.get("/v1/search", params={"q": QUESTION, "role": "admin"}, headers=bearer(isg))
    assert response.status_code == 403 and error_code(response) == "role_not_allowed"
    assert api.client.get("/v1/search", params={"q": QUESTION, "role": "isg"}, headers=bearer(isg)).status_code == 200


@pytest.mark.parametrize(("params", "status", "code"), [
    ({"q": QUESTION, "mode": "bm25"}, 422, "invalid_request"),
    ({"q": QUESTION, "k": 0}, 422, "invalid_request"),
    ({"q": QUESTION, "k": 51}, 422, "invalid_request"),
    ({"q": QUESTION, "k": "beş"}, 422, "invalid_request"),
    ({"q": QUESTION, "role": "mudur"}, 422, "unknown_role"),
    ({"q": "   "}, 422, "question_empty"),
    ({"q": "y" * 1001}, 422, "question_too_long"),
    ({}, 422, "invalid_request"),
])
def test_search_refuses_bad_parameters(api, params, status, code) -> None:
    secret = person(api.db, "yonetici", "admin")
    response = api.client.get("/v1/search", params=params, headers=bearer(secret))
    assert response.status_code == status and error_code(response) == code


# ----------------------------------------------------------------------------- documents


def test_document_detail_chunks_and_download(api, law) -> None:
    secret = person(api.db, "mehmet", "isg")
    detail = api.client.get(f"/v1/documents/{law}", headers=bearer(secret)).json()
    assert detail["title"] == "Ornek Yonetmelik" and detail["pages"] == 2 and detail["chunk_texts"] is None
    assert detail["allowed_roles"] == ["isg", "personel"]
    with_chunks = api.client.get(f"/v1/documents/{law}", params={"chunks": "true"}, headers=bearer(secret)).json()
    assert [c["article"] for c in with_chunks["chunk_texts"]][:2] == ["Madde 1", "Madde 2"]
    download = api.client.get(f"/v1/documents/{law}/file", headers=bearer(secret))
    assert download.status_code == 200 and download.content == pdfs.law_pdf()
    assert download.headers["content-type"] == "application/pdf"
    assert 'filename="yonetmelik.pdf"' in download.headers["content-disposition"]


def test_page_image_of_a_page_too_large_to_draw_is_a_422_at_once(api) -> None:
    """The probe of issue 36: a text PDF whose third page is 14400 × 14400 pt (5 m). The document
    says which pages' images are drawn smaller or not at all; the 5 m page's image is a 422
    `page_too_large` told from the page's box (no drawing, so a retry costs nothing either), and
    the 4000 pt page comes drawn within the 20-megapixel budget."""
    doc = ingest_pdf(api.db, api.settings, api.embedder,
                     pdfs.sized_pdf([(595, 842), (4000, 4000), (14400, 14400)]), filename="pafta.pdf",
                     roles=["isg"]).public_id
    secret = person(api.db, "mehmet", "isg")
    detail = api.client.get(f"/v1/documents/{doc}", headers=bearer(secret)).json()
    assert (detail["oversized_pages"], detail["undrawable_pages"]) == ([2], [3])
    for _ in range(2):
        refused = api.client.get(f"/v1/documents/{doc}/pages/3/image", headers=bearer(secret))
        assert refused.status_code == 422 and error_code(refused) == "page_too_large"
        assert refused.json()["error"]["message_tr"].startswith("Sayfa 3 çok büyük (508 × 508 cm)")
        assert "tek sayfalık PDF" in refused.json()["error"]["message_tr"]
    smaller = api.client.get(f"/v1/documents/{doc}/pages/2/image", headers=bearer(secret))
    assert smaller.status_code == 200 and smaller.headers["content-type"] == "image/png"
    assert smaller.content[16:24] == (4445).to_bytes(4, "big") * 2  # the PNG's width and height: 80 dpi, not 120


def test_a_hostile_file_name_cannot_inject_response_headers(api) -> None:
    doc = ingest_pdf(api.db, api.settings, api.embedder, pdfs.text_pdf(["Makine bakimi yapilir."]),
                     filename='a"b\r\nX-Kotu: 1;.pdf', roles=["isg"]).public_id
    download = api.client.get(f"/v1/documents/{doc}/file", headers=bearer(person(api.db, "mehmet", "isg")))
    assert download.status_code == 200 and "x-kotu" not in download.headers
    assert download.headers["content-disposition"].startswith("attachment; filename*=utf-8''")


def test_a_forbidden_document_is_answered_like_a_missing_one(api, law) -> None:
    """A forbidden document, an unknown public id, the document's own database key and text that
    is no id at all: the same 404 bytes (a 422 about the format would tell ids apart)."""
    secret = person(api.db, "ayse", "ik")
    key = find_document(api.db, law, "admin").id
    for suffix in ("", "/file", "?chunks=true"):
        hidden = api.client.get(f"/v1/documents/{law}{suffix}", headers=bearer(secret))
        missing = api.client.get(f"/v1/documents/{nobodys()}{suffix}", headers=bearer(secret))
        assert hidden.status_code == missing.status_code == 404
        assert hidden.content == missing.content and error_code(hidden) == "document_not_found"
        for other in (key, "abc", 0, 2**70, law.upper() + "0", "%20"):
            response = api.client.get(f"/v1/documents/{other}{suffix}", headers=bearer(secret))
            assert response.status_code == 404 and response.content == missing.content, other
    admin = person(api.db, "yonetici", "admin")
    assert api.client.get(f"/v1/documents/{key}", headers=bearer(admin)).content == \
        api.client.get(f"/v1/documents/{nobodys()}", headers=bearer(admin)).content  # the key is no id, even for admin


def test_admin_deletes_a_document_and_others_may_not(api, law) -> None:
    isg, admin = person(api.db, "mehmet", "isg"), person(api.db, "yonetici", "admin")
    response = api.client.delete(f"/v1/documents/{law}", headers=bearer(isg))
    assert response.status_code == 403 and error_code(response) == "admin_only"
    response = api.client.delete(f"/v1/documents/{nobodys()}", headers=bearer(isg))
    assert response.status_code == 403  # the role is checked before anything is looked up
    key = find_document(api.db, law, "admin").id
    response = api.client.delete(f"/v1/documents/{key}", headers=bearer(admin))  # the database key is no id
    assert response.status_code == 404 and error_code(response) == "document_not_found"
    assert find_document(api.db, law, "admin") is not None
    response = api.client.delete(f"/v1/documents/{law}", headers=bearer(admin))
    assert response.status_code == 200 and response.json()["deleted"]["id"] == law
    assert find_document(api.db, law, "admin") is None
    assert error_code(api.client.delete(f"/v1/documents/{law}", headers=bearer(admin))) == "document_not_found"


# ----------------------------------------------------------------------------- upload and jobs


def test_upload_queues_a_job_that_a_worker_turns_into_a_document(api) -> None:
    admin = person(api.db, "yonetici", "admin")
    data = pdfs.text_pdf(["Risk degerlendirmesi yilda bir yenilenir.", "Yangin tatbikati yapilir."])
    response = api.client.post("/v1/documents", headers=bearer(admin),
                               files={"file": ("talimat.pdf", data, "application/pdf")},
                               data={"roles": ["isg", "uretim"], "title": "Talimat 7"})
    assert response.status_code == 202, response.text
    job = response.json()
    assert job["status"] == "queued" and job["kind"] == jobs.INGEST and job["label"] == "talimat.pdf"
    assert response.headers["location"] == f"/v1/jobs/{job['job_id']}"
    assert jobs.find_job(api.db, job["job_id"]).arguments["roles"] == ["isg", "uretim"]
    assert [p.name for p in incoming(api.settings)] == [f"{jobs.find_job(api.db, job['job_id']).id}.pdf"]
    queued = api.client.get(f"/v1/jobs/{job['job_id']}", headers=bearer(admin)).json()
    assert queued["status"] == "queued" and queued["live_workers"] == 0

    jobs.run_worker(api.settings, wait=False, embedder_factory=lambda: api.embedder)
    done = api.client.get(f"/v1/jobs/{job['job_id']}", headers=bearer(admin)).json()
    assert done["status"] == "succeeded" and done["progress"] == 1.0, done
    document_id = done["result"]["document_id"]
    listed = api.client.get("/v1/documents", headers=bearer(admin)).json()["documents"]
    assert [(d["id"], d["title"], d["allowed_roles"]) for d in listed] == [(document_id, "Talimat 7", ["isg", "uretim"])]


def test_the_apis_own_worker_processes_an_upload(db, settings, model) -> None:
    """With `worker=True` (WORKER_IN_APP) the API process runs the job itself, embedding
    through its own embedder; the client only polls the job."""
    import time

    from fastapi.testclient import TestClient

    from ragcore.api import create_app
    from ragcore.embed import CachedEmbedder

    embedder = CachedEmbedder(model, db)
    app = create_app(settings, db=db, embedder=embedder, generator=make_generator(settings, embedder), worker=True)
    with TestClient(app, client=("10.0.0.1", 1)) as client:
        admin = person(db, "yonetici", "admin")
        job = client.post("/v1/documents", headers=bearer(admin), data={"roles": "ik"},
                          files={"file": ("ik.pdf", pdfs.law_pdf(), "application/pdf")}).json()
        deadline = time.monotonic() + 120
        while (state := client.get(f"/v1/jobs/{job['job_id']}", headers=bearer(admin)).json())["status"] in jobs.ACTIVE:
            assert time.monotonic() < deadline, state
            time.sleep(0.2)
        assert state["status"] == "succeeded", state
        ik = person(db, "ayse", "ik")
        listed = client.get("/v1/documents", headers=bearer(ik)).json()["documents"]
        assert [d["id"] for d in listed] == [state["result"]["document_id"]]
    assert app.state.context.worker is None  # stopped with the app


def test_a_docx_upload_becomes_a_document_cited_by_section(api) -> None:
    """The same endpoint takes a Word file (told by its content): staged as <job id>.docx, stored
    with its format, served back with Word's media type, and its sources carry locator_kind
    "section" with the heading and paragraph instead of a page."""
    admin, isg = person(api.db, "yonetici", "admin"), person(api.db, "mehmet", "isg")
    docx_type = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    response = api.client.post("/v1/documents", headers=bearer(isg), data={"roles": "isg"},
                               files={"file": ("yonetmelik.docx", docxs.regulation_docx(), docx_type)})
    assert response.status_code == 403 and error_code(response) == "admin_only"
    assert count(api.db, "jobs") == 0 and incoming(api.settings) == []
    response = api.client.post("/v1/documents", headers=bearer(admin), data={"roles": "isg"},
                               files={"file": ("yonetmelik.docx", docxs.regulation_docx(), "application/octet-stream")})
    assert response.status_code == 202, response.text
    job = jobs.find_job(api.db, response.json()["job_id"])
    assert [p.name for p in incoming(api.settings)] == [f"{job.id}.docx"]
    jobs.run_worker(api.settings, wait=False, embedder_factory=lambda: api.embedder)
    done = api.client.get(f"/v1/jobs/{job.public_id}", headers=bearer(admin)).json()
    assert done["status"] == "succeeded", done
    document_id = done["result"]["document_id"]
    detail = api.client.get(f"/v1/documents/{document_id}?chunks=true", headers=bearer(isg)).json()
    assert detail["file_format"] == "docx" and detail["pages"] == 5
    assert all(c["locator"].startswith("§ ") for c in detail["chunk_texts"])
    file = api.client.get(f"/v1/documents/{document_id}/file", headers=bearer(isg))
    assert file.status_code == 200 and file.headers["content-type"] == docx_type
    assert file.content == docxs.regulation_docx()
    found = api.client.get("/v1/search", params={"q": "Baretler ne zaman kontrol edilir?", "k": 2},
                           headers=bearer(isg)).json()["results"]
    assert found[0]["article"] == "Madde 3" and found[0]["locator_kind"] == "section"
    assert found[0]["locator"] == found[0]["page_label"] == "§ Yükümlülükler · paragraf 1–4"


def test_upload_accepts_comma_separated_roles(api) -> None:
    admin = person(api.db, "yonetici", "admin")
    response = api.client.post("/v1/documents", headers=bearer(admin),
                               files={"file": ("a.pdf", pdfs.law_pdf(), "application/octet-stream")},
                               data={"roles": "ik, personel"})
    assert response.status_code == 202
    assert jobs.find_job(api.db, response.json()["job_id"]).arguments["roles"] == ["ik", "personel"]


@pytest.mark.parametrize(("name", "data", "form", "status", "code"), [
    ("notlar.pdf", pdfs.not_a_pdf(), {"roles": "isg"}, 415, "unsupported_file"),
    ("resim.docx", docxs.renamed_binary(), {"roles": "isg"}, 415, "unsupported_file"),
    ("gizli.docx", docxs.encrypted_docx(), {"roles": "isg"}, 422, "encrypted_docx"),
    ("eski.doc", docxs.old_doc(), {"roles": "isg"}, 415, "old_word_format"),
    ("yarim.docx", docxs.truncated_docx(), {"roles": "isg"}, 422, "corrupt_docx"),
    ("tablo.docx", docxs.zip_without_document(), {"roles": "isg"}, 415, "not_a_docx"),
    ("yonetmelik.pdf", docxs.regulation_docx(), {"roles": "isg"}, 415, "extension_mismatch"),
    ("a.docx", docxs.regulation_docx(), {"roles": "mudur"}, 422, "unknown_role"),
    ("bos.pdf", b"", {"roles": "isg"}, 422, "empty_file"),
    ("yarim.pdf", pdfs.truncated_pdf(), {"roles": "isg"}, 422, "corrupt_pdf"),
    ("a.pdf", pdfs.law_pdf(), {"roles": "mudur"}, 422, "unknown_role"),
    ("a.pdf", pdfs.law_pdf(), {"roles": " , "}, 422, "roles_required"),
    ("a.pdf", pdfs.law_pdf(), {}, 422, "invalid_request"),
    ("a.pdf", pdfs.law_pdf(), {"roles": "isg", "title": "t" * 501}, 422, "invalid_request"),
])
def test_refused_uploads_write_nothing(api, name, data, form, status, code) -> None:
    admin = person(api.db, "yonetici", "admin")
    response = api.client.post("/v1/documents", headers=bearer(admin), files={"file": (name, data, "application/pdf")},
                               data=form)
    assert response.status_code == status and error_code(response) == code, response.text
    assert count(api.db, "jobs") == 0 and count(api.db, "documents") == 0 and incoming(api.settings) == []


def test_an_upload_below_the_free_disk_floor_is_a_507_before_the_body_is_read(db, settings, model) -> None:
    """Refused while too little room is left (MIN_FREE_DISK_MB) with the Turkish sentence that says how
    much is free and what to do; the multipart body is never parsed, so nothing is spooled or staged."""
    floor = disk_space("data", settings.data_dir).free_mb + 1024 * 1024  # a terabyte above what is free
    with api_app(db, settings.replace(min_free_disk_mb=floor), model) as full:
        admin = person(full.db, "yonetici", "admin")
        response = full.client.post("/v1/documents", headers=bearer(admin), data={"roles": "isg"},
                                    files={"file": ("yonetmelik.pdf", pdfs.law_pdf(), "application/pdf")})
        assert response.status_code == 507 and error_code(response) == "insufficient_storage", response.text
        body = response.json()["error"]
        assert body["message_tr"].startswith("Diskte yer az: veri klasöründe ") and "MIN_FREE_DISK_MB" in body["message_tr"]
        assert f"en az {format_integer(floor)} MB gerekir" in body["message_tr"]
        assert count(full.db, "jobs") == 0 and count(full.db, "documents") == 0 and incoming(full.settings) == []


def test_a_docx_unpacking_past_its_cap_is_refused_before_queueing(api) -> None:
    """DOCX_MAX_UNPACKED_MB (256) is told by the ZIP's directory: 500 MB of XML in an 800 KB file
    (under the 512 MB of old) is refused at the door, nothing queued."""
    admin = person(api.db, "yonetici", "admin")
    response = api.client.post("/v1/documents", headers=bearer(admin), data={"roles": "isg"},
                               files={"file": ("bomba.docx", docxs.empty_paragraph_bomb(500), "application/octet-stream")})
    assert response.status_code == 413 and error_code(response) == "docx_too_large", response.text
    assert "en fazla 256 MB okunabiliyor (DOCX_MAX_UNPACKED_MB)" in response.json()["error"]["message_tr"]
    assert count(api.db, "jobs") == 0 and count(api.db, "documents") == 0 and incoming(api.settings) == []


def test_upload_without_roles_says_roles_are_required_and_stores_nothing(api) -> None:
    """No default readers through the API either: `roles` must be sent (issue 22)."""
    admin = person(api.db, "yonetici", "admin")
    response = api.client.post("/v1/documents", headers=bearer(admin),
                               files={"file": ("maas.pdf", pdfs.law_pdf(), "application/pdf")})
    assert response.status_code == 422, response.text
    body = response.json()["error"]
    assert body["code"] == "invalid_request" and {"field": "roles", "type": "missing"} in body["fields"], body
    assert "roles" in body["message_tr"] and "roles" in body["message_en"], body
    assert count(api.db, "jobs") == 0 and count(api.db, "documents") == 0 and incoming(api.settings) == []


def test_chat_sources_follow_the_answers_citation_numbers(llm_api, law) -> None:
    """The model cites context block 2 first: the API's answer says [1] and lists that block first."""
    api, fake = llm_api
    fake.behaviour.reply = "Yonetmeligin kapsami [2]. Amaci guvenliktir [1]."
    secret = person(api.db, "mehmet", "isg")
    body = api.client.post("/v1/chat", json={"question": QUESTION}, headers=bearer(secret)).json()
    assert body["text"] == "Yonetmeligin kapsami [1]. Amaci guvenliktir [2]." and body["cited"] == [1, 2]
    assert [s["rank"] for s in body["sources"]] == list(range(1, len(body["sources"]) + 1))
    context = fake.bodies("/api/chat")[-1]["messages"][1]["content"]
    second_block = context.split("\n\n[2] ", 1)[1]
    assert second_block.startswith(body["sources"][0]["title"])
    assert body["sources"][0]["text"].strip() in second_block


def test_upload_without_a_file_and_with_two_files(api) -> None:
    admin = person(api.db, "yonetici", "admin")
    response = api.client.post("/v1/documents", headers=bearer(admin), data={"roles": "isg"})
    assert response.status_code == 422 and error_code(response) == "invalid_request"
    two = [("file", ("a.pdf", pdfs.law_pdf(), "application/pdf")), ("file", ("b.pdf", pdfs.law_pdf(), "application/pdf"))]
    response = api.client.post("/v1/documents", headers=bearer(admin), files=two, data={"roles": "isg"})
    assert response.status_code == 400 and error_code(response) == "too_many_files"
    assert "en fazla 1 dosya" in response.json()["error"]["message_tr"]
    assert "At most 1 file" in response.json()["error"]["message_en"]
    assert count(api.db, "jobs") == 0 and incoming(api.settings) == []


@pytest.mark.parametrize(("form", "code", "turkish", "english"), [
    ({"roles": "isg", **{f"alan{n}": "x" for n in range(30)}}, "too_many_fields", "en fazla 20 metin alanı",
     "at most 20 text fields"),
    ({"roles": "isg", "title": "t" * 200_000}, "form_field_too_large", "en fazla 64 KB", "at most 64 KB"),
])
def test_a_refused_form_names_the_limit_it_hit(api, form, code, turkish, english) -> None:
    admin = person(api.db, "yonetici", "admin")
    response = api.client.post("/v1/documents", headers=bearer(admin), data=form,
                               files={"file": ("a.pdf", pdfs.law_pdf(), "application/pdf")})
    assert response.status_code == 400 and error_code(response) == code, response.text
    error = response.json()["error"]
    assert turkish in error["message_tr"] and english in error["message_en"], error
    assert "okunamadı" not in error["message_tr"]
    assert count(api.db, "jobs") == 0 and incoming(api.settings) == []


def test_oversized_headers_get_a_json_431_before_the_token_is_read(api) -> None:
    secret = person(api.db, "mehmet", "isg")
    response = api.client.get("/v1/documents", headers={"Authorization": "Bearer " + "a" * (1024 * 1024)})
    assert response.status_code == 431 and error_code(response) == "request_headers_too_large"
    assert "16 KB" in response.json()["error"]["message_en"]
    padded = bearer(secret) | {"X-Notes": "n" * (MAX_HEADER_BYTES - 200)}  # within the limit: served
    assert api.client.get("/v1/documents", headers=padded).status_code == 200
    with api.db.connection() as conn:  # not counted as a bad token: never looked at
        assert conn.execute("SELECT count(*) FROM login_attempts").fetchone()[0] == 0


def test_an_upload_body_is_not_read_before_the_caller_is_known_to_be_an_admin(api) -> None:
    """Counted at the ASGI boundary: for an anonymous, a bad and a non-admin token not one byte
    of the upload is received (httpx's ASGI transport hands chunks over only when asked)."""
    import asyncio

    import httpx

    received: list[int] = []

    async def counting(scope, receive, send):
        async def counted():
            message = await receive()
            received.append(len(message.get("body", b"")))
            return message
        await api.app(scope, counted, send)

    isg = person(api.db, "mehmet", "isg")
    body = b"--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.pdf\"\r\n\r\n" + pdfs.law_pdf()

    async def send(headers: dict) -> int:
        transport = httpx.ASGITransport(app=counting, client=("10.0.0.3", 1))
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            response = await client.post("/v1/documents", content=body,
                                         headers={"Content-Type": "multipart/form-data; boundary=x", **headers})
        return response.status_code

    for headers, status in (({}, 401), (bearer("dyk_" + "z" * 43), 401), (bearer(isg), 403)):
        received.clear()
        assert asyncio.run(send(headers)) == status
        assert sum(received) == 0, (headers, received)
    assert count(api.db, "jobs") == 0


def test_oversized_uploads_are_refused_while_they_stream(db, settings, model) -> None:
    small = settings.replace(max_upload_mb=1)
    with api_app(db, small, model) as api:
        admin = person(api.db, "yonetici", "admin")
        padded = pdfs.law_pdf()[:-6] + b" " * (1024 * 1024) + b"%%EOF\n"  # 1 MB + a little: over MAX_UPLOAD_MB
        response = api.client.post("/v1/documents", headers=bearer(admin), data={"roles": "isg"},
                                   files={"file": ("buyuk.pdf", padded, "application/pdf")})
        assert response.status_code == 413 and error_code(response) == "file_too_large"
        huge = b"%PDF-1.7\n" + b"0" * (3 * 1024 * 1024)  # beyond the body limit (1 MB + overhead)
        response = api.client.post("/v1/documents", headers=bearer(admin), data={"roles": "isg"},
                                   files={"file": ("dev.pdf", huge, "application/pdf")})
        assert response.status_code == 413 and error_code(response) == "request_too_large"
        assert count(api.db, "jobs") == 0 and incoming(api.settings) == []


def test_uploads_and_jobs_are_for_admins_only(api) -> None:
    isg, admin = person(api.db, "mehmet", "isg"), person(api.db, "yonetici", "admin")
    response = api.client.post("/v1/documents", headers=bearer(isg), data={"roles": "isg"},
                               files={"file": ("a.pdf", pdfs.law_pdf(), "application/pdf")})
    assert response.status_code == 403 and error_code(response) == "admin_only"
    assert count(api.db, "jobs") == 0 and incoming(api.settings) == []
    job = api.client.post("/v1/documents", headers=bearer(admin), data={"roles": "isg"},
                          files={"file": ("a.pdf", pdfs.law_pdf(), "application/pdf")}).json()
    assert error_code(api.client.get(f"/v1/jobs/{job['job_id']}", headers=bearer(isg))) == "admin_only"
    missing = api.client.get(f"/v1/jobs/{nobodys()}", headers=bearer(admin))
    assert missing.status_code == 404 and error_code(missing) == "job_not_found"
    for other in (jobs.find_job(api.db, job["job_id"]).id, "abc", 2**70):  # the database key is no id either
        response = api.client.get(f"/v1/jobs/{other}", headers=bearer(admin))
        assert response.status_code == 404 and response.content == missing.content, other


# ----------------------------------------------------------------------------- feedback


def test_feedback_only_from_the_asker(api, law) -> None:
    mehmet, zeynep = person(api.db, "mehmet", "isg"), person(api.db, "zeynep", "isg")
    asked = api.client.post("/v1/chat", json={"question": QUESTION}, headers=bearer(mehmet)).json()
    qid = asked["question_id"]
    response = api.client.post(f"/v1/questions/{qid}/feedback", json={"value": -1, "comment": "eksik"},
                               headers=bearer(mehmet))
    assert response.status_code == 200 and response.json() == {"question_id": qid, "value": -1}
    with api.db.connection() as conn:
        assert conn.execute("SELECT feedback, feedback_comment FROM questions WHERE public_id = %s",
                            (qid,)).fetchone() == (-1, "eksik")
        key = conn.execute("SELECT id FROM questions WHERE public_id = %s", (qid,)).fetchone()[0]
    theirs = api.client.post(f"/v1/questions/{qid}/feedback", json={"value": 1}, headers=bearer(zeynep))
    missing = api.client.post(f"/v1/questions/{nobodys()}/feedback", json={"value": 1}, headers=bearer(zeynep))
    assert theirs.status_code == missing.status_code == 404 and theirs.content == missing.content
    for other in (key, "abc", 2**70):  # the asker's own question by its database key: no id, the same 404
        response = api.client.post(f"/v1/questions/{other}/feedback", json={"value": 1}, headers=bearer(mehmet))
        assert response.status_code == 404 and response.content == missing.content, other
    with api.db.connection() as conn:
        assert conn.execute("SELECT feedback FROM questions WHERE public_id = %s", (qid,)).fetchone() == (-1,)


@pytest.mark.parametrize("body", [{"value": 2}, {"value": 0}, {"value": "1"}, {"value": True}, {},
                                  {"value": 1, "comment": "c" * 2001}, {"value": 1, "comment": 5},
                                  {"value": 1, "extra": 1}])
def test_feedback_refuses_bad_bodies(api, law, body) -> None:
    secret = person(api.db, "mehmet", "isg")
    qid = api.client.post("/v1/chat", json={"question": QUESTION}, headers=bearer(secret)).json()["question_id"]
    response = api.client.post(f"/v1/questions/{qid}/feedback", json=body, headers=bearer(secret))
    assert response.status_code == 422 and error_code(response) == "invalid_request"
    with api.db.connection() as conn:
        assert conn.execute("SELECT feedback FROM questions WHERE public_id = %s", (qid,)).fetchone() == (None,)


def test_models_unavailable_is_a_503_and_documents_still_work(db, settings, model) -> None:
    from fastapi.testclient import TestClient

    from ragcore.api import create_app

    broken = settings.replace(embed_backend="ollama", ollama_base_url="http://127.0.0.1:9")
    with api_app(db, settings, model):
        pass  # the embedding space exists
    app = create_app(broken, db=db, generator=make_generator(settings, None))
    with TestClient(app, client=("10.0.0.1", 1)) as client:
        secret = person(db, "mehmet", "isg")
        assert client.get("/v1/documents", headers=bearer(secret)).status_code == 200
        response = client.post("/v1/chat", json={"question": QUESTION}, headers=bearer(secret))
        assert response.status_code == 503 and error_code(response) == "models_unavailable"
        assert client.get("/v1/search", params={"q": QUESTION}, headers=bearer(secret)).status_code == 503


# ----------------------------------------------------------------------------- read replica


def test_search_and_chat_retrieve_from_the_read_database_and_log_on_the_primary(db, settings, model, pg_url) -> None:
    """DATABASE_READ_URL: retrieval reads `read_db` (here an empty namespace standing in for a
    replica that has not replayed the upload yet), the question is logged on the primary."""
    from ragcore.store import Database, drop_namespace, ensure_embedding_space, migrate

    reader = Database(pg_url, "api_reader")
    try:
        migrate(reader)
        with api_app(db, settings, model) as primary_only:
            doc = ingest_pdf(db, settings, primary_only.embedder, pdfs.law_pdf(), filename="yonetmelik.pdf",
                             roles=["isg"]).public_id
            ensure_embedding_space(reader, primary_only.embedder.name, primary_only.embedder.dim)
            token = bearer(person(db, "ayse", "isg"))
            found = primary_only.client.get("/v1/search", params={"q": QUESTION}, headers=token).json()
            assert {hit["document_id"] for hit in found["results"]} == {doc}
        with api_app(db, settings, model, read_db=reader) as api:
            found = api.client.get("/v1/search", params={"q": QUESTION}, headers=token).json()
            assert found["results"] == []
            answer = api.client.post("/v1/chat", json={"question": QUESTION}, headers=token).json()
            assert answer["text"] == FALLBACK_ANSWER and answer["sources"] == []
            assert count(db, "questions") == 1 and count(reader, "questions") == 0
            assert api.client.get(f"/v1/documents/{doc}", headers=token).status_code == 200  # the primary's list
    finally:
        drop_namespace(db, "api_reader")
        reader.close()


def test_a_context_that_opens_its_own_pool_opens_the_replica_too(db, settings, pg_url) -> None:

    from ragcore.api.context import ApiContext

    context = ApiContext(settings.replace(database_read_url=pg_url), db=db, owns_db=True)
    replica = context.retrieval_database()
    try:
        assert replica is not db and replica.url == pg_url and context.retrieval_database() is replica
    finally:
        replica.close()
    injected = ApiContext(settings.replace(database_read_url=pg_url), db=db)  # tests: no pool of its own
    assert injected.retrieval_database() is db


def test_roles_lists_every_role_for_an_admin_and_only_their_own_for_anyone_else(api) -> None:
    """GET /v1/roles: what `roles` of an upload may name. An admin sees a role made after start
    with its label; a user of two roles sees those two alone; no token is a 401."""
    from ragcore.access import create_role

    create_role(api.db, "bakim", "Bakım ekibi", "Bakım talimatları")
    admin = person(api.db, "yonetici", "admin")
    listed = api.client.get("/v1/roles", headers=bearer(admin)).json()["roles"]
    names = [r["name"] for r in listed]
    assert names[:6] == ["admin", "isg", "ik", "uretim", "personel", "denetci"] and "bakim" in names
    assert next(r for r in listed if r["name"] == "bakim") == {
        "name": "bakim", "label": "Bakım ekibi", "description": "Bakım talimatları", "builtin": False}
    assert {r["name"] for r in listed if r["builtin"]} == {"admin", "denetci"}
    both = person(api.db, "ayse", "isg")
    users.set_roles(api.db, "ayse", ["isg", "bakim"])
    mine = api.client.get("/v1/roles", headers=bearer(both)).json()["roles"]
    assert sorted(r["name"] for r in mine) == ["bakim", "isg"]
    assert api.client.get("/v1/roles").status_code == 401
