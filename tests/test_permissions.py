"""Randomized permission suite: no source, prompt context or log entry ever carries a chunk of a
document the asking role may not read — across random role sets, every role and every mode.

Every sentence of a document ends with its marker (`BLG07X`), so whatever quotes or echoes a
chunk (the extractive answerer quotes sentences, the recording generator echoes its whole
context, the reader reads its windows) carries the marker; the suite checks that readable markers do show up, so the
checks for forbidden ones can fail."""

from __future__ import annotations

import json
import random

import pytest

from ragcore.access import create_role, delete_role, users
from ragcore.answer import AnswerService, ExtractiveGenerator
from ragcore.core import ANSWER_POLICIES, ROLES, Settings
from ragcore.documents import (
    Scope,
    create_collection,
    delete_collection,
    set_collection_members,
    set_document_roles,
)
from ragcore.reader import shipped_reader
from ragcore.retrieval import MODES, retrieve
from tests.retrieval_support import DocSpec, clean, insert_document, make_test_embedder

SEED = 20240607
TOPICS = {
    "risk": "İşveren risk değerlendirmesi yapar ve tedbirleri belirler. Risk analizi yılda bir yenilenir.",
    "izin": "Yıllık ücretli izin süresi on dört günden az olamaz. İzin talepleri yazılı yapılır.",
    "ucret": "Ücret en geç ayda bir ödenir. Fazla çalışma ücreti yüzde elli zamlı ödenir.",
    "makine": "Pres makinesinde koruyucu eldiven takılır. Makine bakımı vardiya sonunda yapılır.",
    "egitim": "Çalışanlara işe başlamadan önce iş güvenliği eğitimi verilir. Eğitim kayıtları saklanır.",
    "yangin": "Acil durum planı hazırlanır. Yangın tatbikatı yılda bir kez yapılır.",
}
QUESTIONS = [
    "Risk değerlendirmesi ne zaman yenilenir?", "Yıllık izin kaç gündür?", "Ücret ne zaman ödenir?",
    "Pres makinesinde ne takılır?", "İş güvenliği eğitimi ne zaman verilir?", "Yangın tatbikatı ne sıklıkla yapılır?",
    "Fazla çalışma ücreti nasıl hesaplanır?", "Makine bakımı ne zaman yapılır?", "Acil durum planı var mı?",
    "Şirket pikniği ne zaman?",
]
READER_ROLES = [r for r in ROLES if r != "admin"]
# Who asks: one user per role, and users holding two and three roles (issue 38), by reader key.
SEVERAL = {"isg+uretim": ("isg", "uretim"), "ik+isg+personel": ("ik", "isg", "personel")}
ASKERS = [*ROLES, *SEVERAL]


def marker(index: int) -> str:
    return f"BLG{index:02d}X"


def _marked(text: str, mark: str) -> str:
    """`text` with the marker inside every sentence, before its full stop."""
    return " ".join(f"{sentence.strip().rstrip('.')} {mark}." for sentence in text.split(". ") if sentence.strip())


@pytest.fixture(scope="module")
def embedder():
    return make_test_embedder()


@pytest.fixture(scope="module")
def world(session_db, embedder):
    """24 documents with random allowed_roles, chunks mixing topics; one user per role."""
    clean(session_db)
    rng = random.Random(SEED)
    readable: dict[int, set[str]] = {}
    markers: dict[int, str] = {}
    for index in range(24):
        roles = tuple(sorted(rng.sample(READER_ROLES, rng.randint(1, 3))))
        chunks = []
        for page in range(1, rng.randint(2, 5)):
            topic = rng.choice(list(TOPICS))
            text = f"Belge {index} bölüm {page} {marker(index)}. {_marked(TOPICS[topic], marker(index))}"
            chunks.append((text, page, f"Madde {page}"))
        doc_id = insert_document(session_db, embedder, DocSpec(f"belge-{index}", roles, tuple(chunks)))
        readable[doc_id] = set(roles)
        markers[doc_id] = marker(index)
    with session_db.connection() as conn:
        chunk_doc = dict(conn.execute("SELECT id, document_id FROM chunks").fetchall())
    people = {role: users.create_user(session_db, f"user-{role}", role, "parola-123") for role in ROLES}
    for key, held in SEVERAL.items():
        people[key] = users.create_user(session_db, f"user-{key.replace('+', '-')}", held, "parola-123")
    return session_db, readable, chunk_doc, people, markers


