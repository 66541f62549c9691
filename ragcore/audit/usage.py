"""The usage dashboard's figures, over the same filters as the trail: questions per day by
outcome, the outcomes' shares, the most cited documents, the questions most often left unanswered
(grouped as the review queue groups them: `ragcore.answer.question_key`) and the feedback.

Days are the server's local days (its UTC offset now), as the page shows times. Counted in SQL except the unanswered groups, whose key is Turkish text folding done in Python
over at most UNANSWERED_READ of the newest unanswered rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from ragcore.answer import question_key
from ragcore.audit.trail import EVERY_ROW, FILTER_SQL, OUTCOME_SQL, AuditFilter, require_audit_reader
from ragcore.core import User
from ragcore.store import Database

TOP_DOCUMENTS = 10
TOP_UNANSWERED = 10
UNANSWERED_READ = 5000  # the newest unanswered rows grouped (a busy month of misses)

PER_DAY_SQL = f"""
SELECT (q.created_at AT TIME ZONE %(offset)s::interval)::date AS day, {OUTCOME_SQL} AS outcome, count(*)
FROM questions q {FILTER_SQL}
GROUP BY 1, 2 ORDER BY 1, 2"""
FEEDBACK_SQL = f"""
SELECT coalesce(q.feedback, 0), count(*) FROM questions q {FILTER_SQL}
GROUP BY 1 ORDER BY 1"""
# A passage counts as cited when the answer cites it; a row written before the log told cited
# from unused counts every passage of an answer.
CITED_SQL = f"""
SELECT (s->>'document_id')::bigint AS key,
       (array_agg(s->>'title' ORDER BY q.created_at DESC))[1] AS title,
       count(DISTINCT q.id) AS questions
FROM questions q CROSS JOIN LATERAL jsonb_array_elements(q.sources) s
{FILTER_SQL} AND q.status <> 'error' AND q.outcome = 'answer' AND coalesce((s->>'cited')::boolean, true)
  AND s->>'document_id' ~ '^[0-9]+$'
GROUP BY 1 ORDER BY 3 DESC, 2 LIMIT %(top)s"""
UNANSWERED_SQL = f"""
SELECT q.question, q.created_at FROM questions q
{FILTER_SQL} AND q.status <> 'error' AND q.outcome IN ('refused', 'closest')
ORDER BY q.created_at DESC LIMIT %(read)s"""


@dataclass(frozen=True)
class UnansweredGroup:
    question: str  # the newest wording
    count: int
    last_asked: datetime


@dataclass(frozen=True)
class Usage:
    per_day: list[tuple[date, str, int]]  # (day, outcome, questions)
    outcomes: dict[str, int]  # outcome -> questions
    cited_documents: list[tuple[str, int]]  # (title, questions whose answer cited it), most first
    unanswered: list[UnansweredGroup]  # most asked first
    feedback: dict[int, int]  # 1 up, -1 down, 0 none -> questions

    @property
    def total(self) -> int:
        return sum(self.outcomes.values())


def group_unanswered(rows: list[tuple[str, datetime]], top: int = TOP_UNANSWERED) -> list[UnansweredGroup]:
    """Rows (question, asked at), newest first, grouped by `question_key`; the most asked first."""
    groups: dict[str, list[tuple[str, datetime]]] = {}
    for question, asked in rows:
        groups.setdefault(question_key(question), []).append((question, asked))
    ranked = sorted(groups.values(), key=lambda g: (-len(g), -g[0][1].timestamp()))
    return [UnansweredGroup(g[0][0], len(g), g[0][1]) for g in ranked[:top]]


def usage(db: Database, reader: User, filters: AuditFilter = EVERY_ROW) -> Usage:
    """The dashboard's figures for the rows the filters match."""
    require_audit_reader(reader)
    params = filters.params()
    with db.connection() as conn:
        per_day = [(r[0], r[1] or "error", r[2]) for r in conn.execute(PER_DAY_SQL, params).fetchall()]
        feedback = dict(conn.execute(FEEDBACK_SQL, params).fetchall())
        cited = [(r[1] or "", r[2]) for r in conn.execute(CITED_SQL, {**params, "top": TOP_DOCUMENTS}).fetchall()]
        unanswered = conn.execute(UNANSWERED_SQL, {**params, "read": UNANSWERED_READ}).fetchall()
    outcomes: dict[str, int] = {}
    for _day, outcome, n in per_day:
        outcomes[outcome] = outcomes.get(outcome, 0) + n
    return Usage(per_day, outcomes, cited, group_unanswered(unanswered), feedback)
