"""Nothing a role sees depends on documents it cannot read (issue 11.1), and the per-role
statistics stay exact under every write.

Property: for a fixed set of questions, storing a document a role cannot read, moving that
document (or an existing one) between other roles, and deleting it again leave every field of
the role's `retrieve` results (ids, order, scores, leg scores, evidence) in every mode, with and
without sentence windows, and of its `AnswerService` answers (text, status, sources, citations,
evidence), identical bit for bit. The documents have sentence windows (the secret one's too), so
the window table is held to the same property.
The roles that can read the document do see it change (so the comparison can fail).
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
from collections import Counter

import numpy as np
import psycopg
import pytest

from ragcore.access import RoleError, create_role, create_user, delete_role, get_user, set_roles
from ragcore.answer import AnswerService, ExtractiveGenerator
from ragcore.core import ROLES, Chunk, Settings, lexical_tokens
from ragcore.documents import (
    delete_document,
    document_windows,
    lexical_texts,
    list_documents,
    set_document_roles,
    store_document,
)
from ragcore.retrieval import MODES, retrieve
from tests.retrieval_support import DocSpec, clean, insert_document, make_test_embedder

READERS = [r for r in ROLES if r != "admin"]
# Users holding several roles (issue 38): each reads through the reader of its exact set, whose
# statistics and indexes are those of the union of what its roles may read.
SEVERAL = {"isg+uretim": ("isg", "uretim"), "ik+isg+personel": ("ik", "isg", "personel")}
BASE = [
    DocSpec("isg-prosedur", ("isg",), (
        ("İşveren risk değerlendirmesi yapmakla yükümlüdür. Risk değerlendirmesi yılda bir yenilenir.", 1, "Madde 4"),
        ("Acil durum planı hazırlanır ve yangın tatbikatı yılda bir kez yapılır.", 2, "Madde 5"),
        ("İş kazası üç iş günü içinde Sosyal Güvenlik Kurumuna bildirilir.", 3, "Madde 6"),
    )),
    DocSpec("ik-yonetmelik", ("ik",), (
        ("Yıllık ücretli izin süresi on dört günden az olamaz ve izin talepleri yazılı yapılır.", 1, "Madde 53"),
        ("Fazla çalışma ücreti normal ücretin yüzde elli fazlasıdır.", 2, "Madde 41"),
    )),
    DocSpec("uretim-talimat", ("uretim",), (
        ("Pres makinesinde koruyucu eldiven ve gözlük takılır; makine bakımı vardiya sonunda yapılır.", 1, None),
        ("Risk değerlendirmesi üretim hattında her yıl yenilenir ve işveren onaylar.", 2, None),
    )),
    DocSpec("ortak-el-kitabi", ("isg", "personel"), (
        ("Çalışanlara işe başlamadan önce iş güvenliği eğitimi verilir ve eğitim kayıtları saklanır.", 1, None),
        ("Kişisel koruyucu donanım işveren tarafından ücretsiz verilir.", 2, None),
    )),
    DocSpec("personel-rehberi", ("personel", "ik"), (
        ("Servis saatleri ve yemekhane kuralları personel panosunda duyurulur.", 1, None),
        ("Yıllık izin planı her yıl ocak ayında hazırlanır.", 2, None),
    )),
]
# Mentions query words ("işveren", "risk", "izin", "ücret") and a name and an amount that only
# this document holds: the oracle (coverage of "Ahmet Yılmaz" moved 0.480 → 0.539).
SECRET = (
    "Ahmet Yılmaz'ın aylık ücreti 85.000 TL'dir ve işveren bu ücreti gizli tutar.",
    "Risk değerlendirmesi raporunda Ahmet Yılmaz'ın yıllık izin hakkı ve fazla çalışma ücreti yazılıdır.",
    "İşveren izin, ücret ve risk kayıtlarını ayrı bir dosyada saklar.",
)
QUESTIONS = [
    "Ahmet Yılmaz'ın ücreti ne kadar?",
    "İşveren risk değerlendirmesi yapmakla yükümlü müdür?",
    "Yıllık izin kaç gündür?",
    "Fazla çalışma ücreti nasıl hesaplanır?",
    "İş güvenliği eğitimi ne zaman verilir?",
    "85.000 TL",
    "Şirket pikniği ne zaman?",
]


class MemoEmbedder:
    """The test embedder with its vectors remembered per text: the views below embed the same
    questions and sentences many times, and a deterministic model gives the same vectors."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.kind, self.model, self.name, self.dim = inner.kind, inner.model, inner.name, inner.dim
        self.known: dict[tuple[str, str], np.ndarray] = {}

    def _embed(self, kind: str, texts, embed):
        missing = [t for t in dict.fromkeys(texts) if (kind, t) not in self.known]
        if missing:
            self.known.update(zip(((kind, t) for t in missing), embed(missing), strict=True))
        return np.vstack([self.known[kind, t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts):
        return self._embed("q", texts, self.inner.embed_queries)

    def embed_passages(self, texts):
        return self._embed("p", texts, self.inner.embed_passages)


@pytest.fixture(scope="module")
def embedder():
    return MemoEmbedder(make_test_embedder())


@pytest.fixture(scope="module")
def world(session_db, embedder, tmp_path_factory, pg_url):
    clean(session_db)
    for spec in BASE:
        insert_document(session_db, embedder, spec)
    people = {role: create_user(session_db, f"stat-{role}", role, "parola-123") for role in ROLES}
    for key, held in SEVERAL.items():
        people[key] = create_user(session_db, f"stat-{'-'.join(held)}", held, "parola-123")
        assert people[key].reader == key
    settings = Settings(database_url=pg_url, data_dir=tmp_path_factory.mktemp("stats") / "data",
                        embed_backend="use", llm_backend="extractive")
    service = AnswerService(session_db, settings, embedder, ExtractiveGenerator(embedder))
    return session_db, settings, people, service


def _exact(value):
    """Floats as their exact hex form, recursively, so that == means bit for bit."""
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_exact(v) for v in value]
    return value


def _view(world, embedder, role: str) -> dict:
    """Everything the role can see for the fixed questions (timings and log ids left out)."""
    database, _, people, service = world
    seen = {}
    for question in QUESTIONS:
        for mode in MODES:
            for windows in (False, True):
                r = retrieve(database, embedder, question, role, k=5, mode=mode, windows=windows)
                seen[(question, mode, windows)] = _exact({
                    "hits": [dataclasses.asdict(h) for h in r.hits],
                    "evidence": dataclasses.asdict(r.evidence),
                })
        answer = service.ask(people[role], question)
        seen[(question, "answer")] = _exact({
            "text": answer.text, "status": answer.status, "generator": answer.generator,
            "llm_called": answer.llm_called, "sources": [dataclasses.asdict(s) for s in answer.sources],
            "cited": answer.cited, "notice": answer.notice, "evidence": answer.extra.get("evidence"),
        })
    return seen


def _store_secret(world, embedder, roles: list[str]) -> int:
    """The secret sentences one per chunk, and all together in a last chunk (whose windows are
    sentence pairs), with their windows."""
    database = world[0]
    texts = [*SECRET, " ".join(SECRET)]
    chunks = [Chunk(ordinal=i, text=text, page_start=1, page_end=1, article=None, char_start=0, char_end=len(text))
              for i, text in enumerate(texts)]
    windows = document_windows(chunks)
    meta = {"title": "gizli-bordro", "filename": "gizli-bordro.pdf", "sha256": f"{random.getrandbits(256):064x}",
            "size_bytes": 1, "page_count": 1, "allowed_roles": roles}
    with database.connection() as conn:
        return store_document(conn, meta, chunks, embedder.embed_passages(texts), windows=windows,
                              window_vectors=embedder.embed_passages([w.text for w in windows]))


@pytest.mark.parametrize("role", [*READERS, *SEVERAL])
def test_unreadable_document_changes_nothing_the_role_sees(world, embedder, role: str) -> None:
    """For one role, and for a user holding several (the document is one none of them may read)."""
    database, settings = world[0], world[1]
    others = [r for r in [*READERS, "denetci"] if r not in role.split("+")]
    before = _view(world, embedder, role)
    doc = _store_secret(world, embedder, others[:1])
    assert _view(world, embedder, role) == before, "after storing a document the role cannot read"
    set_document_roles(database, doc, others[1:])
    assert _view(world, embedder, role) == before, "after moving it between other roles"
    delete_document(database, settings, doc)
    assert _view(world, embedder, role) == before, "after deleting it"


def test_readers_of_the_document_do_see_it_change(world, embedder) -> None:
    """The comparison can fail: for a role that may read the new document, the view changes."""
    database, settings = world[0], world[1]
    before = _view(world, embedder, "ik")
    doc = _store_secret(world, embedder, ["ik"])
    try:
        after = _view(world, embedder, "ik")
        assert after != before
        changed = {key for key in before if before[key] != after[key]}
        assert ("Ahmet Yılmaz'ın ücreti ne kadar?", "lexical", False) in changed
        assert ("Ahmet Yılmaz'ın ücreti ne kadar?", "dense", True) in changed
    finally:
        delete_document(database, settings, doc)
    assert _view(world, embedder, "ik") == before  # and deleting restores it exactly


def test_moving_an_existing_document_between_other_roles(world, embedder) -> None:
    """The uretim document becomes uretim+ik, then ik only, then back: isg and personel see nothing move."""
    database = world[0]
    with database.connection() as conn:
        doc = conn.execute("SELECT id FROM documents WHERE title = 'uretim-talimat'").fetchone()[0]
    before = {role: _view(world, embedder, role) for role in ("isg", "personel")}
    for roles in (["uretim", "ik"], ["ik"], ["uretim"]):
        set_document_roles(database, doc, roles)
        for role in ("isg", "personel"):
            assert _view(world, embedder, role) == before[role], (roles, role)


# ----------------------------------------------------------------------------- exact statistics


def _readers(database) -> dict[str, frozenset[str]]:
    """Every reader (migration 021: a role, or a set of roles a user holds) with its members."""
    with database.connection() as conn:
        return {role: frozenset(members) for role, members in conn.execute("SELECT role, members FROM role_bits")}


def _recount(database) -> dict:
    """Every statistic recounted in Python from the stored chunks' lexical texts and roles, for
    every reader: a chunk counts for a reader when its roles meet the reader's members (admin:
    every chunk) — a set of roles' statistics are those of the union of what they may read."""
    readers = _readers(database)
    with database.connection() as conn:
        stored = conn.execute("SELECT document_id, text, article, lex_length, allowed_roles FROM chunks "
                              "ORDER BY document_id, ordinal").fetchall()
    rows = []
    for _, group in itertools.groupby(stored, key=lambda row: row[0]):
        chunks = list(group)
        texts = lexical_texts([c[1] for c in chunks], [c[2] for c in chunks])
        rows += [(text, c[3], c[4]) for text, c in zip(texts, chunks, strict=True)]
    stats = {reader: [0, 0] for reader in readers}
    df: dict[str, Counter] = {reader: Counter() for reader in readers}
    for text, lex_length, roles in rows:
        tokens = lexical_tokens(text)
        assert lex_length == len(tokens)
        for reader, members in readers.items():
            if reader == "admin" or members & set(roles):
                stats[reader][0] += 1
                stats[reader][1] += len(tokens)
                df[reader].update(set(tokens))
    histogram = {(reader, d): n for reader in readers for d, n in Counter(df[reader].values()).items()}
    return {
        "lex_stats": {reader: tuple(v) for reader, v in stats.items()},
        "lexicon": {(reader, term): n for reader in readers for term, n in df[reader].items()},
        "histogram": histogram,
    }


def _stored(database) -> dict:
    with database.connection() as conn:
        return {
            "lex_stats": {r: (n, t) for r, n, t in conn.execute("SELECT role, chunk_count, total_length FROM lex_stats")},
            "lexicon": {(r, t): d for r, t, d in conn.execute("SELECT role, term, df FROM lexicon")},
            "histogram": {(r, d): n for r, d, n in conn.execute("SELECT role, df, terms FROM lex_df_histogram")},
        }


def _bounds_hold(database) -> None:
    """max_tf / min_len_per_tf bound every posting of the term for the role (never too tight)."""
    with database.connection() as conn:
        bad = conn.execute(
            """SELECT count(*) FROM postings p JOIN role_bits r ON (p.roles_mask & r.bit) <> 0
               JOIN lexicon l ON l.role = r.role AND l.term = p.term
               WHERE p.tf > l.max_tf OR p.doc_len::float8 / p.tf < l.min_len_per_tf""").fetchone()[0]
        missing = conn.execute(
            """SELECT count(*) FROM postings p JOIN role_bits r ON (p.roles_mask & r.bit) <> 0
               LEFT JOIN lexicon l ON l.role = r.role AND l.term = p.term WHERE l.term IS NULL""").fetchone()[0]
        denormalised = conn.execute(
            """SELECT count(*) FROM postings p JOIN chunks c ON c.id = p.chunk_id
               WHERE p.doc_len <> c.lex_length OR p.roles_mask <> c.roles_mask""").fetchone()[0]
        windows = conn.execute(
            "SELECT count(*) FROM chunk_windows w JOIN chunks c ON c.id = w.chunk_id "
            "WHERE w.roles_mask <> c.roles_mask").fetchone()[0]
        masks = conn.execute("SELECT count(*) FROM chunks WHERE roles_mask <> reader_mask(allowed_roles)").fetchone()[0]
    assert (bad, missing, denormalised, windows, masks) == (0, 0, 0, 0, 0)


def test_statistics_equal_a_recount_after_random_writes(world, embedder) -> None:
    """Random stores, role changes and deletes (seeded): after each, every per-role statistic
    equals a recount from the chunk texts, and the pruning bounds still hold."""
    database, settings = world[0], world[1]
    rng = random.Random(11)
    added: list[int] = []
    for step in range(12):
        action = rng.choice(["store", "store", "roles", "delete"]) if added else "store"
        if action == "store":
            added.append(_store_secret(world, embedder, rng.sample(READERS, rng.randint(1, 3))))
        elif action == "roles":
            set_document_roles(database, rng.choice(added), rng.sample(READERS, rng.randint(1, 4)))
        else:
            delete_document(database, settings, added.pop(rng.randrange(len(added))))
        assert _stored(database) == _recount(database), (step, action)
        _bounds_hold(database)
    for doc in added:
        delete_document(database, settings, doc)
    assert _stored(database) == _recount(database)


def test_readers_are_the_seeded_roles_and_the_sets_users_hold(world) -> None:
    """Migration 021 keeps 003's bits for today's roles, gives the auditor its own, and a set of
    roles a user holds has a reader of its own; every chunk's mask is the readers' its roles meet."""
    database = world[0]
    with database.connection() as conn:
        readers = {role: (bit, tuple(members)) for role, bit, members in conn.execute(
            "SELECT role, bit, members FROM role_bits")}
        single = {role: bit for role, (bit, members) in readers.items() if len(members) == 1}
        assert single == {"admin": 1, "isg": 2, "ik": 4, "uretim": 8, "personel": 16, "denetci": 32}
        assert {role: members for role, (_, members) in readers.items() if len(members) > 1} == SEVERAL
        for role in [*ROLES, "denetci"]:
            expected = 1
            for bit, members in readers.values():
                expected |= bit if role in members else 0
            assert conn.execute("SELECT reader_mask(%s::text[])", ([role],)).fetchone()[0] == expected, role
        assert conn.execute("SELECT count(*) FROM chunks WHERE roles_mask <> reader_mask(allowed_roles)").fetchone()[0] == 0


def test_several_roles_read_exactly_the_union(world, embedder) -> None:
    """A user with {isg, uretim}: the documents listed, every retrieved chunk and the statistics
    are those of the documents isg or uretim may read — both halves of the union, nothing else."""
    database, _, people, service = world
    key = "isg+uretim"
    with database.connection() as conn:
        titles = {title: set(roles) for title, roles in conn.execute("SELECT title, allowed_roles FROM documents")}
    union = {title for title, roles in titles.items() if roles & {"isg", "uretim"}}
    assert union and union != set(titles)
    assert {d.title for d in list_documents(database, people[key].reader)} == union
    seen = set()
    for question in QUESTIONS:
        for mode in MODES:
            for hit in retrieve(database, embedder, question, key, k=20, mode=mode).hits:
                seen.add(hit.source.title)
        seen |= {source.title for source in service.ask(people[key], question).sources}
    assert seen <= union
    assert {t for t in seen if titles[t] & {"isg"}} and {t for t in seen if titles[t] & {"uretim"} - {"isg"}}
    stored, recount = _stored(database), _recount(database)
    assert stored["lex_stats"][key] == recount["lex_stats"][key]
    assert {k: v for k, v in stored["lexicon"].items() if k[0] == key} == \
        {k: v for k, v in recount["lexicon"].items() if k[0] == key}
    assert stored["lex_stats"][key] != stored["lex_stats"]["isg"]  # a reader of its own, not isg's


def test_a_role_created_and_deleted_at_run_time(world, embedder) -> None:
    """An admin creates 'bakim', gives it to a user with isg, and a document to it: that user
    sees the document, nobody else's view moves. Deleting the role takes it from the user and
    the document (left admin-only) in one go: the user's next question no longer reaches it,
    and every statistic is again a recount."""
    database, settings, _, service = world
    before = {role: _view(world, embedder, role) for role in ("isg", "isg+uretim")}
    create_role(database, "bakim", "Bakım", "Bakım birimi")
    alone = create_user(database, "stat-only-bakim", ["bakim"], "parola-123")
    both = create_user(database, "stat-bakim-isg", ["bakim", "isg"], "parola-123")
    assert both.reader == "bakim+isg"
    doc = _store_secret(world, embedder, ["bakim"])
    try:
        assert _stored(database) == _recount(database)
        _bounds_hold(database)
        assert "gizli-bordro" in {s.title for s in service.ask(both, QUESTIONS[0]).sources}
        assert "gizli-bordro" in {h.source.title for h in retrieve(database, embedder, QUESTIONS[0], "bakim+isg",
                                                                     k=5, mode="lexical").hits}
        for role in before:
            assert _view(world, embedder, role) == before[role], role
        with pytest.raises(RoleError, match="stat-only-bakim"):
            delete_role(database, "bakim")  # that user would hold no role
        set_roles(database, alone.username, ["personel"])
        delete_role(database, "bakim")
        both = get_user(database, both.username)
        assert both.roles == ("isg",) and both.reader == "isg"
        with database.connection() as conn:
            assert conn.execute("SELECT allowed_roles FROM documents WHERE id = %s", (doc,)).fetchone()[0] == ["admin"]
            assert not conn.execute("SELECT role FROM role_bits WHERE 'bakim' = ANY(members)").fetchall()
        assert "gizli-bordro" not in {s.title for s in service.ask(both, QUESTIONS[0]).sources}
        assert _stored(database) == _recount(database)
        _bounds_hold(database)
        for role in before:
            assert _view(world, embedder, role) == before[role], role
    finally:
        delete_document(database, settings, doc)
    assert _stored(database) == _recount(database)


def test_migration_003_fills_the_statistics_of_existing_data(pg_url) -> None:
    """A database built before migration 003 (old schema, data written the old way) gets role
    bits, denormalised postings and exact per-role statistics, and its embedding space gets the
    per-role HNSW indexes on the next start."""
    from ragcore import store as dbmod

    namespace = "test_upgrade_003"
    database = dbmod.Database(pg_url, namespace)
    dbmod.drop_namespace(database, namespace)
    database.close()
    database = dbmod.Database(pg_url, namespace)
    try:
        files = {version: body for version, _, body in dbmod.migration_files()}
        with database.connection() as conn:
            conn.execute(files[1])
            conn.execute(files[2])
            conn.execute("ALTER TABLE chunks ADD COLUMN embedding vector(3)")
            conn.execute("CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops)")
            conn.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
                         "applied_at timestamptz NOT NULL DEFAULT now())")
            conn.execute("INSERT INTO schema_migrations (version, name) VALUES (1, 'initial'), (2, 'login_attempts')")
            conn.execute("INSERT INTO embedding_index (model, dim) VALUES ('old-model', 3)")
            for n, (roles, texts) in enumerate([(["isg"], SECRET[:2]), (["ik", "personel"], SECRET[1:])]):
                doc = conn.execute(
                    "INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
                    "VALUES ('eski', 'eski.pdf', %s, 1, 1, %s) RETURNING id", (f"{n:064x}", roles)).fetchone()[0]
                for ordinal, text in enumerate(texts):
                    tokens = lexical_tokens(text)
                    chunk = conn.execute(
                        "INSERT INTO chunks (document_id, ordinal, page_start, page_end, text, char_start, char_end,"
                        " lex_length, allowed_roles, embedding) VALUES (%s, %s, 1, 1, %s, 0, 1, %s, %s, '[1,0,0]')"
                        " RETURNING id", (doc, ordinal, text, len(tokens), roles)).fetchone()[0]
                    for term, tf in Counter(tokens).items():
                        conn.execute("INSERT INTO postings (term, chunk_id, tf) VALUES (%s, %s, %s)", (term, chunk, tf))
        later = [f"{version:03d}_{name}" for version, name, _ in dbmod.migration_files() if version >= 3]
        assert dbmod.migrate(database) == later and later[0] == "003_role_scoped_lexicon"
        assert _stored(database) == _recount(database)
        _bounds_hold(database)
        dbmod.ensure_embedding_space(database, "old-model", 3)
        with database.connection() as conn:
            names = {r[0] for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename IN ('chunks', 'chunk_windows')",
                (namespace,))}
            bits = dbmod.reader_bits(conn)
        assert set(dbmod.embedding_indexes(bits)) | set(dbmod.window_embedding_indexes(bits)) <= names
        assert dbmod.current_embedding_space(database).windows is False  # none until `reembed` adds them
    finally:
        dbmod.drop_namespace(database, namespace)
        database.close()


