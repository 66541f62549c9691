"""The conversations and their turns (migration 020): every statement that reads or writes them.

Every statement names the owner (`username = …`) beside the public id, so somebody else's
conversation and a missing one are the same "no row" — one query either way — and nothing here
reads a conversation for anyone but its owner: an admin included, whose review queue is the
questions log's (`ragcore.answer.review_queue`). A conversation untouched for the retention
period is no longer read (`_LIVE`) even before the retention job deletes it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

import psycopg
from psycopg.types.json import Jsonb

from ragcore.conversations.models import Citation, Conversation, DocumentVersion, Turn
from ragcore.store import Database

_LIVE = "c.updated_at > now() - make_interval(days => %(days)s)"
_COLUMNS = """c.id, c.public_id::text, c.title, c.created_at, c.updated_at,
              (SELECT count(*) FROM conversation_turns t WHERE t.conversation_id = c.id)"""

INSERT_SQL = """
INSERT INTO conversations (username, title) VALUES (%(username)s, %(title)s)
RETURNING id, public_id::text, title, created_at, updated_at, 0"""
FIND_SQL = f"""
SELECT {_COLUMNS} FROM conversations c
WHERE c.public_id = %(public_id)s::uuid AND c.username = %(username)s AND {_LIVE}"""
LOCK_SQL = FIND_SQL + "\nFOR UPDATE OF c"
LIST_SQL = f"""
SELECT {_COLUMNS} FROM conversations c
WHERE c.username = %(username)s AND {_LIVE}
ORDER BY c.updated_at DESC, c.id DESC
LIMIT %(limit)s"""
TURNS_SQL = """
SELECT * FROM (
    SELECT t.position, t.question, t.resolved_question, t.rewrite_method, t.answer, t.status, t.outcome,
           t.citations, q.public_id::text, t.created_at
    FROM conversation_turns t LEFT JOIN questions q ON q.id = t.question_id
    WHERE t.conversation_id = %(id)s
    ORDER BY t.position DESC
    LIMIT %(limit)s) AS latest
ORDER BY position"""
# The log row is linked only when it is the owner's own question.
INSERT_TURN_SQL = """
INSERT INTO conversation_turns (conversation_id, position, question, resolved_question, rewrite_method, answer,
                                status, outcome, citations, question_id)
VALUES (%(id)s, %(position)s, %(question)s, %(resolved)s, %(method)s, %(answer)s, %(status)s, %(outcome)s,
        %(citations)s,
        (SELECT q.id FROM questions q WHERE q.public_id = %(question_id)s::uuid AND q.username = %(username)s))
RETURNING created_at"""
TOUCH_SQL = "UPDATE conversations SET updated_at = now() WHERE id = %(id)s"
RENAME_SQL = f"""
UPDATE conversations c SET title = %(title)s
WHERE c.public_id = %(public_id)s::uuid AND c.username = %(username)s AND {_LIVE}
RETURNING {_COLUMNS}"""
DELETE_SQL = """
DELETE FROM conversations WHERE public_id = %(public_id)s::uuid AND username = %(username)s RETURNING id"""
EXPIRE_SQL = "DELETE FROM conversations WHERE updated_at <= now() - make_interval(days => %(days)s)"
EXPIRED_SQL = "SELECT EXISTS (SELECT 1 FROM conversations WHERE updated_at <= now() - make_interval(days => %(days)s))"


def _conversation(row: tuple) -> tuple[int, Conversation]:
    return row[0], Conversation(id=row[1], title=row[2], created_at=row[3], updated_at=row[4], turn_count=row[5])


def create(conn: psycopg.Connection, username: str, title: str) -> tuple[int, Conversation]:
    """A new, empty conversation of `username`; (its key, it)."""
    return _conversation(conn.execute(INSERT_SQL, {"username": username, "title": title}).fetchone())


def find(db: Database, username: str, public_id: str, days: int) -> tuple[int, Conversation] | None:
    with db.connection() as conn:
        row = conn.execute(FIND_SQL, {"public_id": public_id, "username": username, "days": days}).fetchone()
    return _conversation(row) if row else None


def lock(conn: psycopg.Connection, username: str, public_id: str, days: int) -> tuple[int, Conversation] | None:
    """The conversation, locked until the caller's transaction ends (turns are numbered under it)."""
    row = conn.execute(LOCK_SQL, {"public_id": public_id, "username": username, "days": days}).fetchone()
    return _conversation(row) if row else None


