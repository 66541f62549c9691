"""The marked world the permission suites test, and the ledger that counts their checks.

tests/test_permission_paths.py (every in-process path, the CLI and the app pages) and
tests/test_api_permissions.py (every REST endpoint) test the same world: small PDFs and Word
files (every other document a .docx, its pages as headed sections) with random `allowed_roles`,
ingested through the real `ragcore.documents.ingest_file`, where every
sentence, and so every chunk, every sentence window and every quoted passage, carries its document's marker
(`KOD07Q`) and every title does too, and one user per role. An unreadable document's marker in
anything a role gets back is a leak; `build_world` makes that world and checks the
preconditions the scans rely on (every role has something to read and something to miss,
every chunk carries its document's marker).

Every check is counted in a `Ledger`; each suite writes its ledger's summary ("N checks,
0 leaks") to its own file under `artifacts/` when it finishes.

The world knows its documents by database key; what the API and the CLI print is each
document's public id (`World.public`, `World.key` translates back), and `World.ids` checks
that every id in a response is one: a random UUID, never a sequential key.
"""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ragcore.access import create_user
from ragcore.core import ROLES, Settings
from ragcore.documents import create_collection, ingest_file, set_collection_members
from tests import docxs, pdfs

PASSWORD = "parola-1234"
READER_ROLES = [r for r in ROLES if r != "admin"]
# Users holding several roles (issue 38), by reader key (their roles joined by '+'): each reads
# the union of what its roles may read. The suites ask as WORLD_READERS: every role and these.
SEVERAL = {"isg+uretim": ("isg", "uretim"), "ik+isg+personel": ("ik", "isg", "personel")}
WORLD_READERS = [*ROLES, *SEVERAL]

# ASCII only: tests/pdfs.py writes with the PDF core fonts.
TOPICS = {
    "risk": ("Isveren risk degerlendirmesi yapar", "Risk analizi yilda bir yenilenir"),
    "izin": ("Yillik ucretli izin suresi on dort gunden az olamaz", "Izin talepleri yazili yapilir"),
    "ucret": ("Ucret en gec ayda bir odenir", "Fazla calisma ucreti yuzde elli zamli odenir"),
    "makine": ("Pres makinesinde koruyucu eldiven takilir", "Makine bakimi vardiya sonunda yapilir"),
    "egitim": ("Calisanlara ise baslamadan once is guvenligi egitimi verilir", "Egitim kayitlari saklanir"),
    "yangin": ("Acil durum plani hazirlanir", "Yangin tatbikati yilda bir kez yapilir"),
}
QUESTIONS = [
    "Risk degerlendirmesi ne zaman yenilenir?", "Yıllık izin kaç gündür?", "Ucret ne zaman odenir?",
    "Pres makinesinde ne takilir?", "Is guvenligi egitimi ne zaman verilir?", "Yangin tatbikati ne siklikla yapilir?",
    "Fazla calisma ucreti nasil hesaplanir?", "Makine bakimi ne zaman yapilir?", "Acil durum plani var mi?",
    "Şirket pikniği ne zaman?",
]


def marker(index: int) -> str:
    return f"KOD{index:02d}Q"


def marked_docx(pages: list[str]) -> bytes:
    """The marked pages as a Word file: each page's first line a heading, its sentences paragraphs."""
    blocks = []
    for page in pages:
        heading, *sentences = page.split("\n")
        blocks += [("H1", heading), *(("P", sentence) for sentence in sentences)]
    return docxs.build(blocks)


def is_word(index: int) -> bool:
    """Every other document of the world is a .docx (the first, third, …: with both suites'
    seeds this gives every role a Word file to read and one to miss, which `build_world` checks)."""
    return index % 2 == 0


def marked_page(rng: random.Random, mark: str, number: int) -> str:
    """One page of a marked document: its heading and two random topics, every sentence marked."""
    lines = [f"{mark} SAYFA {number}"]
    for topic in rng.sample(list(TOPICS), 2):
        lines += [f"{sentence} {mark}." for sentence in TOPICS[topic]]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- ledger and world


