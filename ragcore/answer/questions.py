"""The questions log: every asked question with its outcome, feedback and review state.

The review queue is what an admin works through: questions Dayanak could not answer
(needs_review) and answers a user rated down, until marked resolved. The admin reads it in
groups (`review_groups`): the same question asked again, or nearly so, is one group with its
count, first and last time and the roles that asked, ranked by how often it was asked and
how often it was rated down; questions the gate refused with nothing related in the
documents (a weather forecast, the canteen's menu) are set apart as off-topic. The queue is
the admin's alone: nothing a user sees depends on what other users asked.
The whole log, every user's rows, is read by an admin or an auditor only, as the audit trail
(`ragcore.audit`, which also deletes rows past AUDIT_RETENTION_DAYS); each row records the
asker's roles at that moment and, per shown passage, whether the answer cited it and its
document's version (migration 023).
A user names their question by its public id (`insert_question` returns it, `set_feedback`
takes it); the bigint key, a count of everybody's questions, stays with the code.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ragcore.core import (
    OUTCOME_REFUSED,
    OUTCOMES,
    PREFIX_LENGTH,
    ROLES,
    STATUS_ANSWERED,
    STATUS_ERROR,
    STATUS_FALLBACK,
    STATUS_NEEDS_REVIEW,
    Source,
    User,
    fold_ascii,
    parse_public_id,
    sanitize,
    words,
)
from ragcore.store import Database

STATUSES = (STATUS_ANSWERED, STATUS_FALLBACK, STATUS_NEEDS_REVIEW, STATUS_ERROR)
MAX_COMMENT_CHARS = 2000

# Each shown passage keeps its document's version of that moment (sha256, upload date; migration
# 023), looked up in the same statement: the audit trail says exactly which file was shown.
_VERSIONED_SOURCES = """(
    SELECT coalesce(jsonb_agg(CASE WHEN d.id IS NULL THEN e.source
                                   ELSE e.source || jsonb_build_object('sha256', d.sha256, 'uploaded_at', d.created_at)
                              END ORDER BY e.ordinal), '[]'::jsonb)
    FROM jsonb_array_elements(%(sources)s::jsonb) WITH ORDINALITY AS e(source, ordinal)
    LEFT JOIN documents d ON d.id::text = e.source->>'document_id')"""
# A record spooled before migration 023 has no asker_roles: its reader key stands for them
# (one role, or the roles joined by '+').
_ASKER_ROLES = "coalesce(%(asker_roles)s::text[], string_to_array(%(role)s, '+'))"

INSERT_SQL = f"""
INSERT INTO questions (user_id, username, role, asker_roles, question, answer, status, generator, llm_called,
                       sources, retrieval_ms, first_token_ms, total_ms, error, outcome, created_at)
VALUES (%(user_id)s, %(username)s, %(role)s, {_ASKER_ROLES}, %(question)s, %(answer)s, %(status)s, %(generator)s,
        %(llm_called)s, {_VERSIONED_SOURCES}, %(retrieval_ms)s, %(first_token_ms)s, %(total_ms)s, %(error)s,
        %(outcome)s, %(created_at)s::timestamptz)
RETURNING public_id::text"""

# A question kept in the spool while the database was down: inserted once, even when a flush is
# repeated after a crash (same user, question and moment = same row); the user may be gone by now.
SPOOLED_INSERT_SQL = f"""
INSERT INTO questions (user_id, username, role, asker_roles, question, answer, status, generator, llm_called,
                       sources, retrieval_ms, first_token_ms, total_ms, error, outcome, created_at)
SELECT (SELECT id FROM users WHERE id = %(user_id)s), %(username)s, %(role)s, {_ASKER_ROLES}, %(question)s,
       %(answer)s, %(status)s, %(generator)s, %(llm_called)s, {_VERSIONED_SOURCES}, %(retrieval_ms)s,
       %(first_token_ms)s, %(total_ms)s, %(error)s, %(outcome)s, %(created_at)s::timestamptz
