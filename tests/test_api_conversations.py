"""Conversations over the REST API: `conversation_id` on POST /v1/chat, and /v1/conversations —
list, open, rename, delete, export as Markdown and PDF — on the real database and generators.

Somebody else's conversation is answered exactly like a missing one (the same 404 bytes), before
anything is answered or logged. The permission suite over every role is in
tests/test_api_permissions.py."""

from __future__ import annotations

import io
import uuid

import pypdf
import pytest

from ragcore.documents import ingest_pdf
from tests import pdfs
from tests.api_support import api_app, api_with_regulation, bearer, error_code, person, sse_events
from tests.retrieval_support import make_test_embedder

QUESTION = "Yonetmeligin amaci nedir?"
FOLLOW_UP = "Peki bu kimleri kapsar?"


@pytest.fixture(scope="module")
def model():
    return make_test_embedder()


@pytest.fixture()
def api(db, settings, model):
    with api_with_regulation(db, settings, model) as api:
        yield api


def logged(db) -> list[str]:
    with db.connection() as conn:
        return [row[0] for row in conn.execute("SELECT question FROM questions ORDER BY id")]


def test_chat_starts_a_conversation_and_a_follow_up_continues_it(api) -> None:
    mehmet = bearer(person(api.db, "mehmet", "isg"))
    first = api.client.post("/v1/chat", json={"question": QUESTION}, headers=mehmet).json()
    conversation = first["conversation_id"]
    assert uuid.UUID(conversation).version == 4 and first["turn"] == 1
    assert first["understood"] == {"asked": QUESTION, "question": QUESTION, "rewritten": False, "method": "none",
                                   "shown": None, "notice": None}
    second = api.client.post("/v1/chat", json={"question": FOLLOW_UP, "conversation_id": conversation},
                             headers=mehmet).json()
    understood = second["understood"]
    assert second["conversation_id"] == conversation and second["turn"] == 2
    assert understood["rewritten"] and understood["method"] == "rules" and understood["asked"] == FOLLOW_UP
    assert understood["question"] == "Bu kimleri kapsar? (yonetmeligin amaci)"
    assert understood["shown"] == "Şöyle anladım: " + understood["question"]
    assert second["question"] == understood["question"]  # what was answered
    assert logged(api.db) == [QUESTION, understood["question"]]  # and logged

    listed = api.client.get("/v1/conversations", headers=mehmet).json()["conversations"]
    assert [(c["id"], c["title"], c["turn_count"]) for c in listed] == [(conversation, QUESTION, 2)]
    opened = api.client.get(f"/v1/conversations/{conversation}", headers=mehmet).json()
    assert [t["question"] for t in opened["turns"]] == [QUESTION, FOLLOW_UP]
    turn = opened["turns"][1]
    assert turn["resolved_question"] == understood["question"] and turn["shown"] == understood["shown"]
    assert turn["question_id"] == second["question_id"] and turn["answer"] == second["text"]
    citation = opened["turns"][0]["citations"][0]
    assert citation["title"] == "Ornek Yonetmelik" and citation["article"] == "Madde 1" and citation["locator"] == "s. 1"
    assert len(citation["version"]["sha256"]) == 64 and citation["version"]["uploaded_at"]


def test_events_end_with_the_saved_conversation(api) -> None:
    mehmet = bearer(person(api.db, "mehmet", "isg")) | {"Accept": "text/event-stream"}
    events = sse_events(api.client.post("/v1/chat", json={"question": QUESTION}, headers=mehmet).text)
    done = events[-1][1]
    assert events[-1][0] == "done" and done["turn"] == 1 and done["conversation_id"]
    events = sse_events(api.client.post("/v1/chat", json={"question": FOLLOW_UP,
                                                          "conversation_id": done["conversation_id"]},
                                        headers=mehmet).text)
    assert events[-1][0] == "done" and events[-1][1]["turn"] == 2
    assert events[-1][1]["understood"]["method"] == "rules"


