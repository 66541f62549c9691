"""The questions log: every asked question with its outcome, feedback and review state.

The review queue is what an admin works through: questions Dayanak could not answer
(needs_review) and answers a user rated down, newest first, until marked resolved.
A user names their question by its public id (`insert_question` returns it, `set_feedback`
takes it); the bigint key, a count of everybody's questions, stays with the code.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ragcore.core import (
    OUTCOMES,
    STATUS_ANSWERED,
    STATUS_ERROR,
    STATUS_FALLBACK,
    STATUS_NEEDS_REVIEW,
    Source,
    User,
    parse_public_id,
    sanitize,
)
from ragcore.store import Database

STATUSES = (STATUS_ANSWERED, STATUS_FALLBACK, STATUS_NEEDS_REVIEW, STATUS_ERROR)
MAX_COMMENT_CHARS = 2000

INSERT_SQL = """
INSERT INTO questions (user_id, username, role, question, answer, status, generator, llm_called, sources,
                       retrieval_ms, first_token_ms, total_ms, error, outcome, created_at)
VALUES (%(user_id)s, %(username)s, %(role)s, %(question)s, %(answer)s, %(status)s, %(generator)s,
        %(llm_called)s, %(sources)s::jsonb, %(retrieval_ms)s, %(first_token_ms)s, %(total_ms)s, %(error)s,
        %(outcome)s, %(created_at)s::timestamptz)
RETURNING public_id::text"""

# A question kept in the spool while the database was down: inserted once, even when a flush is
# repeated after a crash (same user, question and moment = same row); the user may be gone by now.
SPOOLED_INSERT_SQL = """
INSERT INTO questions (user_id, username, role, question, answer, status, generator, llm_called, sources,
                       retrieval_ms, first_token_ms, total_ms, error, outcome, created_at)
SELECT (SELECT id FROM users WHERE id = %(user_id)s), %(username)s, %(role)s, %(question)s, %(answer)s,
       %(status)s, %(generator)s, %(llm_called)s, %(sources)s::jsonb, %(retrieval_ms)s, %(first_token_ms)s,
       %(total_ms)s, %(error)s, %(outcome)s, %(created_at)s::timestamptz
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


def source_record(source: Source) -> dict:
    """What the log keeps of a cited source: the database keys of its chunk and document, so
    audits can trace it (the log is read inside the server only; older rows hold the same keys)."""
    return {**source.as_dict(), "document_id": source.document_id, "chunk_id": source.chunk_id}


def question_record(
    user: User,
    question: str,
    *,
    answer: str | None,
    status: str,
    generator: str | None,
    llm_called: bool,
    sources: Sequence[Source] = (),
    retrieval_ms: float | None = None,
    first_token_ms: float | None = None,
    total_ms: float | None = None,
    error: str | None = None,
    outcome: str | None = None,
) -> dict:
    """One row of the log as plain JSON-able values (what the spool keeps while the database is down).

    `created_at` is the moment of asking, so a question written later keeps its place in time.
    """
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}")
    if outcome not in (None, *OUTCOMES):
        raise ValueError(f"unknown outcome {outcome!r}")
    return {
        "user_id": user.id, "username": user.username, "role": user.role, "question": question,
        "answer": answer, "status": status, "generator": generator, "llm_called": llm_called,
        "sources": json.dumps([source_record(s) for s in sources], ensure_ascii=False),
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


def mark_resolved(db: Database, question_id: int, by: str) -> None:
    with db.connection() as conn:
        row = conn.execute(RESOLVE_SQL, {"id": question_id, "by": by}).fetchone()
    if row is None:
        raise QuestionLogError("Bu soru bulunamadı ya da zaten çözüldü olarak işaretlenmiş.")