def test_lexicon_upkeep_is_planned_as_index_lookups(db) -> None:
    """Migration 009: the upkeep joins a document's terms to the lexicon by index, never by a
    scan of the whole lexicon (its cost must follow the document, not the corpus; the
    statistics themselves are checked against a recount above)."""
    with db.connection() as conn:
        config = conn.execute(
            "SELECT proconfig FROM pg_proc WHERE oid = "
            "'lexicon_apply(text[], text[], integer[], integer[], integer[], float8[], integer[])'::regprocedure"
        ).fetchone()[0]
    assert {"enable_seqscan=off", "enable_hashjoin=off", "enable_mergejoin=off"} <= set(config or [])


LEXICON_APPLY = "lexicon_apply(text[], text[], integer[], integer[], integer[], float8[], integer[])"
LEXICON_APPLY_ARGS = (("p_role", "text[]"), ("p_term", "text[]"), ("p_delta", "integer[]"),
                      ("p_high_delta", "integer[]"), ("p_max_tf", "integer[]"), ("p_min_len_per_tf", "float8[]"),
                      ("p_low_min_len", "integer[]"))


def _lexicon_apply_statement(conn, placeholder) -> tuple[str, list[str]]:
    """The upkeep statement as installed (the function's own source, INTO dropped), its n-th
    argument `name` replaced by `placeholder(n, name)` and cast to its type, and the function's
    settings (migration 009)."""
    source, config = conn.execute("SELECT prosrc, proconfig FROM pg_proc WHERE oid = %s::regprocedure",
                                  (LEXICON_APPLY,)).fetchone()
    statement = source[source.index("WITH change AS"):source.index("INTO gone_roles")]
    for n, (name, type_) in enumerate(LEXICON_APPLY_ARGS, 1):
        statement = re.sub(rf"\b{name}\b", f"{placeholder(n, name)}::{type_}", statement)
    return statement, list(config or [])