def _may_read(role: str, doc_id: int, readable: dict[int, set[str]]) -> bool:
    """`role`: one role, or a reader key of several (a user's roles joined by '+')."""
    return role == "admin" or bool(set(role.split("+")) & readable[doc_id])


@pytest.mark.parametrize("mode", MODES)
def test_search_never_returns_a_forbidden_chunk(world, embedder, mode: str) -> None:
    database, readable, chunk_doc, _, _ = world
    rng = random.Random(f"{SEED}-{mode}")
    for _ in range(30):
        role = rng.choice(ASKERS)
        question = rng.choice(QUESTIONS)
        k = rng.choice([1, 3, 5, 10, 50])
        for source in retrieve(database, embedder, question, role, k=k, mode=mode).sources:
            assert _may_read(role, source.document_id, readable), (role, question, source.document_id)
            assert chunk_doc[source.chunk_id] == source.document_id


def test_every_permitted_document_is_reachable(world, embedder) -> None:
    """The filter is not over-strict: with a large k each role, and each user with several roles,
    sees exactly its documents' chunks (for several roles: the union, both halves of it)."""
    database, readable, chunk_doc, _, _ = world
    for key, held in SEVERAL.items():  # each role brings documents of its own to the union
        for role in held:
            others = set(held) - {role}
            assert any(role in roles and not roles & others for roles in readable.values()), (key, role)
    for role in ASKERS:
        seen = {s.chunk_id for s in retrieve(database, embedder, "Belge bölüm", role, k=500, mode="dense").sources}
        expected = {cid for cid, doc in chunk_doc.items() if _may_read(role, doc, readable)}
        assert seen == expected


@pytest.mark.parametrize("mode", MODES)
def test_a_restricted_search_returns_the_scope_the_role_reads_and_nothing_else(world, embedder, mode: str) -> None:
    """Random collections and single documents as scopes: every source is in the scope and
    readable, and (dense, large k) every readable chunk of the scope is found — the restriction
    narrows to exactly scope ∩ role, for collections that hold forbidden documents too."""
    database, readable, chunk_doc, _, _ = world
    rng = random.Random(f"{SEED}-scopes-{mode}")
    keys = sorted(readable)
    scopes: list[tuple[Scope, set[int]]] = []
    made = []
    for index in range(3):
        members = set(rng.sample(keys, rng.randint(1, 8)))
        collection = create_collection(database, f"Kapsam {mode} {index}")
        set_collection_members(database, collection.public_id, members)
        made.append(collection.public_id)
        scopes.append((Scope(collection=collection.public_id), members))
    with database.connection() as conn:
        public = dict(conn.execute("SELECT id, public_id::text FROM documents").fetchall())
    scopes += [(Scope(document=public[key]), {key}) for key in rng.sample(keys, 2)]
    try:
        for scope, members in scopes:
            for role in ROLES:
                allowed = {cid for cid, doc in chunk_doc.items() if doc in members and _may_read(role, doc, readable)}
                sources = retrieve(database, embedder, rng.choice(QUESTIONS), role, k=50, mode=mode, windows=True,
                                   scope=scope).sources
                assert {s.chunk_id for s in sources} <= allowed, (role, scope)
                if mode == "dense":
                    assert {s.chunk_id for s in sources} == allowed, (role, scope)
    finally:
        for pid in made:
            delete_collection(database, pid)


