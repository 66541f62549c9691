"""Permission suite over the REST API: every endpoint × every role, documents with random roles.

The same method as tests/test_permission_paths.py, and the same ledger and marked world
(tests/permission_world.py): small PDFs
with random `allowed_roles`, every sentence and every title carrying its document's marker
(`KOD07Q`), ingested through the real `ingest_pdf`; one user and one API token per role; the
real app (`ragcore.api.create_app`) over the real database, embedder and extractive
generator. A forbidden document's marker anywhere in a response — JSON, a server-sent event
stream, an error body — is a leak, and every returned document or chunk is checked by id. A
forbidden document must be answered exactly like a missing one (the same 404 bytes), admin
endpoints must refuse every other role before looking anything up, and feedback works only
for the asker. Every id in a response is a public id (a random UUID: `api.ids`), and a
document's, a job's or a question's database key in a path is an unknown id (the same 404
bytes), whoever asks. Positive controls (`api.markers.visible`) check that readable markers do show.

The statistics property (ingesting or deleting a document a role cannot read changes nothing
that role gets back, scores included) needs role-scoped lexical statistics, which arrive with
migration 003; until that migration exists the test is an expected failure (strict, so it
must be switched on when it starts to pass).

The ledger is written to `artifacts/permission_summary_api.json`; `make mutation-check`
runs this module too and counts its leaks.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ragcore import jobs
from ragcore.access import create_token, list_tokens, revoke_token, users
from ragcore.answer import make_generator
from ragcore.api import create_app
from ragcore.core import ROLES, Settings
from ragcore.documents import WORD_HAS_NO_PAGES, delete_collection, delete_document, get_document, ingest_pdf
from ragcore.embed import CachedEmbedder
from ragcore.retrieval import MODES
from ragcore.store import ensure_embedding_space
from tests import pdfs
from tests.api_support import bearer, sse_events
from tests.permission_world import (
    READER_ROLES,
    TOPICS,
    Ledger,
    World,
    build_collections,
    build_world,
    questions_for,
)
from tests.retrieval_support import clean, make_test_embedder

REPO = Path(__file__).resolve().parent.parent
SUMMARY = REPO / "artifacts" / "permission_summary_api.json"
SEED = 160016
N_DOCS = 12

EXPECTED_PATHS = {
    "api.documents.list", "api.documents.get", "api.documents.chunks", "api.documents.file", "api.documents.page",
    "api.documents.versions", "api.search",
    "api.search.role", "api.chat", "api.chat.sse", "api.feedback", "api.jobs", "api.upload", "api.delete",
    "api.role-change", "api.deactivation", "api.revocation", "api.markers.visible", "api.ids",
    "api.conversations", "api.conversations.chat", "api.conversations.others", "api.conversations.history",
    "api.collections", "api.chat.scope", "api.search.scope", "api.audit",
}


class ApiWorld(World):
    client: TestClient
    secrets: dict[str, str]

    def get(self, role: str, url: str, **kwargs):
        return self.client.get(url, headers=bearer(self.secrets[role]), **kwargs)

    def post(self, role: str, url: str, **kwargs):
        headers = bearer(self.secrets[role]) | kwargs.pop("headers", {})
        return self.client.post(url, headers=headers, **kwargs)


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    book = Ledger("tests/test_api_permissions.py", SEED, N_DOCS, EXPECTED_PATHS)
    yield book
    summary = book.write(SUMMARY)
    print(f"\nAPI permission paths: {summary['checks']} checks, {summary['leaks']} leaks -> {SUMMARY}")


@pytest.fixture(scope="module")
def world(session_db, pg_url, tmp_path_factory, ledger) -> ApiWorld:
    clean(session_db)
    with session_db.connection() as conn:
        conn.execute("TRUNCATE jobs, procrastinate_jobs, login_attempts CASCADE")
    settings = Settings(
        database_url=pg_url, data_dir=tmp_path_factory.mktemp("api-permissions") / "data", embed_backend="use",
        llm_backend="extractive", ollama_base_url="http://127.0.0.1:9", refusal_threshold=0.0,
    )
    embedder = CachedEmbedder(make_test_embedder(), session_db)
    ensure_embedding_space(session_db, embedder.name, embedder.dim)
    world = build_world(session_db, settings, embedder, ledger, seed=SEED, n_docs=N_DOCS,
                        filename="api-{index:02d}-{mark}.pdf", user_prefix="api", world_type=ApiWorld)
    world.secrets = {role: create_token(session_db, f"api-{role}", created_by="test").secret for role in ROLES}
    app = create_app(settings, db=session_db, embedder=embedder, generator=make_generator(settings, embedder))
    with TestClient(app, client=("10.7.0.1", 40000)) as client:
        world.client = client
        yield world


def _scan_json(world: ApiWorld, path: str, role: str, response, question: str | None = None) -> None:
    world.scan(path, role, response.text, (response.request.url.path, response.status_code), question)
    if response.headers.get("content-type", "").startswith("application/json"):
        world.ids("api.ids", role, response.json(), (path, response.request.url.path))


def _sources(world: ApiWorld, path: str, role: str, sources: list[dict], question: str) -> None:
    world.ids("api.ids", role, sources, path)
    for s in sources:
        world.source(path, role, world.key(s["document_id"]), text=s["text"] + s["title"] + s["filename"],
                     context=question)


def nobodys() -> str:
    """A public id no row has."""
    return str(uuid.uuid4())


# ----------------------------------------------------------------------------- documents


def test_document_list_detail_chunks_and_file_per_role(world: ApiWorld) -> None:
    before = len(world.ledger.leaks)
    missing_id = nobodys()
    for role in ROLES:
        listed = world.get(role, "/v1/documents")
        assert listed.status_code == 200
        _scan_json(world, "api.documents.list", role, listed)
        ids = [world.key(d["id"]) for d in listed.json()["documents"]]
        world.ledger.ok("api.documents.list", set(ids) == {d for d in world.readable if world.may_read(role, d)},
                        (role, ids))
        for suffix, path in (("", "api.documents.get"), ("?chunks=true", "api.documents.chunks"),
                             ("/file", "api.documents.file"), ("/versions", "api.documents.versions")):
            missing = world.get(role, f"/v1/documents/{missing_id}{suffix}")
            for doc_id in world.readable:
                by_key = world.get(role, f"/v1/documents/{doc_id}{suffix}")  # the database key is no id
                world.ledger.ok(path, by_key.status_code == 404 and by_key.content == missing.content,
                                (role, doc_id, "by key", by_key.status_code))
                response = world.get(role, f"/v1/documents/{world.public[doc_id]}{suffix}")
                if world.may_read(role, doc_id):
                    ok = response.status_code == 200 and (
                        response.content == world.data[doc_id] if suffix == "/file"
                        else [v["document_id"] for v in response.json()["versions"]] == [world.public[doc_id]]
                        if suffix == "/versions" else response.json()["id"] == world.public[doc_id])
                    world.ledger.ok(path, ok, (role, doc_id, response.status_code))
                else:
                    world.ledger.ok(path, response.status_code == 404 and response.content == missing.content,
                                    (role, doc_id, response.status_code, response.content[:200]))
                if suffix != "/file":
                    _scan_json(world, path, role, response)
    world.assert_no_new_leaks(before)


def test_page_image_per_role(world: ApiWorld) -> None:
    """`GET /v1/documents/{id}/pages/{n}/image`, the app's "Sayfayı aç" over the same service
    function: a PNG with the passage marked for a readable PDF, the Word refusal for a readable
    .docx, and for a document the role may not read the same 404 bytes as an id nobody has (and
    as a database key), whatever the page."""
    before = len(world.ledger.leaks)
    missing_id = nobodys()
    for role in ROLES:
        for page in (1, 99):
            missing = world.get(role, f"/v1/documents/{missing_id}/pages/{page}/image")
            assert missing.status_code == 404 and missing.json()["error"]["code"] == "document_not_found"
            for doc_id, mark in world.markers.items():
                word = get_document(world.db, doc_id, "admin").file_format == "docx"
                by_key = world.get(role, f"/v1/documents/{doc_id}/pages/{page}/image")
                world.ledger.ok("api.documents.page", by_key.status_code == 404 and by_key.content == missing.content,
                                (role, doc_id, page, "by key", by_key.status_code))
                response = world.get(role, f"/v1/documents/{world.public[doc_id]}/pages/{page}/image",
                                     params={"passage": f"{mark} SAYFA 1"})
                error = response.json()["error"] if response.status_code == 404 else {}
                if not world.may_read(role, doc_id):
                    ok = response.status_code == 404 and response.content == missing.content
                elif word:
                    ok = error.get("code") == "page_not_found" and error.get("message_tr") == WORD_HAS_NO_PAGES
                elif page == 99:
                    ok = error.get("code") == "page_not_found" and "99. sayfa yok" in error.get("message_tr", "")
                else:
                    ok = (response.status_code == 200 and response.headers["content-type"] == "image/png"
                          and response.content.startswith(b"\x89PNG") and int(response.headers["x-marked-words"]) > 0)
                world.ledger.ok("api.documents.page", ok, (role, doc_id, page, response.status_code, error))
                if error:
                    world.scan("api.documents.page", role, response.text, (doc_id, page))
    world.assert_no_new_leaks(before)


# ----------------------------------------------------------------------------- search and chat


@pytest.mark.parametrize("mode", MODES)
def test_search_per_role_and_mode(world: ApiWorld, mode: str) -> None:
    before = len(world.ledger.leaks)
    rng = random.Random(f"{SEED}-search-{mode}")
    visible = 0
    for role in ROLES:
        for question in questions_for(world, role, rng, n_plain=3, n_targeted=3):
            k = rng.choice([1, 5, 20, 50])
            response = world.get(role, "/v1/search", params={"q": question, "k": k, "mode": mode})
            assert response.status_code == 200, response.text
            body = response.json()
            world.ledger.ok("api.search", body["role"] == role and len(body["results"]) <= k, (role, body["role"]))
            _scan_json(world, "api.search", role, response, question)
            for hit in body["results"]:
                world.ledger.ok("api.search", world.may_read(role, world.key(hit["document_id"])),
                                (role, hit["document_id"]))
            visible += any(m in response.text.replace(question, "") for m in world.readable_markers(role))
    world.ledger.ok("api.markers.visible", visible > 0, ("search", mode))
    world.assert_no_new_leaks(before)


def test_only_admin_searches_as_another_role(world: ApiWorld) -> None:
    before = len(world.ledger.leaks)
    rng = random.Random(f"{SEED}-as-role")
    for role in READER_ROLES:
        target = world.forbidden(role)[0]
        question = f"{target} risk degerlendirmesi izin ucret"
        for other in ROLES:
            if other == role:
                continue
            response = world.get(role, "/v1/search", params={"q": question, "role": other, "k": 50})
            world.ledger.ok("api.search.role", response.status_code == 403, (role, other, response.status_code))
            _scan_json(world, "api.search.role", role, response, question)
        as_role = rng.choice(READER_ROLES)
        response = world.get("admin", "/v1/search", params={"q": question, "role": as_role, "k": 50})
        body = response.json()
        world.ledger.ok("api.search.role", body["role"] == as_role, (as_role, body.get("role")))
        _scan_json(world, "api.search.role", as_role, response, question)
        for hit in body["results"]:
            world.ledger.ok("api.search.role", world.may_read(as_role, world.key(hit["document_id"])), (as_role, hit))
    world.assert_no_new_leaks(before)


def test_chat_json_and_events_per_role(world: ApiWorld) -> None:
    before = len(world.ledger.leaks)
    rng = random.Random(f"{SEED}-chat")
    visible: Counter = Counter()
    for role in ROLES:
        for question in questions_for(world, role, rng, n_plain=2, n_targeted=2):
            response = world.post(role, "/v1/chat", json={"question": question})
            assert response.status_code == 200, response.text
            _scan_json(world, "api.chat", role, response, question)
            _sources(world, "api.chat", role, response.json()["sources"], question)
            visible["json"] += any(m in response.json()["text"] for m in world.readable_markers(role))

            stream = world.post(role, "/v1/chat", json={"question": question}, headers={"Accept": "text/event-stream"})
            world.scan("api.chat.sse", role, stream.text, question, question)
            events = sse_events(stream.text)
            world.ids("api.ids", role, [data for _, data in events], "api.chat.sse")
            world.ledger.ok("api.chat.sse", events and events[-1][0] == "done", (role, [n for n, _ in events][-3:]))
            _sources(world, "api.chat.sse", role, events[-1][1]["sources"], question)
            visible["sse"] += any(m in events[-1][1]["text"] for m in world.readable_markers(role))
    for kind in ("json", "sse"):
        world.ledger.ok("api.markers.visible", visible[kind] > 0, ("chat", kind))
    world.assert_no_new_leaks(before)


def test_collections_and_restricted_questions_per_role(world: ApiWorld) -> None:
    """Collections of random documents: each role lists only those holding a document it reads,
    counted over those alone; a question restricted to a collection or a document gets sources
    from that scope and the role's documents only; a collection or document the role cannot
    read is the same 404 (byte for byte) as a made-up id, for the chat and the search alike."""
    before = len(world.ledger.leaks)
    rng = random.Random(f"{SEED}-collections")
    made = build_collections(world, rng)
    question = "Risk degerlendirmesi ve yillik izin ne zaman?"
    visible = 0
    try:
        for role in ROLES:
            response = world.get(role, "/v1/collections")
            _scan_json(world, "api.collections", role, response)
            listed = {c["id"]: c["documents"] for c in response.json()["collections"]}
            usable = {pid: sum(world.may_read(role, key) for key in members) for pid, members in made.items()}
            expected = {pid: n for pid, n in usable.items() if n or role == "admin"}
            world.ledger.ok("api.collections", listed == expected, (role, listed, expected))
            missing = {kind: world.post(role, "/v1/chat", json={"question": question, kind: nobodys()})
                       for kind in ("collection", "document")}
            for pid, members in made.items():
                response = world.post(role, "/v1/chat", json={"question": question, "collection": pid})
                if pid not in expected:
                    same = (response.status_code, response.content) == (404, missing["collection"].content)
                    world.ledger.ok("api.chat.scope", same, (role, pid, response.status_code))
                    continue
                _scan_json(world, "api.chat.scope", role, response, question)
                for source in response.json()["sources"]:
                    key = world.key(source["document_id"])
                    world.ledger.ok("api.chat.scope", key in members and world.may_read(role, key), (role, pid, key))
                visible += bool(response.json()["sources"])
            for key in rng.sample(sorted(world.markers), 4):
                params = {"q": question, "k": 50, "document": world.public[key]}
                search = world.get(role, "/v1/search", params=params)
                if not world.may_read(role, key):
                    unknown = world.get(role, "/v1/search", params={**params, "document": nobodys()})
                    world.ledger.ok("api.search.scope", (search.status_code, search.content) == (
                        404, unknown.content), (role, key, search.status_code))
                    continue
                _scan_json(world, "api.search.scope", role, search, question)
                keys = {world.key(hit["document_id"]) for hit in search.json()["results"]}
                world.ledger.ok("api.search.scope", keys == {key}, (role, key, keys))
        both = world.post("isg", "/v1/chat", json={"question": question, "collection": next(iter(made)),
                                                   "document": world.public[next(iter(world.markers))]})
        assert both.status_code == 422 and both.json()["error"]["code"] == "scope_conflict"
        assert "ikisiyle birden değil" in both.json()["error"]["message_tr"]
    finally:
        for pid in made:
            delete_collection(world.db, pid)
    world.ledger.ok("api.markers.visible", visible > 0, ("chat", "scope"))
    world.assert_no_new_leaks(before)


def test_roles_lists_only_the_callers_own_roles(world: ApiWorld) -> None:
    """GET /v1/roles: each role's user gets their own role alone, the admin every role; nothing
    in it names a document."""
    before = len(world.ledger.leaks)
    every = set(ROLES)
    for role in ROLES:
        response = world.get(role, "/v1/roles")
        _scan_json(world, "api.roles", role, response)
        listed = {r["name"] for r in response.json()["roles"]}
        world.ledger.ok("api.roles", listed >= every if role == "admin" else listed == {role}, (role, listed))
    world.assert_no_new_leaks(before)


def test_feedback_only_on_ones_own_questions(world: ApiWorld) -> None:
    before = len(world.ledger.leaks)
    asked = {role: world.post(role, "/v1/chat", json={"question": "Yangin tatbikati ne siklikla yapilir?"}).json()
             for role in ROLES}
    missing = nobodys()
    with world.db.connection() as conn:
        keys = dict(conn.execute("SELECT public_id::text, id FROM questions").fetchall())
    for role in ROLES:
        nobody = world.post(role, f"/v1/questions/{missing}/feedback", json={"value": 1})
        for owner, answer in asked.items():
            by_key = world.post(role, f"/v1/questions/{keys[answer['question_id']]}/feedback", json={"value": -1})
            world.ledger.ok("api.feedback", by_key.status_code == 404 and by_key.content == nobody.content,
                            (role, owner, "by key", by_key.status_code))
            response = world.post(role, f"/v1/questions/{answer['question_id']}/feedback", json={"value": -1})
            if owner == role:
                world.ledger.ok("api.feedback", response.status_code == 200, (role, response.status_code))
            else:
                world.ledger.ok("api.feedback", response.status_code == 404 and response.content == nobody.content,
                                (role, owner, response.status_code))
            _scan_json(world, "api.feedback", role, response)
    with world.db.connection() as conn:
        rated = dict(conn.execute("SELECT username, count(*) FROM questions WHERE feedback = -1 GROUP BY 1").fetchall())
    world.ledger.ok("api.feedback", rated == {f"api-{role}": 1 for role in ROLES}, rated)
    world.assert_no_new_leaks(before)


# ----------------------------------------------------------------------------- conversations


MAX_LIST = 200  # ragcore.conversations.MAX_LIST_LIMIT: every conversation of a role in this module
CONVERSATION_CALLS = [("GET", "/v1/conversations/{}", None), ("GET", "/v1/conversations/{}/export?format=md", None),
                      ("PATCH", "/v1/conversations/{}", {"title": "Başkasının"}), ("DELETE", "/v1/conversations/{}", None)]


def _without(text: str, typed: list[str]) -> str:
    """`text` without what the user typed (their questions, the title made of the first): echoing
    what a user typed reveals nothing."""
    for question in sorted(typed, key=len, reverse=True):
        text = text.replace(question, "")
    return text


def _converse(world: ApiWorld, role: str, rng: random.Random) -> tuple[str, list[str]]:
    """A conversation of three turns (a question, a follow-up, a question naming forbidden
    documents), each answer scanned; (its id, the questions typed)."""
    plain, targeted = questions_for(world, role, rng, n_plain=1, n_targeted=1)
    typed, conversation = [], None
    for question in (plain, "Peki bunu kim yapar?", targeted):
        body = {"question": question} | ({"conversation_id": conversation} if conversation else {})
        response = world.post(role, "/v1/chat", json=body)
        answer = response.json()
        typed.append(question)
        world.ledger.ok("api.conversations.chat", response.status_code == 200 and answer["turn"] == len(typed)
                        and (conversation is None or answer["conversation_id"] == conversation), (role, answer.get("turn")))
        conversation = answer["conversation_id"]
        world.scan("api.conversations.chat", role, _without(response.text, typed), question)
        world.ids("api.ids", role, answer, "api.conversations.chat")
        _sources(world, "api.conversations.chat", role, answer["sources"], question)
    return conversation, typed


def test_conversations_are_their_owners_alone(world: ApiWorld) -> None:
    """Every role's conversation — listed, opened, exported — shows nothing the role may not read
    (what the user typed aside); every other caller, an admin included, gets for it the same 404
    bytes as for an id nobody has, on every endpoint and on /v1/chat, and changes nothing."""
    before = len(world.ledger.leaks)
    rng = random.Random(f"{SEED}-conversations")
    owned = {role: _converse(world, role, rng) for role in ROLES}
    missing = nobodys()
    others = {role: {c for r, (c, _) in owned.items() if r != role} for role in ROLES}
    for role in ROLES:
        conversation, typed = owned[role]
        listed = world.get(role, f"/v1/conversations?limit={MAX_LIST}").json()["conversations"]
        ids = [c["id"] for c in listed]
        world.ledger.ok("api.conversations", conversation in ids and not others[role] & set(ids), (role, ids))
        # Every conversation the role has (the earlier chat tests made some too), opened and exported.
        for listed_one in listed:
            opened = world.get(role, f"/v1/conversations/{listed_one['id']}")
            turns = opened.json()["turns"]
            asked = [t["question"] for t in turns]
            world.ledger.ok("api.conversations", listed_one["title"] == asked[0][:120] and opened.status_code == 200,
                            (role, listed_one["title"]))
            exported = world.get(role, f"/v1/conversations/{listed_one['id']}/export?format=md")
            for path, response in (("get", opened), ("export", exported)):
                world.scan("api.conversations", role, _without(response.text, asked), (path, listed_one["id"]))
            world.ids("api.ids", role, opened.json(), "api.conversations")
            for turn in turns:
                for citation in turn["citations"]:
                    world.ledger.ok("api.conversations", world.may_read(role, world.key(citation["document_id"])),
                                    (role, citation))
        mine = world.get(role, f"/v1/conversations/{conversation}").json()
        world.ledger.ok("api.conversations", [t["question"] for t in mine["turns"]] == typed, role)
        for method, url, body in CONVERSATION_CALLS:
            nobody = world.client.request(method, url.format(missing), json=body, headers=bearer(world.secrets[role]))
            for other, (theirs, _) in owned.items():
                if other == role:
                    continue
                response = world.client.request(method, url.format(theirs), json=body,
                                                headers=bearer(world.secrets[role]))
                world.ledger.ok("api.conversations.others",
                                response.status_code == 404 and response.content == nobody.content,
                                (role, other, method, url, response.status_code))
        nobody = world.post(role, "/v1/chat", json={"question": "Peki bunu kim yapar?", "conversation_id": missing})
        for other, (theirs, _) in owned.items():
            if other != role:
                response = world.post(role, "/v1/chat", json={"question": "Peki bunu kim yapar?",
                                                             "conversation_id": theirs})
                world.ledger.ok("api.conversations.others", response.content == nobody.content
                                and response.status_code == 404, (role, other, "chat", response.status_code))
    for role, (conversation, typed) in owned.items():  # nobody else changed or deleted anything
        opened = world.get(role, f"/v1/conversations/{conversation}").json()
        world.ledger.ok("api.conversations.others", opened["turn_count"] == len(typed) and opened["title"] == typed[0],
                        (role, opened.get("turn_count"), opened.get("title")))
    world.assert_no_new_leaks(before)


def test_a_role_change_hides_the_history_the_new_role_cannot_read(world: ApiWorld) -> None:
    """A conversation reopened, exported or continued after its owner's role changed shows nothing
    of the documents the new role may not read (the user's own words aside)."""
    before = len(world.ledger.leaks)
    username = "api-uretim"
    conversation, typed = _converse(world, "uretim", random.Random(f"{SEED}-history"))
    hidden = 0
    try:
        for new_role in ("ik", "isg", "personel"):
            users.set_role(world.db, username, new_role)
            opened = world.get("uretim", f"/v1/conversations/{conversation}")
            exported = world.get("uretim", f"/v1/conversations/{conversation}/export?format=md")
            follow = world.post("uretim", "/v1/chat", json={"question": "Peki bunu kim yapar?",
                                                            "conversation_id": conversation})
            typed.append("Peki bunu kim yapar?")
            for response in (opened, exported, follow):
                world.scan("api.conversations.history", new_role, _without(response.text, typed), new_role)
            for turn in opened.json()["turns"]:
                hidden += turn["hidden"]
                for citation in turn["citations"]:
                    world.ledger.ok("api.conversations.history",
                                    world.may_read(new_role, world.key(citation["document_id"])), (new_role, citation))
    finally:
        users.set_role(world.db, username, "uretim")
    world.ledger.ok("api.conversations.history", hidden > 0, "no role change hid anything: the check saw nothing")
    world.assert_no_new_leaks(before)


# ----------------------------------------------------------------------------- admin endpoints


def test_upload_job_and_delete_refuse_every_other_role(world: ApiWorld) -> None:
    before = len(world.ledger.leaks)
    job = world.post("admin", "/v1/documents", data={"roles": "isg"},
                     files={"file": ("yeni.pdf", pdfs.law_pdf(), "application/pdf")})
    assert job.status_code == 202, job.text
    job_id = job.json()["job_id"]
    job_key = jobs.find_job(world.db, job_id).id
    for role in READER_ROLES:
        response = world.post(role, "/v1/documents", data={"roles": role},
                              files={"file": ("benim.pdf", pdfs.text_pdf([f"{role} belgesi"]), "application/pdf")})
        world.ledger.ok("api.upload", response.status_code == 403, (role, response.status_code))
        for probe in (job_id, job_key, nobodys()):
            response = world.get(role, f"/v1/jobs/{probe}")
            world.ledger.ok("api.jobs", response.status_code == 403, (role, probe, response.status_code))
        for doc_id in [*world.public.values(), *world.readable, nobodys()]:
            response = world.client.delete(f"/v1/documents/{doc_id}", headers=bearer(world.secrets[role]))
            world.ledger.ok("api.delete", response.status_code == 403, (role, doc_id, response.status_code))
            _scan_json(world, "api.delete", role, response)
    world.ledger.ok("api.jobs", world.get("admin", f"/v1/jobs/{job_id}").status_code == 200, "admin reads the job")
    missing_job = world.get("admin", f"/v1/jobs/{nobodys()}")
    world.ledger.ok("api.jobs", missing_job.status_code == 404, "an unknown job")
    world.ledger.ok("api.jobs", world.get("admin", f"/v1/jobs/{job_key}").content == missing_job.content,
                    "a job's database key is no id")
    _scan_json(world, "api.jobs", "admin", world.get("admin", f"/v1/jobs/{job_id}"))
    by_key = world.client.delete(f"/v1/documents/{min(world.readable)}", headers=bearer(world.secrets["admin"]))
    world.ledger.ok("api.delete", by_key.status_code == 404, ("a document's database key deletes nothing",
                                                              by_key.status_code))
    world.ledger.ok("api.upload", len(jobs.list_jobs(world.db, limit=100)) == 1, "a refused upload queued a job")
    world.ledger.ok("api.delete", all(get_document(world.db, d, "admin") for d in world.readable), "a document went")
    jobs.cancel(world.db, world.settings, job_key)
    world.assert_no_new_leaks(before)


def test_the_audit_trail_is_the_admins_and_refuses_every_other_role(world: ApiWorld) -> None:
    """Every other role gets 403 on both audit endpoints, whatever the filters, and not one asked
    question, user name or marker; the admin gets every role's question (the positive control)."""
    before = len(world.ledger.leaks)
    rng = random.Random(f"{SEED}-audit")
    asked = []
    for role in ROLES:
        question = f"{questions_for(world, role, rng, n_plain=1, n_targeted=0)[0]} ({role})"
        assert world.post(role, "/v1/chat", json={"question": question}).status_code == 200
        asked.append(question)
    some_document = next(iter(world.public.values()))
    for role in READER_ROLES:
        for path in ("/v1/audit/questions", "/v1/audit/questions.csv"):
            for params in ({}, {"page_size": 200}, {"document": some_document}, {"document": nobodys()},
                           {"role": "admin"}, {"since": "2000-01-01"}):
                response = world.get(role, path, params=params)
                world.ledger.ok("api.audit", response.status_code == 403, (role, path, params, response.status_code))
                world.scan("api.audit", role, response.text, (path, params))
                world.ledger.ok("api.audit", not any(q in response.text for q in asked), (role, path, params))
    listing = world.get("admin", "/v1/audit/questions", params={"page_size": 200})
    world.ledger.ok("api.audit", listing.status_code == 200, ("admin", listing.status_code))
    logged = {q["question"] for q in listing.json()["questions"]}
    world.ledger.ok("api.audit", set(asked) <= logged, ("admin sees every role's question", set(asked) - logged))
    world.ids("api.ids", "admin", listing.json(), "api.audit")
    exported = world.get("admin", "/v1/audit/questions.csv").content.decode("utf-8")
    world.ledger.ok("api.audit", all(q in exported for q in asked), "admin's CSV holds every role's question")
    world.assert_no_new_leaks(before)


# ----------------------------------------------------------------------------- changes apply to the next request


def test_role_change_deactivation_and_revocation_apply_to_the_next_request(world: ApiWorld) -> None:
    before = len(world.ledger.leaks)
    username = "api-uretim"
    question = "Yangin tatbikati ne siklikla yapilir ve risk analizi ne zaman yenilenir?"
    try:
        for new_role in ("ik", "isg", "personel", "uretim"):
            users.set_role(world.db, username, new_role)
            listed = {world.key(d["id"]) for d in world.get("uretim", "/v1/documents").json()["documents"]}
            world.ledger.ok("api.role-change", listed == {d for d in world.readable if world.may_read(new_role, d)},
                            (new_role, listed))
            answer = world.post("uretim", "/v1/chat", json={"question": question})
            _scan_json(world, "api.role-change", new_role, answer, question)
            _sources(world, "api.role-change", new_role, answer.json()["sources"], question)
            found = world.get("uretim", "/v1/search", params={"q": question, "k": 50})
            world.ledger.ok("api.role-change", found.json()["role"] == new_role, (new_role, found.json()["role"]))
            _scan_json(world, "api.role-change", new_role, found, question)
        spare = create_token(world.db, "api-personel", name="yedek").secret
        revoke_token(world.db, list_tokens(world.db, "api-personel")[0].id)
        for url in ("/v1/documents", f"/v1/documents/{world.public[min(world.readable)]}", "/v1/search?q=risk"):
            response = world.client.get(url, headers=bearer(spare))
            world.ledger.ok("api.revocation", response.status_code == 401, (url, response.status_code))
        users.set_active(world.db, username, False)
        calls = [("GET", "/v1/documents", None), ("GET", f"/v1/documents/{world.public[min(world.readable)]}/file", None),
                 ("GET", "/v1/search?q=risk", None), ("POST", "/v1/chat", {"question": question})]
        for method, url, body in calls:
            response = world.client.request(method, url, json=body, headers=bearer(world.secrets["uretim"]))
            world.ledger.ok("api.deactivation", response.status_code == 401, (url, response.status_code))
            _scan_json(world, "api.deactivation", "uretim", response)
    finally:
        users.set_active(world.db, username, True)
        users.set_role(world.db, username, "uretim")
        world.secrets["uretim"] = create_token(world.db, username).secret
    world.assert_no_new_leaks(before)


# ----------------------------------------------------------------------------- statistics


def _comparable(body: dict) -> dict:
    """A response without what differs between two identical requests (timings, the log id)."""
    return {k: v for k, v in body.items() if k not in ("timings", "retrieval_ms", "question_id", "conversation_id")}


def test_a_document_a_role_cannot_read_changes_nothing_it_gets(world: ApiWorld) -> None:
    """Ingest, then delete, a document only ik may read: isg's searches and answers over the API
    stay identical, every score and statistic included."""
    questions = ["Risk degerlendirmesi ne zaman yenilenir?", "Fazla calisma ucreti nasil odenir?",
                 "Yangin tatbikati ne siklikla yapilir?"]

    def snapshot() -> list[dict]:
        out = []
        for question in questions:
            for mode in MODES:
                out.append(_comparable(world.get("isg", "/v1/search", params={"q": question, "k": 20,
                                                                             "mode": mode}).json()))
            out.append(_comparable(world.post("isg", "/v1/chat", json={"question": question}).json()))
        return out

    baseline = snapshot()
    text = "\n".join(f"{sentence} GIZLI." for pair in TOPICS.values() for sentence in pair)
    extra = ingest_pdf(world.db, world.settings, world.embedder, pdfs.text_pdf([text, text]),
                       filename="yalniz-ik.pdf", roles=["ik"], title="Yalniz ik")
    try:
        with_extra = snapshot()
    finally:
        delete_document(world.db, world.settings, extra.document_id)
    after = snapshot()
    assert with_extra == baseline
    assert after == baseline
