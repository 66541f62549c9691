"""The questions log read as an audit trail: who asked what, when, with which roles, what they were
told and exactly which passages (document, page, version) they were shown.

Every read takes the reader and refuses anyone who is neither an admin nor an auditor
(`can_read_audit`) before a statement runs, so no caller can hand a normal user the trail by
mistake. The filters are one WHERE clause (`FILTER_SQL`) shared by the page, the count and the CSV
export; each filter left empty matches every row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from ragcore.core import OUTCOME_CLOSEST, ROLE_LABELS, User, format_date, parse_public_id
from ragcore.store import Database

AUDITOR_ROLE = "denetci"
AUDITOR_LABEL = "Denetçi"
PAGE_SIZE = 50
MAX_PAGE_SIZE = 200  # rows per page of the trail (page and API); the CSV export is for more
OUTCOME_ERROR = "error"  # a failed question: status 'error', no outcome
OUTCOME_LABELS = {"answer": "Cevap verildi", "closest": "En yakın parçalar gösterildi",
                  "refused": "Cevap yok (dokümanlarda bulunamadı)", OUTCOME_ERROR: "Hata"}
USE_CITED = "cited"  # the answer cites it
USE_UNUSED = "unused"  # shown under the answer as not used
USE_CLOSEST = "closest"  # one of the closest passages (no answer)
USE_SHOWN = "shown"  # a row written before the log told cited from unused
USE_LABELS = {USE_CITED: "cevapta kaynak", USE_UNUSED: "gösterildi, kullanılmadı",
              USE_CLOSEST: "en yakın parça", USE_SHOWN: "gösterildi"}


class AuditForbidden(PermissionError):
    """The reader is neither an admin nor an auditor; the message is Turkish."""

    def __init__(self) -> None:
        super().__init__("Denetim kaydını yalnızca yönetici ve denetçi görebilir.")


class AuditFilterError(ValueError):
    """A filter cannot be used (a date range that ends before it starts); the message is Turkish."""


def can_read_audit(user: User | None) -> bool:
    """The one rule: an admin or an auditor (role `denetci`) reads the trail; nobody else."""
    return user is not None and (user.is_admin or AUDITOR_ROLE in user.roles)


def role_label(role: str) -> str:
    """A role's Turkish name ("Denetçi" until roles are data and carry their own labels)."""
    return ROLE_LABELS.get(role) or (AUDITOR_LABEL if role == AUDITOR_ROLE else role)


def require_audit_reader(user: User | None) -> User:
    if not can_read_audit(user):
        raise AuditForbidden()
    assert user is not None
    return user


@dataclass(frozen=True)
class AuditFilter:
    """Which rows: each field None matches every row. `document` is a document's database key
    (the log keeps keys, so a deleted document's rows are still found); dates are whole days."""

    username: str | None = None
    role: str | None = None
    document: int | None = None
    since: date | None = None
    until: date | None = None
    outcome: str | None = None

    def params(self) -> dict:
        if self.since and self.until and self.until < self.since:
            raise AuditFilterError("Bitiş tarihi başlangıç tarihinden önce olamaz; tarih aralığını düzeltin.")
        if self.outcome is not None and self.outcome not in OUTCOME_LABELS:
            raise AuditFilterError(f"Bilinmeyen sonuç: {self.outcome}. Geçerli sonuçlar: {', '.join(OUTCOME_LABELS)}.")
        return {"username": self.username or None, "role": self.role or None, "document": self.document,
                "since": _midnight(self.since), "until": _midnight(self.until, after=True), "outcome": self.outcome,
                "offset": datetime.now().astimezone().utcoffset()}


def _midnight(day: date | None, after: bool = False) -> datetime | None:
    """The day's start (or, `after`, the next day's) in the server's local time zone: the days the
    page shows (`formatting.date_time`) are the days the filter means, whatever the database's zone."""
    if day is None:
        return None
    return datetime.combine(day + timedelta(days=1) if after else day, time.min).astimezone()


EVERY_ROW = AuditFilter()