def test_with_a_language_model_the_follow_up_is_condensed_by_it(db, settings, model, fake_llm) -> None:
    llm = settings.replace(llm_backend="ollama", ollama_base_url=fake_llm.url, refusal_threshold=0.0)
    with api_app(db, llm, model) as api:
        ingest_pdf(api.db, api.settings, api.embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
        mehmet = bearer(person(api.db, "mehmet", "isg"))
        fake_llm.behaviour.reply = "Yonetmeligin amaci isyerlerinde guvenligi saglamaktir [1]."
        first = api.client.post("/v1/chat", json={"question": QUESTION}, headers=mehmet).json()
        fake_llm.behaviour.reply = "Yonetmelik hangi isyerlerini kapsar?"
        second = api.client.post("/v1/chat", json={"question": FOLLOW_UP, "conversation_id": first["conversation_id"]},
                                 headers=mehmet).json()
    assert second["understood"]["method"] == "llm"
    assert second["understood"]["question"] == "Yonetmelik hangi isyerlerini kapsar?" == second["question"]
    condensation = fake_llm.bodies("/api/chat")[1]["messages"]
    assert "tek bir soruya dönüştürüyorsun" in condensation[0]["content"]
    assert f"Kullanıcı: {QUESTION}" in condensation[1]["content"]
    assert condensation[1]["content"].endswith(f"Son soru: {FOLLOW_UP}\n\nTek başına anlaşılır soru:")


def test_somebody_elses_conversation_is_a_missing_one(api) -> None:
    mehmet, zeynep = bearer(person(api.db, "mehmet", "isg")), bearer(person(api.db, "zeynep", "isg"))
    admin = bearer(person(api.db, "admin", "admin"))
    mine = api.client.post("/v1/chat", json={"question": QUESTION}, headers=mehmet).json()["conversation_id"]
    before = logged(api.db)
    nobody = str(uuid.uuid4())
    calls = [("GET", "/v1/conversations/{}", None), ("GET", "/v1/conversations/{}/export?format=md", None),
             ("GET", "/v1/conversations/{}/export?format=pdf", None), ("PATCH", "/v1/conversations/{}", {"title": "x"}),
             ("DELETE", "/v1/conversations/{}", None)]
    for other in (zeynep, admin):
        for method, url, body in calls:
            missing = api.client.request(method, url.format(nobody), json=body, headers=other)
            assert missing.status_code == 404 and error_code(missing) == "conversation_not_found"
            for probe in (mine, mine.upper(), "17", "bir-sey"):
                response = api.client.request(method, url.format(probe), json=body, headers=other)
                assert (response.status_code, response.content) == (404, missing.content), (method, url, probe)
        chat_missing = api.client.post("/v1/chat", json={"question": FOLLOW_UP, "conversation_id": nobody}, headers=other)
        chat_theirs = api.client.post("/v1/chat", json={"question": FOLLOW_UP, "conversation_id": mine}, headers=other)
        assert chat_missing.status_code == 404 and chat_theirs.content == chat_missing.content
        assert api.client.get("/v1/conversations", headers=other).json() == {"conversations": []}
    assert logged(api.db) == before  # nothing was answered for them
    assert api.client.get(f"/v1/conversations/{mine}", headers=mehmet).json()["turn_count"] == 1  # untouched


def test_rename_delete_and_their_refusals(api) -> None:
    mehmet = bearer(person(api.db, "mehmet", "isg"))
    conversation = api.client.post("/v1/chat", json={"question": QUESTION}, headers=mehmet).json()["conversation_id"]
    renamed = api.client.patch(f"/v1/conversations/{conversation}", json={"title": "Yönetmelik soruları"}, headers=mehmet)
    assert renamed.status_code == 200 and renamed.json()["title"] == "Yönetmelik soruları"
    too_long = api.client.patch(f"/v1/conversations/{conversation}", json={"title": "ş" * 121}, headers=mehmet)
    assert too_long.status_code == 422 and error_code(too_long) == "invalid_title"
    assert too_long.json()["error"]["message_tr"] == ("Sohbet adı en fazla 120 karakter olabilir (şu an 121); "
                                                      "lütfen kısaltın.")
    empty = api.client.patch(f"/v1/conversations/{conversation}", json={"title": "  "}, headers=mehmet)
    assert empty.status_code == 422 and "boş olamaz" in empty.json()["error"]["message_tr"]
    unknown = api.client.patch(f"/v1/conversations/{conversation}", json={"title": "a", "owner": "x"}, headers=mehmet)
    assert unknown.status_code == 422 and error_code(unknown) == "invalid_request"
    deleted = api.client.delete(f"/v1/conversations/{conversation}", headers=mehmet)
    assert deleted.status_code == 200 and deleted.json() == {"deleted": conversation}
    again = api.client.delete(f"/v1/conversations/{conversation}", headers=mehmet)
    assert again.status_code == 404 and error_code(again) == "conversation_not_found"
    assert api.client.get("/v1/conversations", headers=mehmet).json() == {"conversations": []}


def test_a_full_conversation_refuses_the_next_question(db, settings, model) -> None:
    with api_app(db, settings.replace(refusal_threshold=0.0, conversation_max_turns=1), model) as api:
        mehmet = bearer(person(api.db, "mehmet", "isg"))
        conversation = api.client.post("/v1/chat", json={"question": QUESTION}, headers=mehmet).json()["conversation_id"]
        full = api.client.post("/v1/chat", json={"question": FOLLOW_UP, "conversation_id": conversation}, headers=mehmet)
        assert full.status_code == 409 and error_code(full) == "conversation_full"
        assert "en fazla 1 soru tutabilir" in full.json()["error"]["message_tr"]
        assert logged(api.db) == [QUESTION]


def test_export_as_markdown_and_pdf(api) -> None:
    mehmet = bearer(person(api.db, "mehmet", "isg"))
    first = api.client.post("/v1/chat", json={"question": QUESTION}, headers=mehmet).json()
    conversation = first["conversation_id"]
    api.client.post("/v1/chat", json={"question": FOLLOW_UP, "conversation_id": conversation}, headers=mehmet)
    markdown = api.client.get(f"/v1/conversations/{conversation}/export", headers=mehmet)
    assert markdown.status_code == 200 and markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.headers["content-disposition"] == f'attachment; filename="sohbet-{conversation[:8]}.md"'
    text = markdown.content.decode("utf-8")
    assert text.startswith(f"# {QUESTION}") and f"## 2. {FOLLOW_UP}" in text and "Şöyle anladım: " in text
    assert "[1] Ornek Yonetmelik — Madde 1 – Amac — s. 1 — sürüm 1 · " in text
    document = api.client.get(f"/v1/conversations/{conversation}/export?format=pdf", headers=mehmet)
    assert document.status_code == 200 and document.headers["content-type"] == "application/pdf"
    reader = pypdf.PdfReader(io.BytesIO(document.content))
    pdf_text = " ".join("".join(page.extract_text() for page in reader.pages).split())
    assert QUESTION in pdf_text and FOLLOW_UP in pdf_text and "Ornek Yonetmelik — Madde 1 – Amac — s. 1" in pdf_text
    wrong = api.client.get(f"/v1/conversations/{conversation}/export?format=docx", headers=mehmet)
    assert wrong.status_code == 422 and error_code(wrong) == "invalid_request"