WHERE NOT EXISTS (SELECT 1 FROM questions
                  WHERE username = %(username)s AND question = %(question)s
                    AND created_at = %(created_at)s::timestamptz)"""

COLUMNS = """id, username, role, question, answer, status, generator, llm_called, sources, retrieval_ms,
             first_token_ms, total_ms, error, feedback, feedback_comment, resolved_at, resolved_by, created_at,
             outcome, public_id::text"""

FEEDBACK_SQL = """
UPDATE questions SET feedback = %(value)s, feedback_comment = %(comment)s
WHERE public_id = %(public_id)s::uuid AND username = %(username)s
RETURNING id"""

REVIEW_SQL = f"""
SELECT {COLUMNS} FROM questions
WHERE resolved_at IS NULL AND (status = 'needs_review' OR feedback = -1)
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s"""

RESOLVE_SQL = """
UPDATE questions SET resolved_at = now(), resolved_by = %(by)s
WHERE id = %(id)s AND resolved_at IS NULL
RETURNING id"""

RESOLVE_MANY_SQL = """
UPDATE questions SET resolved_at = now(), resolved_by = %(by)s
WHERE id = ANY(%(ids)s) AND resolved_at IS NULL"""

# How many open items the grouped queue reads (newest first): a week of a busy company's misses.
GROUPED_LIMIT = 2000
# Question particles and courtesy words: "… mi?", "acaba …" ask the same as without them.
_PARTICLES = frozenset(fold_ascii(w) for w in """mi mı mu mü midir mıdır mudur müdür misin mısın miyim mıyım
                                                 acaba lütfen""".split())


class QuestionLogError(ValueError):
    """A feedback or review action was refused; the message is Turkish."""


@dataclass(frozen=True)
class LoggedQuestion:
    id: int
    username: str
    role: str
    question: str
    answer: str | None
    status: str
    generator: str | None
    llm_called: bool
    sources: list[dict]
    retrieval_ms: float | None
    first_token_ms: float | None
    total_ms: float | None
    error: str | None
    feedback: int | None
    feedback_comment: str | None
    resolved_at: datetime | None
    resolved_by: str | None
    created_at: datetime
    outcome: str | None = None  # answer | closest | refused; None for an error
    public_id: str = ""  # what the asker knows it by (widget keys too: they reach the browser)


def source_record(source: Source, cited: bool = False) -> dict:
    """What the log keeps of a shown source: the database keys of its chunk and document, so
    audits can trace it (the log is read inside the server only; older rows hold the same keys),
    and whether the answer cited it (`cited`; rows written before the audit trail lack it)."""
    return {**source.as_dict(), "document_id": source.document_id, "chunk_id": source.chunk_id,
            "document_public_id": source.document_public_id, "cited": cited}


def question_record(
    user: User,
    question: str,
    *,
    answer: str | None,
    status: str,
    generator: str | None,
    llm_called: bool,
    sources: Sequence[Source] = (),
    cited: Sequence[int] = (),
    retrieval_ms: float | None = None,
    first_token_ms: float | None = None,
    total_ms: float | None = None,
    error: str | None = None,
    outcome: str | None = None,
) -> dict:
    """One row of the log as plain JSON-able values (what the spool keeps while the database is down).

    `created_at` is the moment of asking, so a question written later keeps its place in time;
    `asker_roles` every role the asker held then, and `cited` the ranks of the sources the answer
    cites (the audit trail tells them from the passages shown but not used).
    """
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}")
    if outcome not in (None, *OUTCOMES):
        raise ValueError(f"unknown outcome {outcome!r}")
    return {
        "user_id": user.id, "username": user.username, "role": user.role, "asker_roles": list(user.roles),
        "question": question,
        "answer": answer, "status": status, "generator": generator, "llm_called": llm_called,
        "sources": json.dumps([source_record(s, s.rank in cited) for s in sources], ensure_ascii=False),
        "retrieval_ms": retrieval_ms, "first_token_ms": first_token_ms, "total_ms": total_ms, "error": error,
        "outcome": outcome, "created_at": datetime.now(UTC).isoformat(),
    }


def insert_question(db: Database, record: dict) -> str:
    """Write one row of the log (a `question_record`); returns its public id."""
    with db.connection() as conn:
        return conn.execute(INSERT_SQL, record).fetchone()[0]


def set_feedback(db: Database, question_id: str, username: str, value: int, comment: str | None = None) -> None:
    """Rate an answer +1/-1 by its public id; only the user who asked may rate it.

    Somebody else's question, an unknown id and text that is no id at all get the same refusal."""
    if value not in (-1, 1):
        raise QuestionLogError("Geri bildirim yalnızca olumlu (+1) ya da olumsuz (-1) olabilir.")
    comment = sanitize(comment or "").strip()[:MAX_COMMENT_CHARS] or None
    public_id = parse_public_id(question_id)
    row = None
    if public_id is not None:
        with db.connection() as conn:
            row = conn.execute(FEEDBACK_SQL, {"value": value, "comment": comment, "public_id": public_id,
                                              "username": username}).fetchone()
    if row is None:
        raise QuestionLogError("Bu soru bulunamadı ya da size ait değil; yalnızca kendi sorularınızı "
                               "değerlendirebilirsiniz.")


def _row(row: tuple) -> LoggedQuestion:
    return LoggedQuestion(*row[:8], row[8] if isinstance(row[8], list) else json.loads(row[8] or "[]"), *row[9:])


def review_queue(db: Database, limit: int = 200) -> list[LoggedQuestion]:
    """Unresolved questions needing an admin: needs_review or rated down, newest first."""
    with db.connection() as conn:
        return [_row(r) for r in conn.execute(REVIEW_SQL, {"limit": limit}).fetchall()]


