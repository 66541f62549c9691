"""Ids a user sees say nothing about other users' activity or about documents they cannot read
(issue 21, finding 3; ragcore.core.public_ids).

The tables' bigint keys are shared counters: with them, the gap between two of a user's
question ids was the number of questions everybody else asked in between, and a reader's
document ids skipped over the documents their role cannot read. Each test sets up exactly
that situation (the keys do show the gap, checked first) and then reads what the API, the
CLI and the app show: random UUIDs, and no number in any id field.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest

from ragcore import jobs
from ragcore.cli import main as cli_main
from ragcore.core import parse_public_id
from ragcore.documents import find_document, ingest_pdf
from ragcore.store import Database
from tests import pdfs
from tests.api_support import api_app, bearer, person
from tests.permission_world import id_fields, is_public_id
from tests.retrieval_support import make_test_embedder
from tests.test_app import app_env  # noqa: F401 (the fixture, used below)

QUESTION = "Yonetmeligin amaci nedir?"


@pytest.fixture(scope="module")
def model():
    return make_test_embedder()


@pytest.fixture()
def api(db, settings, model):
    with api_app(db, settings, model) as api:
        yield api


def assert_only_public_ids(body: object) -> None:
    fields = id_fields(body)
    assert fields, body  # the check saw the ids it is about
    bad = [(name, value) for name, value in fields if value is not None and not is_public_id(value)]
    assert not bad, bad


def keys(db: Database, table: str, public_ids: list[str]) -> list[int]:
    with db.connection() as conn:
        found = dict(conn.execute(f"SELECT public_id::text, id FROM {table} WHERE public_id = ANY(%s::uuid[])",
                                  (public_ids,)).fetchall())
    return [found[p] for p in public_ids]


def test_consecutive_questions_of_one_user_do_not_count_the_others(api) -> None:
    ingest_pdf(api.db, api.settings, api.embedder, pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    mehmet, zeynep = person(api.db, "mehmet", "isg"), person(api.db, "zeynep", "isg")
    first = api.client.post("/v1/chat", json={"question": QUESTION}, headers=bearer(mehmet)).json()
    for n in range(5):
        api.client.post("/v1/chat", json={"question": f"{QUESTION} ({n})"}, headers=bearer(zeynep))
    second = api.client.post("/v1/chat", json={"question": QUESTION}, headers=bearer(mehmet)).json()
    ids = [first["question_id"], second["question_id"]]
    low, high = keys(api.db, "questions", ids)
    assert high - low == 6  # the keys do count zeynep's five questions: the leak this test is about
    assert all(is_public_id(i) for i in ids) and ids[0] != ids[1]
    assert {str(low), str(high)}.isdisjoint(ids)
    for body in (first, second):
        assert_only_public_ids(body)  # question_id and every source's document_id
    for i in ids:  # the id works where it is meant to, as the asker
        response = api.client.post(f"/v1/questions/{i}/feedback", json={"value": 1}, headers=bearer(mehmet))
        assert response.status_code == 200 and response.json()["question_id"] == i


def test_a_readers_document_ids_do_not_skip_over_forbidden_documents(api) -> None:
    made = [ingest_pdf(api.db, api.settings, api.embedder, pdfs.text_pdf([f"Talimat {n}: makine bakimi yapilir."]),
                       filename=f"t{n}.pdf", roles=[role]) for n, role in enumerate(["isg", "ik", "ik", "isg"])]
    assert made[3].document_id - made[0].document_id == 3  # the keys skip the two ik documents
    listed = api.client.get("/v1/documents", headers=bearer(person(api.db, "mehmet", "isg"))).json()
    assert_only_public_ids(listed)
    assert sorted(d["id"] for d in listed["documents"]) == sorted([made[0].public_id, made[3].public_id])
    assert not {str(m.document_id) for m in made} & {d["id"] for d in listed["documents"]}


def test_an_upload_job_and_its_document_go_by_public_ids(api) -> None:
    admin = person(api.db, "yonetici", "admin")
    queued = api.client.post("/v1/documents", headers=bearer(admin), data={"roles": "isg"},
                             files={"file": ("a.pdf", pdfs.law_pdf(), "application/pdf")})
    assert queued.status_code == 202 and is_public_id(queued.json()["job_id"])
    assert queued.headers["location"] == f"/v1/jobs/{queued.json()['job_id']}"
    jobs.run_worker(api.settings, wait=False, embedder_factory=lambda: api.embedder)
    done = api.client.get(queued.headers["location"], headers=bearer(admin)).json()
    assert done["status"] == "succeeded", done
    assert_only_public_ids(done)  # job_id and the result's document_id
    assert find_document(api.db, done["result"]["document_id"], "admin") is not None


def test_public_ids_are_random_uuids_made_by_the_database(db: Database) -> None:
    """Version 4 from gen_random_uuid() (migration 013), unique, and any text that is not one is None."""
    with db.connection() as conn:
        made = [conn.execute("INSERT INTO jobs (kind) VALUES ('x') RETURNING public_id::text").fetchone()[0]
                for _ in range(20)]
        assert conn.execute("SELECT count(DISTINCT public_id) FROM jobs").fetchone()[0] == 20
    assert all(uuid.UUID(p).version == 4 for p in made)
    assert parse_public_id(made[0].upper()) == made[0]
    for bad in ("17", "", "abc", made[0] + "0", "x" * 1000, None, 17):
        assert parse_public_id(bad) is None, bad


# ----------------------------------------------------------------------------- CLI


def _cli(capsys: pytest.CaptureFixture, *argv: str) -> object:
    code = cli_main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_the_clis_json_output_carries_public_ids_only(db, settings, monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in {"DATABASE_URL": settings.database_url, "DATA_DIR": str(settings.data_dir),
                        "EMBED_BACKEND": "use", "LLM_BACKEND": "extractive", "OLLAMA_BASE_URL": "http://127.0.0.1:9",
                        "REFUSAL_THRESHOLD": "0", "LOG_LEVEL": "WARNING"}.items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "yonetmelik.pdf"
    path.write_bytes(pdfs.law_pdf())
    person(db, "mehmet", "isg")
    ingested = _cli(capsys, "ingest", str(path), "--roles", "isg", "--json")
    asked = _cli(capsys, "ask", QUESTION, "--user", "mehmet", "--json")
    other = tmp_path / "ikinci.pdf"
    other.write_bytes(pdfs.text_pdf(["Yangin tatbikati yilda bir kez yapilir."]))
    queued = _cli(capsys, "ingest", str(other), "--roles", "ik", "--background", "--json")
    for body in (ingested, asked, queued, _cli(capsys, "documents", "--json"), _cli(capsys, "jobs", "--json"),
                 _cli(capsys, "jobs", queued["job_id"], "--json"),
                 _cli(capsys, "search", QUESTION, "--role", "isg", "--json")):
        assert_only_public_ids(body)
    assert asked["sources"][0]["document_id"] == ingested["document_id"]
    code = cli_main(["jobs", str(jobs.find_job(db, queued["job_id"]).id)])  # the job's key names no job
    assert code == 1 and "bulunamadı" in capsys.readouterr().err


# ----------------------------------------------------------------------------- app


def _flat(node) -> list:
    out = []
    for child in getattr(node, "children", {}).values():
        out.append(child)
        out.extend(_flat(child))
    return out


@pytest.mark.usefixtures("app_env")
def test_the_chats_widget_ids_carry_the_public_question_id(db: Database, settings) -> None:
    """Widget keys reach the browser inside element ids: the chat's name the question by its public id."""
    from ragcore.access import create_user
    from ragcore.embed import USEEmbedder
    from tests.test_app import login, new_app

    ingest_pdf(db, settings, USEEmbedder(), pdfs.law_pdf(), filename="yonetmelik.pdf", roles=["isg"])
    create_user(db, "mehmet", "isg", "mehmet-parola-1")
    create_user(db, "zeynep", "isg", "zeynep-parola-1")
    at = login(new_app(), "mehmet", "mehmet-parola-1")
    at.chat_input(key="chat_input").set_value(QUESTION).run()
    assert not at.exception, at.exception
    with db.connection() as conn:
        key, public_id = conn.execute("SELECT id, public_id::text FROM questions").fetchone()
    ids = [str(getattr(getattr(e, "proto", None), "id", "")) for e in _flat(at._tree)]
    assert any(i.endswith(f"fb_{public_id}") for i in ids), ids
    assert any(f"chat_q{public_id}_src1" in i for i in ids), ids  # the sources' buttons
    assert not [i for i in ids if re.search(rf"(chat_q|fb_){key}\b", i)]