@dataclass(frozen=True)
class ShownPassage:
    """One passage the asker was shown, as the log recorded it at that moment."""

    rank: int
    title: str
    filename: str
    locator: str
    article: str | None
    document_key: int | None  # the database key, for the code (filters); never shown
    document_id: str | None  # the public id (rows written before the audit trail lack it)
    sha256: str | None
    uploaded_at: datetime | None
    use: str

    def version(self, full: bool = False) -> str:
        """"sürüm 3f2a9c1e4b7d · 05.01.2026" (the file's sha256, cut to 12 unless `full`, and its
        upload day), or "sürüm bilinmiyor" (deleted before the log recorded versions)."""
        if not self.sha256:
            return "sürüm bilinmiyor"
        day = f" · {format_date(self.uploaded_at)}" if self.uploaded_at else ""
        return f"sürüm {self.sha256 if full else self.sha256[:12]}{day}"

    def label(self, full: bool = False) -> str:
        """"[1] Kanun · Madde 5 · s. 7 · sürüm 3f2a9c1e4b7d · 05.01.2026 · cevapta kaynak"."""
        parts = [f"[{self.rank}] {self.title}", *([self.article] if self.article else []), self.locator,
                 self.version(full), USE_LABELS[self.use]]
        return " · ".join(parts)


@dataclass(frozen=True)
class AuditRow:
    question_id: str  # the public id
    asked_at: datetime
    username: str
    roles: tuple[str, ...]
    question: str
    outcome: str  # a key of OUTCOME_LABELS
    answer: str | None
    error: str | None
    passages: tuple[ShownPassage, ...]
    feedback: int | None
    feedback_comment: str | None

    @property
    def outcome_label(self) -> str:
        return OUTCOME_LABELS[self.outcome]


@dataclass(frozen=True)
class AuditPage:
    rows: list[AuditRow]
    total: int  # rows matching the filters
    page: int  # 1-based
    page_size: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.page_size))


OUTCOME_SQL = "CASE WHEN q.status = 'error' THEN 'error' ELSE q.outcome END"
FILTER_SQL = f"""
WHERE (%(username)s::text IS NULL OR q.username = %(username)s)
  AND (%(role)s::text IS NULL OR %(role)s = ANY (q.asker_roles))
  AND (%(document)s::bigint IS NULL
       OR q.sources @> jsonb_build_array(jsonb_build_object('document_id', %(document)s::bigint)))
  AND (%(since)s::timestamptz IS NULL OR q.created_at >= %(since)s::timestamptz)
  AND (%(until)s::timestamptz IS NULL OR q.created_at < %(until)s::timestamptz)
  AND (%(outcome)s::text IS NULL OR {OUTCOME_SQL} = %(outcome)s)"""
# The shown passages without their text (the trail names document, page and version; the text is
# the document's, and reading it back for 100,000 rows doubled an export's time).
_PASSAGES = """(SELECT coalesce(jsonb_agg(e.source - 'text' ORDER BY e.ordinal), '[]'::jsonb)
                FROM jsonb_array_elements(q.sources) WITH ORDINALITY AS e(source, ordinal))"""
_COLUMNS = f"""q.public_id::text, q.created_at, q.username, q.asker_roles, q.question, {OUTCOME_SQL}, q.answer,
               q.error, {_PASSAGES}, q.feedback, q.feedback_comment"""
PAGE_SQL = f"""
SELECT {_COLUMNS} FROM questions q {FILTER_SQL}
ORDER BY q.created_at DESC, q.id DESC
LIMIT %(limit)s OFFSET %(offset)s"""
COUNT_SQL = f"SELECT count(*) FROM questions q {FILTER_SQL}"
ROWS_SQL = f"""
SELECT {_COLUMNS} FROM questions q {FILTER_SQL}
ORDER BY q.created_at DESC, q.id DESC
LIMIT %(limit)s"""
# Every document the log shows passages of, deleted ones too (by the title the log kept last).
DOCUMENTS_SQL = """
SELECT DISTINCT ON (shown.key) shown.key, shown.title, d.id IS NOT NULL
FROM (SELECT (s->>'document_id')::bigint AS key, s->>'title' AS title, q.created_at
      FROM questions q, jsonb_array_elements(q.sources) s
      WHERE s->>'document_id' ~ '^[0-9]+$') shown
LEFT JOIN documents d ON d.id = shown.key
ORDER BY shown.key, shown.created_at DESC"""
USERS_SQL = "SELECT DISTINCT username FROM questions ORDER BY username"


def _use(outcome: str, record: dict) -> str:
    if outcome == OUTCOME_CLOSEST:
        return USE_CLOSEST
    if "cited" not in record:
        return USE_SHOWN
    return USE_CITED if record["cited"] else USE_UNUSED