class RecordingGenerator:
    """Records every prompt and answers by echoing its context, so the answer carries whatever
    the model saw (forbidden text in the prompt would reach the user the same way)."""

    kind = "recording"
    model = label = "recording"

    def __init__(self) -> None:
        self.contexts: list[tuple[list[dict], list]] = []

    def stream(self, messages, sources, question, **_):
        self.contexts.append((messages, list(sources)))
        yield "Bağlama göre: "
        yield messages[-1]["content"][-1500:]
        yield " [1]"


class RecordingReader:
    """The shipped reader model, recording every (question, passage) pair it is asked to score."""

    def __init__(self) -> None:
        self.inner = shipped_reader()
        self.config = self.inner.config
        self.fusion_weight = self.inner.fusion_weight
        self.passages: list[str] = []

    def predict(self, pairs):
        self.passages += [passage for _, passage in pairs]
        return self.inner.predict(pairs)


@pytest.mark.parametrize("policy", ANSWER_POLICIES)
@pytest.mark.parametrize("mode", MODES)
def test_answers_prompts_and_log_carry_only_permitted_chunks(world, embedder, mode: str, policy: str, pg_url,
                                                             tmp_path) -> None:
    database, readable, chunk_doc, people, markers = world
    settings = Settings(database_url=pg_url, data_dir=tmp_path, retrieval_mode=mode, refusal_threshold=0.0,
                        answer_policy=policy)
    generator = RecordingGenerator()
    reader = RecordingReader()
    service = AnswerService(database, settings, embedder, generator, reader=reader)  # type: ignore[arg-type]
    extractive = AnswerService(database, settings, embedder, ExtractiveGenerator(embedder), reader=reader)  # type: ignore[arg-type]
    forbidden_text = {role: {m for doc, m in markers.items() if not _may_read(role, doc, readable)} for role in ASKERS}
    allowed_text = {role: {m for doc, m in markers.items() if _may_read(role, doc, readable)} for role in ASKERS}
    shown_allowed = {"recording": 0, "extractive": 0}
    rng = random.Random(f"{SEED}-answers-{mode}")
    for index in range(12):
        role = rng.choice(ASKERS)
        question = rng.choice(QUESTIONS)
        before, read_before = len(generator.contexts), len(reader.passages)
        kind = "recording" if index % 2 else "extractive"
        answer = (service if kind == "recording" else extractive).ask(people[role], question)
        read = reader.passages[read_before:]
        # The reader read this question's candidates (none when retrieval found none) ...
        assert bool(read) == bool(answer.extra.get("reading", {}).get("chunk_ids")), (role, question)
        for passage in read:  # ... and only passages of documents the role may read
            assert not any(marker in passage for marker in forbidden_text[role]), (role, question, passage)
        shown_allowed[kind] += any(m in answer.text for m in allowed_text[role])
        for source in answer.sources:
            assert _may_read(role, source.document_id, readable)
        for messages, sources in generator.contexts[before:]:
            assert all(_may_read(role, s.document_id, readable) for s in sources)
            prompt = messages[1]["content"]
            assert not any(marker in prompt for marker in forbidden_text[role]), (role, question)
        for marker in forbidden_text[role]:
            assert marker not in answer.text
            assert not any(marker in mark for mark in answer.nearest), (role, question)  # the closest marks
    # So the reader's checks above can fail: it read under the policy that uses it.
    assert bool(reader.passages) == (policy == "reader")
    # The markers survive quoting and echoing, so the `not in answer.text` checks above can fail.
    assert shown_allowed["recording"] > 0, shown_allowed
    assert shown_allowed["extractive"] > 0, shown_allowed
    with database.connection() as conn:
        logged = conn.execute("SELECT role, sources FROM questions").fetchall()
    assert logged
    for role, sources in logged:
        for source in sources if isinstance(sources, list) else json.loads(sources):
            assert _may_read(role, source["document_id"], readable)
            assert chunk_doc[source["chunk_id"]] == source["document_id"]