@dataclass
class Ledger:
    """Counts every permission check; a failed check is a leak (or, for `complete`, over-filtering)."""

    suite: str
    seed: int
    documents: int
    expected_paths: set[str]  # every path family a full run of the suite checks
    checks: Counter = field(default_factory=Counter)
    leaks: list[str] = field(default_factory=list)

    def ok(self, path: str, condition: bool, detail: object) -> None:
        self.checks[path] += 1
        if not condition:
            self.leaks.append(f"{path}: {detail}")

    def summary(self) -> dict:
        return {
            "suite": self.suite,
            "seed": self.seed,
            "documents": self.documents,
            "roles": list(ROLES),
            "complete": sorted(self.expected_paths - set(self.checks)) == [],  # False after a partial run
            "checks": sum(self.checks.values()),
            "leaks": len(self.leaks),
            "checks_by_path": dict(sorted(self.checks.items())),
            "leak_details": self.leaks[:50],
        }

    def write(self, path: Path) -> dict:
        """Write the summary to `path` (JSON) and return it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        summary = self.summary()
        path.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        return summary


@dataclass
class World:
    db: object
    settings: Settings
    embedder: object
    ledger: Ledger
    readable: dict[int, set[str]]  # document id -> roles (admin implied)
    markers: dict[int, str]  # document id -> marker
    titles: dict[int, str]
    data: dict[int, bytes]
    chunk_doc: dict[int, int]
    people: dict[str, object]
    public: dict[int, str] = field(default_factory=dict)  # document key -> public id

    def may_read(self, role: str, doc_id: int | None) -> bool:
        """False for a document the world does not have (an id a response made up is a failed check).
        `role`: one role, or a reader key of several (`SEVERAL`): any of them may read it."""
        if doc_id not in self.readable:
            return False
        return role == "admin" or bool(set(role.split("+")) & self.readable[doc_id])

    def key(self, public_id: object) -> int | None:
        """The database key of the document a response names by `public_id`; None for any other value."""
        return next((key for key, pid in self.public.items() if pid == public_id), None)

    def ids(self, path: str, role: str, body: object, context: object = "") -> None:
        """One check per id in a JSON body (every `id` and `…_id` field, at any depth): a public id
        (a version-4 UUID string) or null, never a number, so no sequential key reaches the caller."""
        for name, value in id_fields(body):
            self.ledger.ok(path, value is None or is_public_id(value), (role, name, value, context))

    def forbidden(self, role: str) -> list[str]:
        return [m for d, m in self.markers.items() if not self.may_read(role, d)]

    def readable_markers(self, role: str) -> list[str]:
        return [m for d, m in self.markers.items() if self.may_read(role, d)]

    def scan(self, path: str, role: str, text: str, context: object = "", question: str | None = None) -> None:
        """One check: no marker of a document `role` may not read appears in `text`.

        The user's own question (which may name a forbidden marker on purpose) is cut out first:
        echoing what the user typed reveals nothing."""
        text = text or ""
        if question:
            text = text.replace(question, "")
        found = [m for m in self.forbidden(role) if m in text]
        self.ledger.ok(path, not found, (role, found, context))

    def source(self, path: str, role: str, doc_id: int, chunk_id: int | None = None, text: str | None = None,
               context: object = "") -> None:
        """A returned chunk/document: its document is readable, the chunk belongs to it, its text is clean."""
        self.ledger.ok(path, self.may_read(role, doc_id), (role, doc_id, context))
        if chunk_id is not None:
            self.ledger.ok(path, self.chunk_doc.get(chunk_id) == doc_id, (role, chunk_id, doc_id))
        if text is not None:
            self.scan(path, role, text, context)

    def assert_no_new_leaks(self, before: int) -> None:
        assert self.ledger.leaks[before:] == [], self.ledger.leaks[before:][:10]


def is_public_id(value: object) -> bool:
    """A random UUID (version 4) as text: what `gen_random_uuid()` makes."""
    if not isinstance(value, str):
        return False
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return False
    return parsed.version == 4 and str(parsed) == value


def id_fields(body: object, name: str = "") -> list[tuple[str, object]]:
    if isinstance(body, dict):
        return [pair for key, value in body.items() for pair in
                ([(key, value)] if (key == "id" or key.endswith("_id")) and not isinstance(value, dict | list)
                 else id_fields(value, key))]
    if isinstance(body, list):
        return [pair for item in body for pair in id_fields(item, name)]
    return []


def build_world(db, settings: Settings, embedder, ledger: Ledger, *, seed: int, n_docs: int, filename: str,
                user_prefix: str, uploaded_by: str | None = None, world_type: type[World] = World) -> World:
    """Ingest `n_docs` marked two-page documents (PDFs, and .docx for `is_word` indices) with
    roles drawn from `seed`, and create one user per role.

    `filename` is a format string over `index` and `mark` ("belge-{index:02d}.pdf"; a Word file's
    name ends in .docx instead); the users are `{user_prefix}-{role}` with PASSWORD. The database
    must hold no other document."""
    rng = random.Random(seed)
    readable, markers, titles, data, public = {}, {}, {}, {}, {}
    for index in range(n_docs):
        roles = sorted(rng.sample(READER_ROLES, rng.randint(1, 3)))
        mark = marker(index)
        pages = [marked_page(rng, mark, page) for page in (1, 2)]
        name = filename.format(index=index, mark=mark)
        if is_word(index):
            pdf, name = marked_docx(pages), str(Path(name).with_suffix(".docx"))
        else:
            pdf = pdfs.text_pdf(pages)
        result = ingest_file(db, settings, embedder, pdf, filename=name,
                             roles=roles, title=f"Yonerge {mark}", uploaded_by=uploaded_by)
        readable[result.document_id] = set(roles)
        markers[result.document_id] = mark
        titles[result.document_id] = result.title
        data[result.document_id] = pdf
        public[result.document_id] = result.public_id
    for role in READER_ROLES:  # the seed gives every role something to read and something to miss, Word files too
        assert any(role in r for r in readable.values()) and any(role not in r for r in readable.values())
        words = [r for i, r in enumerate(readable.values()) if is_word(i)]
        assert any(role in r for r in words) and any(role not in r for r in words), role
    with db.connection() as conn:
        chunk_doc = dict(conn.execute("SELECT id, document_id FROM chunks").fetchall())
        unmarked = conn.execute("SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id "
                                "WHERE position(substr(d.title, 9) IN c.text) = 0").fetchone()[0]
        windowless, unsynced = conn.execute(
            "SELECT count(*) FILTER (WHERE NOT EXISTS (SELECT FROM chunk_windows w WHERE w.chunk_id = c.id)), "
            "count(*) FILTER (WHERE EXISTS (SELECT FROM chunk_windows w WHERE w.chunk_id = c.id "
            "AND w.roles_mask <> c.roles_mask)) FROM chunks c").fetchone()
    assert unmarked == 0  # every chunk carries its document's marker, so text scans see every chunk
    # and has sentence windows with its roles, which the dense leg reads with DENSE_WINDOWS on
    # (the suites' default), so every path is checked over the window table too
    assert (windowless, unsynced) == (0, 0)
    people = {role: create_user(db, f"{user_prefix}-{role}", role, PASSWORD) for role in ROLES}
    for key, held in SEVERAL.items():
        people[key] = create_user(db, f"{user_prefix}-{key.replace('+', '-')}", held, PASSWORD)
    return world_type(db, settings, embedder, ledger, readable, markers, titles, data, chunk_doc, people, public)


def build_collections(world: World, rng: random.Random, n: int = 4) -> dict[str, set[int]]:
    """`n` collections of random documents of the world (public id -> document keys): some a
    role reads in part, and one of documents a reader role cannot read at all (so that, to it,
    the collection is the same as a missing one), checked here."""
    made: dict[str, set[int]] = {}
    keys = sorted(world.markers)
    blind = rng.choice(READER_ROLES)
    unreadable = [key for key in keys if not world.may_read(blind, key)]
    for index in range(n):
        members = set(rng.sample(unreadable, min(2, len(unreadable)))) if index == 0 else set(
            rng.sample(keys, rng.randint(2, max(2, len(keys) // 2))))
        made_one = create_collection(world.db, f"Koleksiyon {index}")
        set_collection_members(world.db, made_one.public_id, members)
        made[made_one.public_id] = members
    assert any(not any(world.may_read(blind, key) for key in members) for members in made.values())
    return made


def questions_for(world: World, role: str, rng: random.Random, n_plain: int = 3, n_targeted: int = 2) -> list[str]:
    """Ordinary questions plus questions naming documents the role may not read."""
    chosen = rng.sample(QUESTIONS, n_plain)
    forbidden = world.forbidden(role) or list(world.markers.values())
    for mark in rng.sample(forbidden, min(n_targeted, len(forbidden))):
        chosen.append(f"{mark} belgesinde risk degerlendirmesi ve izin hakkinda ne yaziyor?")
    return chosen
