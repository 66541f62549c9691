"""Document versions (issue 39.1, migration 024) on the real embedded database and retrieval: a
new version switches in atomically under concurrent questions, the old one is kept and never
retrieved, an admin rolls back, duplicates are refused, roles are the chosen ones, and a failed
ingest leaves the old version current."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from ragcore import store as dbmod
from ragcore.core import format_date
from ragcore.documents import (
    DocumentNotFound,
    DuplicateDocument,
    VersionError,
    checked_scope,
    create_collection,
    find_collection,
    get_document,
    ingest_file,
    list_collections,
    list_documents,
    list_versions,
    make_current,
    revision_of,
    set_collection_members,
    set_document_collections,
    stored_path,
)
from ragcore.embed import USEEmbedder
from ragcore.retrieval import retrieve
from tests import pdfs

QUESTION = "Forklift en fazla hangi hizla surulur?"
V1_TEXT = ("FORKLIFT KULLANIM TALIMATI\nForklift fabrika icinde en fazla saatte on kilometre hizla surulur. "
           "Operator emniyet kemerini takar. Yuk tasirken catal yerden en fazla otuz santimetre yukselir.")
V2_TEXT = ("FORKLIFT KULLANIM TALIMATI\nForklift fabrika icinde en fazla saatte alti kilometre hizla surulur. "
           "Operator emniyet kemerini takar ve yelek giyer. Yuk tasirken catal yerden en fazla yirmi santimetre "
           "yukselir.")
V3_TEXT = V2_TEXT + " Vardiya sonunda aku sarj istasyonuna baglanir."
TITLE = "Forklift talimatı"


@pytest.fixture(scope="module")
def embedder() -> USEEmbedder:
    return USEEmbedder()


def _upload(db, settings, embedder, text: str, *, roles=("isg",), new_version_of: int | None = None, progress=None,
            title: str | None = TITLE):
    return ingest_file(db, settings, embedder, pdfs.text_pdf([text]), filename="forklift.pdf", roles=list(roles),
                       title=title, new_version_of=new_version_of, progress=progress)


def _ask(db, embedder, role: str = "isg") -> set[int]:
    """The documents (keys) the question's sources come from, through the app's retrieval."""
    found = retrieve(db, embedder, QUESTION, role, k=5, mode="weighted")
    return {source.document_id for source in found.sources}


def _statistics(db: dbmod.Database) -> dict:
    with db.connection() as conn:
        return {
            "lex_stats": sorted(conn.execute("SELECT role, chunk_count, total_length FROM lex_stats").fetchall()),
            "lexicon": sorted(conn.execute("SELECT role, term, df, high_df FROM lexicon").fetchall()),
            "histogram": sorted(conn.execute("SELECT role, df, terms FROM lex_df_histogram").fetchall()),
        }


def _check_statistics_exact(db: dbmod.Database) -> None:
    """The per-role BM25 statistics the triggers kept equal a recount from chunks and postings."""
    kept = _statistics(db)
    with db.connection() as conn:
        conn.execute("SELECT lexical_statistics_rebuild()")
    assert _statistics(db) == kept


def test_new_version_replaces_the_old_which_is_kept_and_never_retrieved(db, settings, embedder):
    first = _upload(db, settings, embedder, V1_TEXT)
    assert _ask(db, embedder) == {first.document_id}
    second = _upload(db, settings, embedder, V2_TEXT, new_version_of=first.document_id, title=None)

    assert second.title == TITLE  # the current version's title by default
    for role in ("isg", "admin"):  # admin included: the old version has no role bit at all
        assert _ask(db, embedder, role) == {second.document_id}
    assert [d.id for d in list_documents(db, "admin")] == [second.document_id]
    old = get_document(db, first.document_id, "admin")
    assert old is not None and not old.is_current and old.version_no == 1
    assert stored_path(settings, old.sha256).is_file()  # kept for the audit trail
    with db.connection() as conn:
        kept_chunks, masks = conn.execute(
            "SELECT count(*), array_agg(DISTINCT roles_mask) FROM chunks WHERE document_id = %s",
            (first.document_id,)).fetchone()
        posting_masks = conn.execute(
            "SELECT array_agg(DISTINCT p.roles_mask) FROM postings p JOIN chunks c ON c.id = p.chunk_id "
            "WHERE c.document_id = %s", (first.document_id,)).fetchone()[0]
    assert kept_chunks == first.chunks and masks == [0] and posting_masks == [0]
    versions = list_versions(db, second.document_id, "admin")
    assert [(v.version_no, v.is_current) for v in versions] == [(2, True), (1, False)]
    assert versions[0].label.startswith("sürüm 2 · ")
    _check_statistics_exact(db)


def test_a_retired_version_has_no_bit_for_readers_of_several_roles_made_before_or_after(db, settings, embedder):
    """Roles as data (migration 021): a reader is a role or a user's set of roles, and one may be
    made at any time; a retired version's chunks get no bit from any of them."""
    from ragcore.access import create_user, roles

    first = _upload(db, settings, embedder, V1_TEXT, roles=("isg", "uretim"))
    create_user(db, "iki-rol", ["isg", "uretim"], "parola-123")  # reader isg+uretim, before
    second = _upload(db, settings, embedder, V2_TEXT, new_version_of=first.document_id)
    roles.create_role(db, "kalite", "Kalite")
    create_user(db, "kalite-isg", ["isg", "kalite"], "parola-123")  # reader isg+kalite, after
    with db.connection() as conn:
        masks = conn.execute("SELECT array_agg(DISTINCT roles_mask) FROM chunks WHERE document_id = %s",
                             (first.document_id,)).fetchone()[0]
        readers = [row[0] for row in conn.execute("SELECT role FROM role_bits ORDER BY role")]
    assert {"isg+uretim", "isg+kalite"} <= set(readers)
    assert masks == [0]
    for reader in ("isg+uretim", "isg+kalite", "admin"):
        assert _ask(db, embedder, reader) == {second.document_id}
    _check_statistics_exact(db)