def test_role_change_applies_to_the_next_question(world, embedder, pg_url, tmp_path) -> None:
    database, readable, _, people, _ = world
    settings = Settings(database_url=pg_url, data_dir=tmp_path, refusal_threshold=0.0)
    service = AnswerService(database, settings, embedder, RecordingGenerator())
    stale = people["uretim"]
    users.set_role(database, stale.username, "ik")
    try:
        answer = service.ask(stale, QUESTIONS[1])
        assert answer.extra["role"] == "ik"
        assert all(_may_read("ik", s.document_id, readable) for s in answer.sources)
    finally:
        users.set_role(database, stale.username, "uretim")


def test_a_second_role_applies_to_the_next_question(world, embedder, pg_url, tmp_path) -> None:
    """Given ik besides uretim, the user's next question reads both (their set's reader, made
    then); taking it back, the next question reads uretim's documents alone again."""
    database, readable, chunk_doc, people, _ = world
    settings = Settings(database_url=pg_url, data_dir=tmp_path, refusal_threshold=0.0)
    service = AnswerService(database, settings, embedder, RecordingGenerator())
    stale = people["uretim"]
    users.set_roles(database, stale.username, ["uretim", "ik"])
    try:
        answer = service.ask(stale, "Belge bölüm")
        assert answer.extra["role"] == "ik+uretim"
        assert all(_may_read("ik+uretim", s.document_id, readable) for s in answer.sources)
        seen = {s.chunk_id for s in retrieve(database, embedder, "Belge bölüm", "ik+uretim", k=500, mode="dense").sources}
        assert seen == {cid for cid, doc in chunk_doc.items() if _may_read("ik+uretim", doc, readable)}
    finally:
        users.set_roles(database, stale.username, ["uretim"])
    answer = service.ask(stale, "Belge bölüm")
    assert answer.extra["role"] == "uretim"
    assert all(_may_read("uretim", s.document_id, readable) for s in answer.sources)
    with database.connection() as conn:  # nobody holds {ik, uretim} any more: its reader is gone
        assert conn.execute("SELECT count(*) FROM role_bits WHERE role = 'ik+uretim'").fetchone()[0] == 0


def test_a_role_deleted_mid_way_loses_access_at_the_next_question(world, embedder, pg_url, tmp_path) -> None:
    """A role made at run time ('kalite'), held with personel and given one document: the user
    reads it; the role is deleted; the user's next question does not, and the document keeps its
    other roles (one left with none becomes admin-only: tests/test_role_statistics.py)."""
    database, readable, chunk_doc, _, markers = world
    settings = Settings(database_url=pg_url, data_dir=tmp_path, refusal_threshold=0.0)
    service = AnswerService(database, settings, embedder, RecordingGenerator())
    doc = next(d for d, roles in readable.items() if "personel" not in roles)
    roles_before = sorted(readable[doc])
    create_role(database, "kalite", "Kalite", "Kalite birimi")
    user = users.create_user(database, "user-kalite", ["kalite", "personel"], "parola-123")
    set_document_roles(database, doc, [*roles_before, "kalite"])
    try:
        question = f"{markers[doc]} Belge bölüm"
        reach = {s.document_id for s in retrieve(database, embedder, question, user.reader, k=500, mode="dense").sources}
        assert doc in reach
        delete_role(database, "kalite")
        answer = service.ask(user, question)
        assert answer.extra["role"] == "personel"
        assert all(_may_read("personel", s.document_id, readable) for s in answer.sources)
        assert markers[doc] not in answer.text.replace(question, "")
        with database.connection() as conn:
            assert sorted(conn.execute("SELECT allowed_roles FROM documents WHERE id = %s", (doc,)).fetchone()[0]) \
                == roles_before
    finally:
        set_document_roles(database, doc, roles_before)
