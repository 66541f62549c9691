"""GET /v1/audit/questions and /v1/audit/questions.csv: an admin reads every user's questions as
the answer path logged them (roles, outcome, the shown passages with their document's version);
every other role gets the same 403 and nothing of the log; the API's 404 and 422 conventions hold.
"""

from __future__ import annotations

import csv
import io
import uuid

import pytest

from ragcore.audit import BOM, HEADERS, MAX_PAGE_SIZE
from ragcore.core import ROLES
from tests.api_support import api_with_regulation, bearer, error_code, person
from tests.retrieval_support import make_test_embedder

QUESTION = "Yonetmeligin amaci nedir?"
OFF_TOPIC = "Yarın İstanbul'da hava nasıl olacak?"


@pytest.fixture(scope="module")
def model():
    return make_test_embedder()


@pytest.fixture()
def api(db, settings, model):
    with api_with_regulation(db, settings, model) as api:
        yield api


def _document(api) -> tuple[str, str]:
    with api.db.connection() as conn:
        public_id, sha = conn.execute("SELECT public_id::text, sha256 FROM documents").fetchone()
    return public_id, sha


def test_an_admin_reads_every_question_as_the_answer_path_logged_it(api) -> None:
    mehmet = bearer(person(api.db, "mehmet", "isg"))
    answered = api.client.post("/v1/chat", json={"question": QUESTION}, headers=mehmet).json()
    assert answered["outcome"] == "answer" and answered["sources"]
    admin = bearer(person(api.db, "yonetici", "admin"))
    response = api.client.get("/v1/audit/questions", headers=admin)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["total"], body["page"], body["pages"]) == (1, 1, 1)
    row = body["questions"][0]
    assert (row["question_id"], row["username"], row["roles"], row["question"], row["outcome"]) == (
        answered["question_id"], "mehmet", ["isg"], QUESTION, "answer")
    document_id, sha = _document(api)
    shown = row["passages"]
    assert len(shown) == len(answered["sources"])
    assert all(p["document_id"] == document_id and p["sha256"] == sha and p["uploaded_at"] for p in shown)
    assert [p["locator"] for p in shown] == [s["locator"] for s in answered["sources"]]
    assert shown[0]["use"] == "cited" and {p["use"] for p in shown} <= {"cited", "unused"}
    assert "document_key" not in shown[0]  # no database key leaves the server

    only_doc = api.client.get("/v1/audit/questions", params={"document": document_id, "user": "mehmet",
                                                             "role": "isg", "outcome": "answer"}, headers=admin)
    assert only_doc.json()["total"] == 1
    assert api.client.get("/v1/audit/questions", params={"role": "ik"}, headers=admin).json()["total"] == 0


def test_a_real_auditor_reads_the_trail_and_a_user_of_several_roles_is_logged_with_all_of_them(api) -> None:
    """Roles as data (migration 021): `denetci` is a role a user holds, not a name in code; and
    asker_roles is the set the asker held, not their reader key."""
    from ragcore.access import create_user

    create_user(api.db, "iki-rol", ["uretim", "isg"], "parola-123")
    two = bearer(_token_of(api, "iki-rol"))
    answered = api.client.post("/v1/chat", json={"question": QUESTION}, headers=two).json()
    assert answered["outcome"] == "answer"
    auditor = bearer(person(api.db, "denetim", "denetci"))
    response = api.client.get("/v1/audit/questions", headers=auditor)
    assert response.status_code == 200, response.text
    row = response.json()["questions"][0]
    assert (row["username"], row["roles"]) == ("iki-rol", ["isg", "uretim"])
    assert api.client.get("/v1/audit/questions", params={"role": "uretim"}, headers=auditor).json()["total"] == 1
    assert api.client.get("/v1/audit/questions.csv", headers=auditor).status_code == 200
    with api.db.connection() as conn:
        assert conn.execute("SELECT role, asker_roles FROM questions").fetchone() == ("isg+uretim", ["isg", "uretim"])


def _token_of(api, username: str) -> str:
    from ragcore.access import create_token

    return create_token(api.db, username, created_by="test").secret


def test_the_csv_export_is_a_file_for_excel(api) -> None:
    ayse = bearer(person(api.db, "ayse", "personel"))
    api.client.post("/v1/chat", json={"question": OFF_TOPIC}, headers=ayse)
    response = api.client.get("/v1/audit/questions.csv", headers=bearer(person(api.db, "yonetici", "admin")))
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"].startswith('attachment; filename="denetim-kaydi-')
    assert response.content.startswith(BOM.encode("utf-8"))
    rows = list(csv.reader(io.StringIO(response.content.decode("utf-8").removeprefix(BOM)), delimiter=";"))
    assert rows[0] == list(HEADERS) and len(rows) == 2
    assert rows[1][1:4] == ["ayse", "Tüm personel", OFF_TOPIC]


def test_every_other_role_gets_403_and_nothing_of_the_log(api) -> None:
    mehmet = bearer(person(api.db, "mehmet", "isg"))
    api.client.post("/v1/chat", json={"question": QUESTION}, headers=mehmet)
    for role in ROLES:
        if role == "admin":
            continue
        token = bearer(person(api.db, f"kisi-{role}", role))
        for path in ("/v1/audit/questions", "/v1/audit/questions.csv"):
            for params in ({}, {"user": "mehmet"}, {"document": str(uuid.uuid4())}, {"page_size": 10_000}):
                response = api.client.get(path, params=params, headers=token)
                assert response.status_code == 403 and error_code(response) == "audit_only", (role, path, params)
                assert QUESTION not in response.text and "mehmet" not in response.text
    assert api.client.get("/v1/audit/questions").status_code == 401


def test_the_api_conventions_404_and_422(api) -> None:
    admin = bearer(person(api.db, "yonetici", "admin"))
    for path in ("/v1/audit/questions", "/v1/audit/questions.csv"):
        missing = api.client.get(path, params={"document": str(uuid.uuid4())}, headers=admin)
        assert missing.status_code == 404 and error_code(missing) == "document_not_found"
        backwards = api.client.get(path, params={"since": "2026-12-05", "until": "2026-12-01"}, headers=admin)
        assert backwards.status_code == 422 and error_code(backwards) == "invalid_filter"
        assert "Bitiş tarihi" in backwards.json()["error"]["message_tr"]
    too_big = api.client.get("/v1/audit/questions", params={"page_size": MAX_PAGE_SIZE + 1}, headers=admin)
    assert too_big.status_code == 422
    assert api.client.get("/v1/audit/questions", params={"page_size": MAX_PAGE_SIZE}, headers=admin).status_code == 200