def test_sources_name_their_version(db, settings, embedder):
    first = _upload(db, settings, embedder, V1_TEXT)
    _upload(db, settings, embedder, V2_TEXT, new_version_of=first.document_id)
    source = retrieve(db, embedder, QUESTION, "isg", k=1, mode="weighted").sources[0]
    day = get_document(db, source.document_id, "admin").created_at
    assert source.version_no == 2 and source.version_label == f"sürüm 2 · {format_date(day)}"
    assert source.as_dict()["version"]["label"] == source.version_label


def test_version_switch_under_200_parallel_questions_is_atomic(db, settings, embedder):
    """200 questions through the real retrieval while the new version's transaction commits: the
    first 100 finish before the commit (the switch is held open until then), the next run across
    it, and the last 50 wait for the commit to have returned. Each answer's sources come from
    exactly one version; a question begun after the commit sees the new one. (Which version a
    question begun while the commit runs sees is not asserted: the commit's own work — migration
    003's deferred statistics triggers — takes as long as it takes.)"""
    first = _upload(db, settings, embedder, V1_TEXT)
    answered = threading.Semaphore(0)
    held = threading.Event()
    committed = threading.Event()

    def hold_commit(stage: str, done: int, total: int) -> None:
        if stage == "store" and done == 3:  # everything written, the transaction not yet committed
            held.set()
            for _ in range(100):
                answered.acquire()

    def ask(number: int) -> tuple[bool, set[int]]:
        held.wait()
        if number >= 150:
            committed.wait()
        after = committed.is_set()
        try:
            return after, _ask(db, embedder)
        finally:
            answered.release()

    with ThreadPoolExecutor(max_workers=4) as pool:
        asked = pool.map(ask, range(200))
        second = _upload(db, settings, embedder, V2_TEXT, new_version_of=first.document_id, progress=hold_commit)
        committed.set()
        results = list(asked)

    answers = [found for _after, found in results]
    assert len(answers) == 200
    assert all(len(found) == 1 for found in answers), [a for a in answers if len(a) != 1]  # never both, never neither
    assert {first.document_id} in answers  # answered before the commit
    after_commit = [found for after, found in results if after]
    assert len(after_commit) >= 50 and all(found == {second.document_id} for found in after_commit)
    assert _ask(db, embedder) == {second.document_id}