def test_lexicon_upkeep_plan_reads_the_lexicon_by_index(db) -> None:
    """EXPLAIN of lexicon_apply's statement, under the function's own settings, for a document's
    change set (2,300 terms × 5 roles, 300 of them new) against a lexicon of 40,000 rows: the
    lexicon and the df histogram are read by their primary keys, never scanned whole, in the
    plan made for these arrays and in the generic plan PL/pgSQL may switch to after five calls."""
    roles = list(ROLES)
    terms = [f"t{i * 7}" for i in range(2000)] + [f"yeni{i}" for i in range(300)]
    n = len(roles) * len(terms)
    args = {"p_role": [r for r in roles for _ in terms], "p_term": terms * len(roles), "p_delta": [1] * n,
            "p_high_delta": [0] * n, "p_max_tf": [None] * n, "p_min_len_per_tf": [None] * n,
            "p_low_min_len": [None] * n}
    with db.connection() as conn, conn.transaction(force_rollback=True):
        conn.execute("INSERT INTO lexicon (role, term, df, high_df) "
                     "SELECT r.role, 't' || g, 1 + g % 40, 0 FROM role_bits r, generate_series(1, 8000) AS g")
        conn.execute("INSERT INTO lex_df_histogram (role, df, terms) SELECT role, df, count(*) FROM lexicon GROUP BY 1, 2")
        conn.execute("ANALYZE lexicon, lex_df_histogram")
        statement, config = _lexicon_apply_statement(conn, lambda n, name: f"%({name})s")
        generic_statement, _ = _lexicon_apply_statement(conn, lambda n, name: f"${n}")
        assert config, "lexicon_apply has no planner settings (migration 009)"
        for setting in config:
            name, value = setting.split("=", 1)
            conn.execute("SELECT set_config(%s, %s, true)", (name, value))
        custom = [r[0] for r in psycopg.ClientCursor(conn).execute("EXPLAIN " + statement, args)]
        generic = [r[0] for r in conn.execute("EXPLAIN (GENERIC_PLAN) " + generic_statement)]
    for plan in (custom, generic):
        text = "\n".join(plan)
        assert "Index Scan using lexicon_pkey on lexicon" in text, text
        assert "Seq Scan on lexicon" not in text and "Seq Scan on lex_df_histogram" not in text, text
