"""The audit trail (ragcore.audit) on the real database: who asked what, when, with which roles,
the outcome and exactly which passages (document, page, version) were shown; the filters and the
page-size cap; the CSV file; the usage figures; the retention job; migration 023 on a database
holding data; and that nobody but an admin or an auditor reads any of it.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import date, timedelta

import pytest

from ragcore import audit, jobs
from ragcore import store as dbmod
from ragcore.access import create_user
from ragcore.answer import question_record, set_feedback
from ragcore.answer.questions import insert_question
from ragcore.core import ROLES, Source, User
from ragcore.jobs import worker as job_worker

SHA_LAW = "a" * 64
SHA_RULES = "b" * 64


def _document(db, title: str, sha: str) -> int:
    with db.connection() as conn:
        return conn.execute(
            "INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles) "
            "VALUES (%s, %s, %s, 1, 20, ARRAY['isg', 'ik', 'personel']) RETURNING id",
            (title, f"{title}.pdf", sha)).fetchone()[0]


def _source(rank: int, document: int, title: str, page: int) -> Source:
    return Source(rank, 1000 + rank, document, title, f"{title}.pdf", page, page, "Madde 5", 0.5, "metin")


def _ask(db, user: User, question: str, *, outcome: str | None = "answer", sources=(), cited=(),
         status: str | None = None, days_ago: int = 0) -> str:
    """One row written as the answer service writes it, dated `days_ago` days back; its public id."""
    status = status or {"answer": "answered", "closest": "needs_review", "refused": "needs_review", None: "error"}[outcome]
    qid = insert_question(db, question_record(
        user, question, answer="cevap [1]" if outcome == "answer" else None, status=status, generator="extractive",
        llm_called=False, sources=sources, cited=cited, outcome=outcome, error="model düştü" if outcome is None else None))
    if days_ago:
        with db.connection() as conn:
            conn.execute("UPDATE questions SET created_at = now() - %s WHERE public_id = %s::uuid",
                         (timedelta(days=days_ago), qid))
    return qid


@pytest.fixture()
def world(db):
    """Two documents, three people and five questions of theirs across outcomes and days."""
    law = _document(db, "İş Kanunu", SHA_LAW)
    rules = _document(db, "Yönetmelik", SHA_RULES)
    admin = create_user(db, "yonetici", "admin", "parola-1234")
    ayse = create_user(db, "ayse", "ik", "parola-1234")
    mehmet = create_user(db, "mehmet", "isg", "parola-1234")
    ids = {
        "answer": _ask(db, ayse, "Doğum izni kaç hafta?", sources=[_source(1, law, "İş Kanunu", 31),
                                                                    _source(2, rules, "Yönetmelik", 4)], cited=(1,)),
        "closest": _ask(db, mehmet, "Baret kimde?", outcome="closest", sources=[_source(1, rules, "Yönetmelik", 9)],
                        cited=(1,), days_ago=3),
        "refused": _ask(db, ayse, "Maaşım yatmadı mı?", outcome="refused", days_ago=10),
        "refused_again": _ask(db, mehmet, "maasim yatmadi", outcome="refused", days_ago=1),
        "error": _ask(db, mehmet, "=1+1", outcome=None, days_ago=40),
    }
    return {"law": law, "rules": rules, "admin": admin, "ayse": ayse, "mehmet": mehmet, "ids": ids}


def _ids(page: audit.AuditPage) -> list[str]:
    return [row.question_id for row in page.rows]


# ----------------------------------------------------------------------------- who may read


def test_only_an_admin_or_an_auditor_reads_the_trail(db, world, settings) -> None:
    auditor = User(99, "denetim", "Denetçi", ("denetci",), True)
    assert audit.can_read_audit(world["admin"]) and audit.can_read_audit(auditor)
    for role in ROLES:
        if role != "admin":
            reader = create_user(db, f"okur-{role}", role, "parola-1234")
            assert not audit.can_read_audit(reader)
            for read in (lambda r: audit.audit_page(db, r), lambda r: audit.usage(db, r),
                         lambda r: list(audit.csv_chunks(db, settings, r)), lambda r: audit.shown_documents(db, r),
                         lambda r: audit.asking_users(db, r), lambda r: list(audit.audit_rows(db, r, audit.EVERY_ROW, 10))):
                with pytest.raises(audit.AuditForbidden, match="yalnızca yönetici ve denetçi"):
                    read(reader)
    assert not audit.can_read_audit(None)


# ----------------------------------------------------------------------------- what a row says


def test_a_row_says_who_asked_what_with_which_roles_and_what_was_shown(db, world) -> None:
    page = audit.audit_page(db, world["admin"])
    ids = world["ids"]
    assert page.total == 5 and _ids(page) == [ids["answer"], ids["refused_again"], ids["closest"], ids["refused"],
                                              ids["error"]]  # newest first, every user's
    answered = page.rows[0]
    assert (answered.username, answered.roles, answered.question) == ("ayse", ("ik",), "Doğum izni kaç hafta?")
    assert answered.outcome == "answer" and answered.outcome_label == "Cevap verildi"
    cited, unused = answered.passages
    assert (cited.title, cited.locator, cited.article, cited.sha256, cited.use) == (
        "İş Kanunu", "s. 31", "Madde 5", SHA_LAW, "cited")
    assert cited.uploaded_at is not None and cited.document_key == world["law"]
    assert (unused.title, unused.sha256, unused.use) == ("Yönetmelik", SHA_RULES, "unused")
    assert cited.label().endswith(f"s. 31 · sürüm {SHA_LAW[:12]} · {cited.uploaded_at.astimezone():%d.%m.%Y} · "
                                  "cevapta kaynak")
    closest = page.rows[2]
    assert closest.outcome == "closest" and [p.use for p in closest.passages] == ["closest"]
    assert page.rows[3].outcome == "refused" and page.rows[3].passages == ()
    failed = page.rows[4]
    assert failed.outcome == "error" and failed.outcome_label == "Hata" and failed.error == "model düştü"


def test_a_deleted_document_keeps_its_title_and_version_in_the_trail(db, world) -> None:
    with db.connection() as conn:
        conn.execute("DELETE FROM documents WHERE id = %s", (world["law"],))
    row = audit.audit_page(db, world["admin"], audit.AuditFilter(document=world["law"])).rows
    assert [r.question_id for r in row] == [world["ids"]["answer"]]
    assert (row[0].passages[0].title, row[0].passages[0].sha256) == ("İş Kanunu", SHA_LAW)
    shown = {d.key: d.label for d in audit.shown_documents(db, world["admin"])}
    assert shown == {world["law"]: "İş Kanunu (silinmiş)", world["rules"]: "Yönetmelik"}


def test_the_filters_user_role_document_outcome_and_dates(db, world) -> None:
    admin, ids = world["admin"], world["ids"]

    def found(**filters) -> set[str]:
        return set(_ids(audit.audit_page(db, admin, audit.AuditFilter(**filters), page_size=audit.MAX_PAGE_SIZE)))

    assert found(username="ayse") == {ids["answer"], ids["refused"]}
    assert found(role="isg") == {ids["closest"], ids["refused_again"], ids["error"]}
    assert found(role="uretim") == set()
    assert found(document=world["rules"]) == {ids["answer"], ids["closest"]}  # shown, cited or not
    assert found(document=world["law"]) == {ids["answer"]}
    assert found(outcome="refused") == {ids["refused"], ids["refused_again"]}
    assert found(outcome="error") == {ids["error"]}
    today = date.today()
    assert found(since=today - timedelta(days=5)) == {ids["answer"], ids["closest"], ids["refused_again"]}
    assert found(since=today - timedelta(days=11), until=today - timedelta(days=2)) == {ids["closest"], ids["refused"]}
    assert found(until=today - timedelta(days=30)) == {ids["error"]}
    assert found(username="mehmet", role="isg", since=today - timedelta(days=2)) == {ids["refused_again"]}
    with pytest.raises(audit.AuditFilterError, match="Bitiş tarihi"):
        found(since=today, until=today - timedelta(days=1))
    with pytest.raises(audit.AuditFilterError, match="Bilinmeyen sonuç"):
        found(outcome="bilmem")


def test_pages_and_the_page_size_cap(db, world) -> None:
    admin = world["admin"]
    first = audit.audit_page(db, admin, page=1, page_size=2)
    second = audit.audit_page(db, admin, page=2, page_size=2)
    third = audit.audit_page(db, admin, page=3, page_size=2)
    assert (first.total, first.pages, len(first.rows), len(second.rows), len(third.rows)) == (5, 3, 2, 2, 1)
    assert len(set(_ids(first) + _ids(second) + _ids(third))) == 5
    mehmet = world["mehmet"]
    for n in range(audit.MAX_PAGE_SIZE):
        insert_question(db, question_record(mehmet, f"soru {n}", answer=None, status="needs_review",
                                            generator=None, llm_called=False, outcome="refused"))
    capped = audit.audit_page(db, admin, page_size=10_000)
    assert capped.page_size == audit.MAX_PAGE_SIZE and len(capped.rows) == audit.MAX_PAGE_SIZE
    assert capped.total == audit.MAX_PAGE_SIZE + 5


# ----------------------------------------------------------------------------- the CSV file


def _csv(db, settings, reader, filters=audit.EVERY_ROW) -> tuple[str, list[list[str]]]:
    text = "".join(audit.csv_chunks(db, settings, reader, filters))
    return text, list(csv.reader(io.StringIO(text.removeprefix(audit.BOM)), delimiter=";"))


def test_the_csv_has_turkish_headers_a_bom_and_every_shown_passage(db, world, settings) -> None:
    set_feedback(db, world["ids"]["answer"], "ayse", -1, "eksik")
    text, rows = _csv(db, settings, world["admin"])
    assert text.startswith(audit.BOM) and text.encode("utf-8").startswith(b"\xef\xbb\xbf")
    assert rows[0] == list(audit.HEADERS) == ["Zaman", "Kullanıcı", "Roller", "Soru", "Sonuç", "Cevap", "Hata",
                                              "Gösterilen kaynaklar", "Geri bildirim", "Geri bildirim yorumu",
                                              "Soru kimliği"]
    assert len(rows) == 6
    answered = dict(zip(rows[0], rows[1], strict=True))
    assert answered["Kullanıcı"] == "ayse" and answered["Roller"] == "İnsan kaynakları"
    assert answered["Soru"] == "Doğum izni kaç hafta?" and answered["Sonuç"] == "Cevap verildi"
    assert answered["Gösterilen kaynaklar"].startswith(f"[1] İş Kanunu · Madde 5 · s. 31 · sürüm {SHA_LAW} · ")
    assert f"cevapta kaynak | [2] Yönetmelik · Madde 5 · s. 4 · sürüm {SHA_RULES}" in answered["Gösterilen kaynaklar"]
    assert (answered["Geri bildirim"], answered["Geri bildirim yorumu"]) == ("olumsuz (👎)", "eksik")
    assert answered["Soru kimliği"] == world["ids"]["answer"]
    failed = dict(zip(rows[0], rows[5], strict=True))
    assert failed["Soru"] == "'=1+1"  # never a formula in Excel
    assert failed["Sonuç"] == "Hata" and failed["Hata"] == "model düştü"


def test_the_csv_follows_the_filters_and_stops_at_its_row_cap(db, world, settings) -> None:
    _, rows = _csv(db, settings, world["admin"], audit.AuditFilter(username="ayse"))
    assert [r[3] for r in rows[1:]] == ["Doğum izni kaç hafta?", "Maaşım yatmadı mı?"]
    _, rows = _csv(db, settings.replace(audit_export_max_rows=2), world["admin"])
    assert len(rows) == 1 + 2 + 1 and rows[-1] == [audit.cut_notice(2)]
    assert "ilk 2 satırda kesildi" in rows[-1][0]
    _, rows = _csv(db, settings.replace(audit_export_max_rows=5), world["admin"])
    assert len(rows) == 1 + 5  # exactly the cap: nothing was cut


# ----------------------------------------------------------------------------- usage


def test_usage_counts_days_outcomes_cited_documents_unanswered_and_feedback(db, world) -> None:
    set_feedback(db, world["ids"]["answer"], "ayse", 1)
    figures = audit.usage(db, world["admin"])
    assert figures.total == 5
    assert figures.outcomes == {"answer": 1, "closest": 1, "refused": 2, "error": 1}
    assert len({day for day, _, _ in figures.per_day}) == 5 and sum(n for _, _, n in figures.per_day) == 5
    assert figures.cited_documents == [("İş Kanunu", 1)]  # the Yönetmelik was shown, not cited
    top = figures.unanswered[0]
    assert (top.count, top.question) == (2, "maasim yatmadi")  # "Maaşım yatmadı mı?" is the same question
    assert [g.question for g in figures.unanswered] == ["maasim yatmadi", "Baret kimde?"]
    assert figures.feedback == {0: 4, 1: 1}
    only_ayse = audit.usage(db, world["admin"], audit.AuditFilter(username="ayse"))
    assert only_ayse.total == 2 and only_ayse.unanswered[0].count == 1


# ----------------------------------------------------------------------------- retention


def test_retention_deletes_exactly_the_rows_past_it(db, world, settings) -> None:
    week = settings.replace(audit_retention_days=7)
    assert not audit.expired_audit_rows(db, settings.audit_retention_days)  # nothing is 365 days old
    assert jobs.queue_audit_retention(db, settings) is None
    job = jobs.queue_audit_retention(db, week)
    assert job is not None and job.kind == jobs.AUDIT_RETENTION
    assert jobs.queue_audit_retention(db, week) is None  # one queued at a time
    jobs.run_worker(week, wait=False, embedder_factory=lambda: None)
    done = jobs.get_job(db, job.id)
    assert done.status == "succeeded" and done.result == {"deleted": 2, "days": 7}
    assert jobs.get_kind(jobs.AUDIT_RETENTION).summary(done.result) == "2 soru kaydı silindi (7 günden eski olanlar)"
    left = set(_ids(audit.audit_page(db, world["admin"])))
    ids = world["ids"]
    assert left == {ids["answer"], ids["closest"], ids["refused_again"]}


def test_zero_keeps_the_log_forever(db, world, settings) -> None:
    forever = settings.replace(audit_retention_days=0)
    assert jobs.queue_audit_retention(db, forever) is None
    assert audit.expire_audit_rows(db, 0) == 0 and audit.audit_page(db, world["admin"]).total == 5


def test_a_starting_worker_queues_the_audit_retention_when_a_row_is_past_it(db, world, settings) -> None:
    job_worker._queue_start_up_work(db, settings)
    assert jobs.list_jobs(db, kind=jobs.AUDIT_RETENTION) == []  # nothing 365 days old
    with db.connection() as conn:
        conn.execute("UPDATE questions SET created_at = now() - interval '400 days' WHERE public_id = %s::uuid",
                     (world["ids"]["error"],))
    job_worker._queue_start_up_work(db, settings)
    assert [j.status for j in jobs.list_jobs(db, kind=jobs.AUDIT_RETENTION)] == ["queued"]


# ----------------------------------------------------------------------------- migration 023


def test_migration_023_fills_old_rows_exactly(pg_url) -> None:
    """A database written before the audit trail: its rows get the role they recorded as their
    roles, and each passage of a still-stored document that document's version."""
    namespace = "test_upgrade_023"
    database = dbmod.Database(pg_url, namespace)
    dbmod.drop_namespace(database, namespace)
    database.close()
    database = dbmod.Database(pg_url, namespace)
    try:
        before = [(v, n, body) for v, n, body in dbmod.migration_files() if v < 23]
        with database.connection() as conn:
            for _, _, body in before:
                conn.execute(body)
            conn.execute("CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
                         "applied_at timestamptz NOT NULL DEFAULT now())")
            for version, name, _ in before:
                conn.execute("INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name))
            kept = conn.execute("INSERT INTO documents (title, filename, sha256, size_bytes, page_count, allowed_roles)"
                                " VALUES ('Kanun', 'k.pdf', %s, 1, 1, ARRAY['isg']) RETURNING id",
                                (SHA_LAW,)).fetchone()[0]
            old_sources = json.dumps([{"rank": 1, "document_id": kept, "title": "Kanun", "locator": "s. 3"},
                                      {"rank": 2, "document_id": 987654, "title": "Silinen", "locator": "s. 1"}])
            conn.execute("INSERT INTO questions (username, role, question, status, outcome, sources) VALUES "
                         "('ali', 'isg', 'soru bir', 'answered', 'answer', %s::jsonb), "
                         "('veli', 'personel', 'soru iki', 'needs_review', 'refused', '[]')", (old_sources,))
        assert dbmod.migrate(database)[0] == "023_audit_trail"
        with database.connection() as conn:
            rows = conn.execute("SELECT username, asker_roles, sources FROM questions ORDER BY username").fetchall()
        assert [(r[0], r[1]) for r in rows] == [("ali", ["isg"]), ("veli", ["personel"])]
        first, deleted = rows[0][2]
        assert (first["title"], first["locator"], first["sha256"]) == ("Kanun", "s. 3", SHA_LAW)
        assert first["uploaded_at"] and "sha256" not in deleted and deleted["title"] == "Silinen"
        assert rows[1][2] == []
    finally:
        dbmod.drop_namespace(database, namespace)


def test_a_question_spooled_before_the_audit_trail_is_written_with_its_role_and_versions(db, world, tmp_path) -> None:
    """A spool file written by the previous version (no asker_roles, no cited flags) is flushed
    after the upgrade: its one role stands for its roles, its passages get their versions."""
    from ragcore.answer import QuestionSpool

    record = question_record(world["ayse"], "Eski soru?", answer="cevap", status="answered", generator="extractive",
                             llm_called=False, sources=[_source(1, world["law"], "İş Kanunu", 3)], outcome="answer")
    record.pop("asker_roles")
    record["sources"] = json.dumps([{k: v for k, v in s.items() if k not in ("cited", "document_public_id")}
                                    for s in json.loads(record["sources"])])
    spool = QuestionSpool(tmp_path / "spool.jsonl")
    spool.append(record)
    assert spool.flush(db) == 1
    row = audit.audit_page(db, world["admin"], audit.AuditFilter(username="ayse")).rows[0]
    assert (row.question, row.roles) == ("Eski soru?", ("ik",))
    assert (row.passages[0].sha256, row.passages[0].use) == (SHA_LAW, "shown")