def _moment(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def _passage(outcome: str, index: int, record: dict) -> ShownPassage:
    key = record.get("document_id")
    return ShownPassage(
        rank=int(record.get("rank") or index), title=str(record.get("title") or ""),
        filename=str(record.get("filename") or ""), locator=str(record.get("locator") or ""),
        article=record.get("article"), document_key=key if isinstance(key, int) else None,
        document_id=record.get("document_public_id") or None,
        sha256=record.get("sha256"), uploaded_at=_moment(record.get("uploaded_at")), use=_use(outcome, record))


def _row(row: tuple) -> AuditRow:
    outcome = row[5] or OUTCOME_ERROR
    sources = row[8] if isinstance(row[8], list) else json.loads(row[8] or "[]")
    return AuditRow(question_id=row[0], asked_at=row[1], username=row[2], roles=tuple(row[3] or ()),
                    question=row[4], outcome=outcome, answer=row[6], error=row[7],
                    passages=tuple(_passage(outcome, i, s) for i, s in enumerate(sources, start=1)),
                    feedback=row[9], feedback_comment=row[10])


def audit_page(db: Database, reader: User, filters: AuditFilter = EVERY_ROW, page: int = 1,
               page_size: int = PAGE_SIZE) -> AuditPage:
    """One page of the matching rows, newest first; page_size is capped at MAX_PAGE_SIZE."""
    require_audit_reader(reader)
    params = filters.params()
    size = max(1, min(int(page_size), MAX_PAGE_SIZE))
    page = max(1, int(page))
    with db.connection() as conn:
        total = conn.execute(COUNT_SQL, params).fetchone()[0]
        rows = conn.execute(PAGE_SQL, {**params, "limit": size, "offset": (page - 1) * size}).fetchall()
    return AuditPage([_row(r) for r in rows], total, page, size)


def audit_rows(db: Database, reader: User, filters: AuditFilter, limit: int, batch: int = 500) -> Iterator[AuditRow]:
    """At most `limit` matching rows, newest first, read in batches through a server-side cursor
    (an export of 100,000 rows never sits in memory at once)."""
    require_audit_reader(reader)
    params = {**filters.params(), "limit": limit}
    with db.connection() as conn, conn.transaction(), conn.cursor(name="audit_export") as cursor:
        cursor.itersize = batch
        for row in cursor.execute(ROWS_SQL, params):
            yield _row(row)


def count_rows(db: Database, reader: User, filters: AuditFilter) -> int:
    require_audit_reader(reader)
    with db.connection() as conn:
        return conn.execute(COUNT_SQL, filters.params()).fetchone()[0]


@dataclass(frozen=True)
class ShownDocument:
    key: int
    title: str
    stored: bool  # False: deleted since it was shown

    @property
    def label(self) -> str:
        return self.title if self.stored else f"{self.title} (silinmiş)"


def shown_documents(db: Database, reader: User) -> list[ShownDocument]:
    """The documents the log holds passages of (the document filter's choices), by title."""
    require_audit_reader(reader)
    with db.connection() as conn:
        rows = conn.execute(DOCUMENTS_SQL).fetchall()
    return sorted((ShownDocument(*r) for r in rows), key=lambda d: (d.title.casefold(), d.key))


def asking_users(db: Database, reader: User) -> list[str]:
    """Everyone the log holds a question of (the user filter's choices)."""
    require_audit_reader(reader)
    with db.connection() as conn:
        return [r[0] for r in conn.execute(USERS_SQL).fetchall()]


def document_key(db: Database, public_id: str) -> int | None:
    """The key of a stored document named by its public id (the API's document filter)."""
    wanted = parse_public_id(public_id)
    if wanted is None:
        return None
    with db.connection() as conn:
        row = conn.execute("SELECT id FROM documents WHERE public_id = %s::uuid", (wanted,)).fetchone()
    return row[0] if row else None


# ----------------------------------------------------------------------------- retention

EXPIRE_SQL = "DELETE FROM questions WHERE created_at <= now() - make_interval(days => %(days)s)"
EXPIRED_SQL = "SELECT EXISTS (SELECT 1 FROM questions WHERE created_at <= now() - make_interval(days => %(days)s))"


def expired_audit_rows(db: Database, days: int) -> bool:
    """Whether any row is past AUDIT_RETENTION_DAYS (then the job has work); never with 0 (forever)."""
    if days <= 0:
        return False
    with db.connection() as conn:
        return conn.execute(EXPIRED_SQL, {"days": days}).fetchone()[0]


def expire_audit_rows(db: Database, days: int) -> int:
    """Delete every row of the questions log older than `days` days; how many went (0 keeps all).
    A saved conversation's turn keeps its own copy of the answer (its link to the row becomes NULL)."""
    if days <= 0:
        return 0
    with db.connection() as conn:
        return conn.execute(EXPIRE_SQL, {"days": days}).rowcount