def test_rollback_is_atomic_and_can_go_forward_again(db, settings, embedder):
    first = _upload(db, settings, embedder, V1_TEXT)
    second = _upload(db, settings, embedder, V2_TEXT, new_version_of=first.document_id)

    restored = make_current(db, first.document_id)
    assert restored.is_current and _ask(db, embedder) == {first.document_id}
    assert [(v.version_no, v.is_current) for v in list_versions(db, first.document_id, "admin")] == [
        (2, False), (1, True)]
    _check_statistics_exact(db)
    with pytest.raises(VersionError, match="zaten güncel"):
        make_current(db, first.document_id)

    stop = threading.Event()
    seen: list[set[int]] = []

    def keep_asking() -> None:
        while not stop.is_set():
            seen.append(_ask(db, embedder))

    readers = [threading.Thread(target=keep_asking) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        for target in (second, first) * 5:
            make_current(db, target.document_id)
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert seen and all(len(found) == 1 for found in seen)
    assert _ask(db, embedder) == {first.document_id}
    _check_statistics_exact(db)


def test_same_content_is_refused_as_a_duplicate_in_turkish(db, settings, embedder):
    first = _upload(db, settings, embedder, V1_TEXT)
    before = _statistics(db)
    with pytest.raises(DuplicateDocument, match="güncel sürümüyle \\(sürüm 1\\) aynı"):
        _upload(db, settings, embedder, V1_TEXT, new_version_of=first.document_id)
    assert _statistics(db) == before
    second = _upload(db, settings, embedder, V2_TEXT, new_version_of=first.document_id)
    with pytest.raises(DuplicateDocument, match="1\\. sürümüyle aynı"):
        _upload(db, settings, embedder, V1_TEXT, new_version_of=second.document_id)
    assert [v.version_no for v in list_versions(db, first.document_id, "admin")] == [2, 1]
    assert _ask(db, embedder) == {second.document_id}


def test_new_version_reads_with_the_old_roles_or_the_chosen_ones(db, settings, embedder):
    first = _upload(db, settings, embedder, V1_TEXT, roles=("isg", "uretim"))
    second = _upload(db, settings, embedder, V2_TEXT, roles=(), new_version_of=first.document_id)
    assert get_document(db, second.document_id, "admin").allowed_roles == ("isg", "uretim")
    assert _ask(db, embedder, "uretim") == {second.document_id}

    third = _upload(db, settings, embedder, V3_TEXT, roles=("ik",), new_version_of=second.document_id)
    assert get_document(db, third.document_id, "admin").allowed_roles == ("ik",)
    assert _ask(db, embedder, "ik") == {third.document_id}
    for role in ("isg", "uretim", "personel"):  # no earlier version answers in its place
        assert _ask(db, embedder, role) == set()
    assert [v.version_no for v in list_versions(db, third.document_id, "ik")] == [3]
    _check_statistics_exact(db)


def test_failed_ingest_of_a_new_version_leaves_the_old_one_current(db, settings, embedder):
    first = _upload(db, settings, embedder, V1_TEXT)
    before = _statistics(db)

    def explode(stage: str, done: int, total: int) -> None:
        if stage == "store" and done == 3:  # written, the old version already retired in the transaction
            raise RuntimeError("disk dolu")

    with pytest.raises(RuntimeError, match="disk dolu"):
        _upload(db, settings, embedder, V2_TEXT, new_version_of=first.document_id, progress=explode)
    assert get_document(db, first.document_id, "admin").is_current
    assert [v.version_no for v in list_versions(db, first.document_id, "admin")] == [1]
    assert _ask(db, embedder) == {first.document_id}
    assert _statistics(db) == before


def test_an_upload_with_a_stored_title_or_file_name_is_offered_as_a_revision(db, settings, embedder):
    first = _upload(db, settings, embedder, V1_TEXT)
    assert revision_of(db, title="FORKLİFT TALİMATI").id == first.document_id  # Turkish letter case aside
    assert revision_of(db, filename="forklift.pdf").id == first.document_id
    assert revision_of(db, title="Baska bir belge", filename="baska.pdf") is None
    second = _upload(db, settings, embedder, V2_TEXT, new_version_of=first.document_id)
    assert revision_of(db, title=TITLE).id == second.document_id  # the current version


def _before_024(pg_url: str, namespace: str, folder) -> dbmod.Database:
    """A fresh namespace migrated up to 023 (the files before 024 copied into `folder`)."""
    database = dbmod.Database(pg_url, namespace)
    dbmod.drop_namespace(database, namespace)
    database.close()
    database = dbmod.Database(pg_url, namespace)
    folder.mkdir()
    for version, name, body in dbmod.migration_files():
        if version < 24:
            (folder / f"{version:03d}_{name}.sql").write_text(body, encoding="utf-8")
    dbmod.apply_migrations(database, folder)
    return database


def test_migration_024_stops_when_reader_mask_is_no_longer_021s(pg_url, tmp_path) -> None:
    """A merge guard: 024 redefines reader_mask as 021's plus "no roles, no bits"; after a migration
    that changed reader_mask, it refuses (and changes nothing) rather than put 021's bits back."""
    import psycopg

    database = _before_024(pg_url, "test_guard_024", tmp_path / "sql")
    try:
        with database.connection() as conn:
            conn.execute("CREATE OR REPLACE FUNCTION reader_mask(roles text[]) RETURNS bigint LANGUAGE sql "
                         "STABLE PARALLEL SAFE AS $$ SELECT 1::bigint $$")
        with pytest.raises(psycopg.errors.RaiseException, match="no roles, no bits"):
            dbmod.migrate(database)
        assert dbmod.migration_status(database)[1][0] == 24  # 024 and every later one still pending
    finally:
        dbmod.drop_namespace(database, "test_guard_024")
        database.close()


def test_migration_024_makes_every_stored_document_its_own_current_first_version(pg_url, tmp_path) -> None:
    """A database holding documents before migration 024: each becomes version 1 of a lineage of
    its own, current, with its chunks' role bits and the per-role statistics unchanged."""
    from collections import Counter

    from ragcore.core import lexical_tokens

    namespace = "test_upgrade_024"
    database = _before_024(pg_url, namespace, tmp_path / "sql")
    try:
        with database.connection() as conn:
            for n, roles in enumerate([["isg"], ["ik", "personel"], ["admin"]]):
                doc = conn.execute(
                    "INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
                    "VALUES ('eski', 'eski.pdf', %s, 1, 1, %s) RETURNING id", (f"{n:064x}", roles)).fetchone()[0]
                text = f"Eski belge {n}: forklift hizi ve kalip tasima kurallari."
                tokens = lexical_tokens(text)
                chunk = conn.execute(
                    "INSERT INTO chunks (document_id, ordinal, page_start, page_end, text, char_start, char_end,"
                    " lex_length, allowed_roles) VALUES (%s, 0, 1, 1, %s, 0, 1, %s, %s) RETURNING id",
                    (doc, text, len(tokens), roles)).fetchone()[0]
                for term, tf in Counter(tokens).items():
                    conn.execute("INSERT INTO postings (term, chunk_id, tf) VALUES (%s, %s, %s)", (term, chunk, tf))
            masks = conn.execute("SELECT id, roles_mask FROM chunks ORDER BY id").fetchall()
        statistics = _statistics(database)
        assert dbmod.migrate(database)[0] == "024_document_versions"  # and the later ones
        with database.connection() as conn:
            rows = conn.execute("SELECT lineage, version_no, is_current FROM documents ORDER BY id").fetchall()
            assert conn.execute("SELECT id, roles_mask FROM chunks ORDER BY id").fetchall() == masks
        assert len({row[0] for row in rows}) == 3 and all(row[1:] == (1, True) for row in rows)
        assert _statistics(database) == statistics
        _check_statistics_exact(database)
    finally:
        dbmod.drop_namespace(database, namespace)
        database.close()


def test_a_new_version_and_a_rollback_stay_in_the_documents_collections(db, settings, embedder):
    """Collections hold a document, not one of its rows (migration 025 beside 024): the memberships
    move to the new version in its store transaction and back on a roll-back, and a question
    restricted to the collection reads the current version's text only."""
    first = _upload(db, settings, embedder, V1_TEXT)
    talimatlar = create_collection(db, "Talimatlar")
    set_collection_members(db, talimatlar.public_id, [first.document_id])
    other = create_collection(db, "Kanunlar")

    second = _upload(db, settings, embedder, V2_TEXT, new_version_of=first.document_id, title=None)
    scope = checked_scope(db, ("isg",), collection=talimatlar.public_id)
    found = retrieve(db, embedder, QUESTION, "isg", k=5, mode="weighted", scope=scope)
    assert {s.document_id for s in found.sources} == {second.document_id}
    assert any("alti kilometre" in s.text for s in found.sources)
    assert [c.documents for c in list_collections(db, ("isg",))] == [1]  # the current row only, once
    assert find_collection(db, other.public_id, ("isg",)) is None
    set_document_collections(db, second.document_id, [talimatlar.public_id, other.public_id])

    make_current(db, first.document_id)  # roll back: the memberships as they were last, the old text again
    assert find_collection(db, other.public_id, ("isg",)).documents == 1
    scope = checked_scope(db, ("isg",), collection=talimatlar.public_id)
    found = retrieve(db, embedder, QUESTION, "isg", k=5, mode="weighted", scope=scope)
    assert {s.document_id for s in found.sources} == {first.document_id}
    assert any("on kilometre" in s.text for s in found.sources)
    with pytest.raises(DocumentNotFound):  # a retired version is no scope: only current versions are asked
        checked_scope(db, ("isg",), document=second.public_id)
