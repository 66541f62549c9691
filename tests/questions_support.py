"""The questions log as a test reads it: straight from the table the answer service writes.

The app writes a row from a `question_record`: at once (`insert_question`, the answer service) or
from the spool once the database is back, and reads rows only through the review queue
(`review_queue`). A test that checks what an answer left behind (its status, sources, timings,
error) reads the row itself.
"""

from __future__ import annotations

from types import SimpleNamespace

from psycopg.rows import dict_row

from ragcore.store import Database

USER_ROWS_SQL = "SELECT * FROM questions WHERE username = %(username)s ORDER BY created_at DESC, id DESC"


def logged_questions(db: Database, username: str) -> list[SimpleNamespace]:
    """Every logged row of one user, newest first, with the table's column names as attributes."""
    with db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
        return [SimpleNamespace(**row | {"public_id": str(row["public_id"])})
                for row in cur.execute(USER_ROWS_SQL, {"username": username}).fetchall()]
