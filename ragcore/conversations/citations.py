"""What a turn keeps of the sources its answer cited, and which of them a user may still read.

`turn_of` builds the turn the conversation stores (and the lab chains) from an answer: each cited
source with its article's heading (the line printed above "MADDE 74 –", which exports print and
the follow-up rules carried until round 16) and the version of its document it was read from (number, file and date). `readable_history` is the one place that
decides what of a stored turn a user sees now: a citation of a chunk the user's current role may
not read — the document deleted, its roles changed, the user's role changed — is dropped, the
answer drawn from it is replaced by `HIDDEN_ANSWER`, and a later rewrite that carried words from
that turn is shown as typed; so nothing of that document travels into a reopened conversation,
an export, a follow-up's rewrite or a condensation prompt. The check is the
chat's own (`ragcore.documents.readable_chunks`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from ragcore.conversations.condense import CONDENSE_TURNS
from ragcore.conversations.models import (
    HIDDEN_ANSWER,
    METHOD_LLM,
    METHOD_NONE,
    Citation,
    DocumentVersion,
    Resolution,
    Turn,
)
from ragcore.core import Answer, Source
from ragcore.documents import article_headings, readable_chunks
from ragcore.store import Database

VERSIONS_SQL = "SELECT id, sha256, created_at, version_no FROM documents WHERE id = ANY(%(ids)s)"
# The first chunk of each cited article: the one that holds its heading above "MADDE n –".
ARTICLE_STARTS_SQL = """
SELECT DISTINCT ON (document_id, article) document_id, article, text
FROM chunks WHERE document_id = ANY(%(documents)s) AND article = ANY(%(articles)s)
ORDER BY document_id, article, ordinal"""


def cited_sources(answer: Answer) -> list[Source]:
    """The sources the answer cites as [n], in their numbers' order."""
    cited = set(answer.cited)
    return sorted((s for s in answer.sources if s.rank in cited), key=lambda s: s.rank)


def _heading(text: str, article: str | None) -> str:
    """The article's own title: the last heading line above its "MADDE n –" line, or ""."""
    heading, starts = article_headings([text], [article])[0]
    lines = heading.splitlines()
    return lines[-1].strip() if starts and lines else ""


def citations_of(db: Database, answer: Answer) -> tuple[Citation, ...]:
    """The answer's cited sources as a turn keeps them: headings and versions looked up once."""
    sources = cited_sources(answer)
    if not sources:
        return ()
    documents = sorted({s.document_id for s in sources})
    articles = sorted({s.article for s in sources if s.article})
    with db.connection() as conn:
        versions = {row[0]: DocumentVersion(row[1], row[2], row[3])
                    for row in conn.execute(VERSIONS_SQL, {"ids": documents}).fetchall()}
        starts = {(row[0], row[1]): row[2] for row in conn.execute(
            ARTICLE_STARTS_SQL, {"documents": documents, "articles": articles}).fetchall()} if articles else {}
    return tuple(
        Citation(number=s.rank, document_id=s.document_public_id, title=s.title, article=s.article,
                 heading=_heading(starts.get((s.document_id, s.article), s.text), s.article),
                 page_start=s.page_start, page_end=s.page_end, locator=s.locator_label, locator_kind=s.locator_kind,
                 filename=s.filename, version=versions.get(s.document_id), chunk_id=s.chunk_id,
                 document_key=s.document_id)
        for s in sources)


def turn_of(db: Database, question: str, resolution: Resolution, answer: Answer) -> Turn:
    """The turn an asked question makes: as typed, as resolved, and what it was answered.

    The same record the conversation stores (`record_turn`) and the lab chains into the next
    question's history, so both carry the same subject."""
    return Turn(question=question.strip(), resolved_question=resolution.question, answer_text=answer.text,
                outcome=answer.outcome, citations=citations_of(db, answer),
                method=resolution.method if resolution.rewritten else METHOD_NONE, status=answer.status,
                question_id=answer.question_id)


def readable_history(db: Database, role: str, turns: Sequence[Turn]) -> list[Turn]:
    """`turns` as `role` may see them now (module docstring): unreadable citations dropped, and
    the answer of a turn that had one hidden."""
    readable = readable_chunks(db, _chunk_ids(turns), role)
    out: list[Turn] = []
    for turn in turns:
        kept = tuple(c for c in turn.citations if c.chunk_id is not None and c.chunk_id in readable)
        if len(kept) < len(turn.citations):
            turn = replace(turn, answer_text=HIDDEN_ANSWER, citations=kept, hidden=True)
        # A rewrite carried words of the turns before it (the model: the last few answers; the
        # rules, in turns stored before round 16: the last one's cited article): after a hidden
        # one, it is shown as typed.
        window = CONDENSE_TURNS if turn.method == METHOD_LLM else 1
        if turn.rewritten and any(t.hidden for t in out[-window:]):
            turn = replace(turn, resolved_question=turn.question, method=METHOD_NONE)
        out.append(turn)
    return out


def _chunk_ids(turns: Iterable[Turn]) -> set[int]:
    return {c.chunk_id for turn in turns for c in turn.citations if c.chunk_id is not None}