def question_key(question: str) -> str:
    """What the same or a near-same question shares: its words lowercased the Turkish way, spelled
    without Turkish letters and cut to the lexical index's PREFIX_LENGTH letters, question particles
    left out, in their order. So "Maaşım yatmadı mı?", "maasim yatmadi" and "MAAŞIM YATMADI!" are one
    question, and "Maaş ne zaman yatar?" another. Nothing learned: two questions one word apart stay
    two groups, which the admin can resolve one after the other."""
    folded = [fold_ascii(w) for w in words(question)]
    key = " ".join(w[:PREFIX_LENGTH] for w in folded if w not in _PARTICLES)
    return key or " ".join(folded) or question.strip()


@dataclass(frozen=True)
class ReviewGroup:
    """Open review items that ask the same question (`question_key`), newest first."""

    key: str
    items: tuple[LoggedQuestion, ...]

    @property
    def newest(self) -> LoggedQuestion:
        return self.items[0]

    @property
    def question(self) -> str:
        """The newest wording."""
        return self.items[0].question

    @property
    def count(self) -> int:
        return len(self.items)

    @property
    def first_at(self) -> datetime:
        return self.items[-1].created_at

    @property
    def last_at(self) -> datetime:
        return self.items[0].created_at

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles that asked, in the order of ROLES."""
        asked = {item.role for item in self.items}
        return tuple(sorted(asked, key=lambda r: ROLES.index(r) if r in ROLES else len(ROLES)))

    @property
    def rated_down(self) -> int:
        return sum(1 for item in self.items if item.feedback == -1)

    @property
    def ids(self) -> list[int]:
        return [item.id for item in self.items]

    @property
    def off_topic(self) -> bool:
        """Every asking was refused by the gate with nothing related in the documents (never
        a closest-passages reply, never an answer rated down)."""
        return all(off_topic(item) for item in self.items)


def off_topic(item: LoggedQuestion) -> bool:
    """The gate's refusal: nothing the asker may read is related (`AnswerService._refused`)."""
    return item.status == STATUS_NEEDS_REVIEW and item.outcome == OUTCOME_REFUSED and item.feedback != -1


@dataclass(frozen=True)
class GroupedQueue:
    groups: list[ReviewGroup]  # the documents' gaps and the rated-down answers, most asked first
    off_topic: list[ReviewGroup]  # questions about nothing in the documents, most asked first

    @property
    def open_items(self) -> int:
        return sum(g.count for g in self.groups) + sum(g.count for g in self.off_topic)


def group_questions(items: Sequence[LoggedQuestion]) -> GroupedQueue:
    """Group open items by `question_key` and rank the groups: most asked first, then most rated
    down, then the most recently asked."""
    by_key: dict[str, list[LoggedQuestion]] = {}
    for item in sorted(items, key=lambda i: (i.created_at, i.id), reverse=True):
        by_key.setdefault(question_key(item.question), []).append(item)
    groups = sorted((ReviewGroup(key, tuple(found)) for key, found in by_key.items()),
                    key=lambda g: (-g.count, -g.rated_down, -g.last_at.timestamp(), g.key))
    return GroupedQueue([g for g in groups if not g.off_topic], [g for g in groups if g.off_topic])


def review_groups(db: Database, limit: int = GROUPED_LIMIT) -> GroupedQueue:
    """The open review queue, grouped and ranked (`group_questions`)."""
    return group_questions(review_queue(db, limit))


def mark_group_resolved(db: Database, question_ids: Sequence[int], by: str) -> int:
    """Resolve every open item among `question_ids` (a group); returns how many were open."""
    with db.connection() as conn:
        resolved = conn.execute(RESOLVE_MANY_SQL, {"ids": list(question_ids), "by": by}).rowcount
    if not resolved:
        raise QuestionLogError("Bu sorular bulunamadı ya da zaten çözüldü olarak işaretlenmiş.")
    return resolved


def resolve_alike(db: Database, question_id: int, by: str) -> int:
    """Resolve a question and every open item that asks the same (`question_key`): a document
    uploaded for one asking answers them all. Returns how many were resolved (0: none was open)."""
    with db.connection() as conn:
        row = conn.execute("SELECT question FROM questions WHERE id = %s", (question_id,)).fetchone()
    if row is None:
        return 0
    key = question_key(row[0])
    alike = [item.id for item in review_queue(db, GROUPED_LIMIT) if question_key(item.question) == key]
    with db.connection() as conn:
        return conn.execute(RESOLVE_MANY_SQL, {"ids": [question_id, *alike], "by": by}).rowcount


def mark_resolved(db: Database, question_id: int, by: str) -> None:
    with db.connection() as conn:
        row = conn.execute(RESOLVE_SQL, {"id": question_id, "by": by}).fetchone()
    if row is None:
        raise QuestionLogError("Bu soru bulunamadı ya da zaten çözüldü olarak işaretlenmiş.")