def newest(db: Database, username: str, days: int, limit: int) -> list[Conversation]:
    with db.connection() as conn:
        rows = conn.execute(LIST_SQL, {"username": username, "days": days, "limit": limit}).fetchall()
    return [_conversation(row)[1] for row in rows]


def turns(db: Database, key: int, limit: int) -> list[Turn]:
    """The conversation's last `limit` turns, oldest first."""
    with db.connection() as conn:
        rows = conn.execute(TURNS_SQL, {"id": key, "limit": limit}).fetchall()
    return [Turn(question=r[1], resolved_question=r[2], method=r[3], answer_text=r[4], status=r[5], outcome=r[6],
                 citations=tuple(_citation(c) for c in _json(r[7])), position=r[0], question_id=r[8],
                 created_at=r[9]) for r in rows]


def insert_turn(conn: psycopg.Connection, key: int, position: int, turn: Turn, username: str) -> Turn:
    """Store `turn` as number `position` and touch its conversation (inside the caller's lock)."""
    created = conn.execute(INSERT_TURN_SQL, {
        "id": key, "position": position, "question": turn.question, "resolved": turn.resolved_question,
        "method": turn.method, "answer": turn.answer_text, "status": turn.status, "outcome": turn.outcome,
        "citations": Jsonb([citation_record(c) for c in turn.citations]), "question_id": turn.question_id,
        "username": username}).fetchone()[0]
    conn.execute(TOUCH_SQL, {"id": key})
    return replace(turn, position=position, created_at=created)


def rename(db: Database, username: str, public_id: str, title: str, days: int) -> Conversation | None:
    with db.connection() as conn:
        row = conn.execute(RENAME_SQL, {"title": title, "public_id": public_id, "username": username,
                                        "days": days}).fetchone()
    return _conversation(row)[1] if row else None


def delete(db: Database, username: str, public_id: str) -> bool:
    """Delete the owner's conversation and its turns; False when there is none to delete."""
    with db.connection() as conn:
        return conn.execute(DELETE_SQL, {"public_id": public_id, "username": username}).fetchone() is not None


def any_expired(db: Database, days: int) -> bool:
    with db.connection() as conn:
        return conn.execute(EXPIRED_SQL, {"days": days}).fetchone()[0]


def delete_expired(db: Database, days: int) -> int:
    """Delete every conversation untouched for `days` days, with its turns; how many went."""
    with db.connection() as conn:
        return conn.execute(EXPIRE_SQL, {"days": days}).rowcount


# ----------------------------------------------------------------------------- citations as JSON


def citation_record(citation: Citation) -> dict:
    """What the turn row keeps of a citation: what was shown, and the keys the code checks by."""
    return {**citation.as_dict(), "chunk_id": citation.chunk_id, "document_key": citation.document_key}


def _citation(record: dict) -> Citation:
    version = record.get("version")
    return Citation(
        number=int(record["number"]), document_id=record.get("document_id") or "", title=record.get("title") or "",
        article=record.get("article"), heading=record.get("heading") or "", page_start=record.get("page_start") or 0,
        page_end=record.get("page_end") or 0, locator=record.get("locator") or "",
        locator_kind=record.get("locator_kind") or "page", filename=record.get("filename") or "",
        version=DocumentVersion(version["sha256"], _moment(version.get("uploaded_at")), version.get("number"))
        if version else None,
        chunk_id=record.get("chunk_id"), document_key=record.get("document_key"))


def _moment(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _json(value: object) -> list[dict]:
    return value if isinstance(value, list) else json.loads(value or "[]")  # type: ignore[arg-type]
