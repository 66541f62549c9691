"""Role-scoped hybrid retrieval: pgvector cosine + BM25 over postings, fused in PostgreSQL.

Every statement carries the role predicate itself (admin reads all; otherwise the role must be
in `chunks.allowed_roles`), so no forbidden chunk is ever ranked, limited away or returned —
permission filtering after LIMIT is the bug this module exists to avoid.

The lexical leg is BM25Okapi exactly as `rank_bm25` computes it (k1 1.5, b 0.75, negative idf
replaced by 0.25 × the mean idf over the whole vocabulary), from `postings`, `lexicon` and
`lex_stats`; query terms come from `ragcore.text.lexical_tokens` in Python, never from SQL case
folding. Collection statistics are global (all chunks), so scores do not depend on the role;
only the candidates do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ragcore import measurements
from ragcore.config import ROLES, Settings
from ragcore.db import Database
from ragcore.models import Source
from ragcore.text import PREFIX_LENGTH, lexical_tokens, words

MODES = ("rrf", "weighted", "dense", "lexical")
RRF_K = 60
BM25_K1 = 1.5
BM25_B = 0.75
BM25_EPSILON = 0.25
MIN_CANDIDATES = 50  # per leg; fusion needs more than the k it returns


class RetrievalError(ValueError):
    """Bad retrieval input (unknown role or mode); the message is Turkish."""


# ----------------------------------------------------------------------------- SQL
# One predicate, used verbatim by every leg. `admin` is decided in SQL too, so there is no
# code path that forgets the filter.
ROLE_PREDICATE = "(%(role)s = 'admin' OR %(role)s = ANY(c.allowed_roles))"

# Dense leg: ORDER BY the distance operator so the HNSW index (iterative scan) serves it with
# the role filter applied during the scan, then rank the candidates.
DENSE_CTE = f"""
dense_hits AS (
    SELECT c.id, c.embedding <=> %(qvec)s AS distance
    FROM chunks c
    WHERE c.embedding IS NOT NULL AND {ROLE_PREDICATE}
    ORDER BY c.embedding <=> %(qvec)s
    LIMIT %(candidates)s
),
dense AS (
    SELECT id, 1 - distance AS score, row_number() OVER (ORDER BY distance, id) AS rnk
    FROM dense_hits
)"""

# Lexical leg: rank_bm25.BM25Okapi in SQL. The mean idf over the vocabulary (for the epsilon
# floor) is an uncorrelated scalar subquery, i.e. an InitPlan that PostgreSQL evaluates only
# when some query term really has a negative idf.
LEXICAL_CTE = f"""
stats AS (
    SELECT chunk_count::float8 AS n, total_length::float8 / NULLIF(chunk_count, 0) AS avgdl
    FROM lex_stats
),
qterms AS (
    SELECT term, count(*)::float8 AS qtf FROM unnest(%(terms)s::text[]) AS t(term) GROUP BY term
),
raw_idf AS (
    SELECT q.term, q.qtf, ln(s.n - l.df + 0.5) - ln(l.df + 0.5) AS idf
    FROM qterms q JOIN lexicon l ON l.term = q.term CROSS JOIN stats s
    WHERE l.df <= s.n
),
idf AS (
    SELECT term, qtf,
           CASE WHEN idf < 0 THEN %(epsilon)s * (
                    SELECT avg(ln(s2.n - l2.df + 0.5) - ln(l2.df + 0.5)) FROM lexicon l2, stats s2)
                ELSE idf END AS idf
    FROM raw_idf
),
lexical_hits AS (
    SELECT p.chunk_id AS id,
           sum(i.qtf * i.idf * p.tf * (%(k1)s + 1)
               / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * c.lex_length / s.avgdl))) AS score
    FROM idf i
    JOIN postings p ON p.term = i.term
    JOIN chunks c ON c.id = p.chunk_id
    CROSS JOIN stats s
    WHERE {ROLE_PREDICATE}
    GROUP BY p.chunk_id
    ORDER BY score DESC, p.chunk_id
    LIMIT %(candidates)s
),
lexical AS (
    SELECT id, score, row_number() OVER (ORDER BY score DESC, id) AS rnk FROM lexical_hits
)"""

# Both legs joined; per-leg min-max normalisation for the weighted mode (a chunk missing from a
# leg gets 0 there). RRF uses k = 60.
FUSION_CTE = """
joined AS (
    SELECT coalesce(d.id, l.id) AS id,
           d.score AS dense_score, d.rnk AS dense_rank,
           l.score AS lexical_score, l.rnk AS lexical_rank,
           (d.score - min(d.score) OVER ()) / NULLIF(max(d.score) OVER () - min(d.score) OVER (), 0) AS dense_norm,
           (l.score - min(l.score) OVER ()) / NULLIF(max(l.score) OVER () - min(l.score) OVER (), 0) AS lexical_norm
    FROM dense d FULL OUTER JOIN lexical l ON l.id = d.id
),
fused AS (
    SELECT j.*,
           CASE %(mode)s
               WHEN 'rrf' THEN coalesce(1.0 / (%(rrf_k)s + j.dense_rank), 0)
                             + coalesce(1.0 / (%(rrf_k)s + j.lexical_rank), 0)
               ELSE %(weight)s * coalesce(j.dense_norm, CASE WHEN j.dense_rank IS NULL THEN 0 ELSE 1 END)
                    + (1 - %(weight)s) * coalesce(j.lexical_norm,
                                                  CASE WHEN j.lexical_rank IS NULL THEN 0 ELSE 1 END)
           END::float8 AS score
    FROM joined j
)"""

# Evidence for the refusal check, computed over the permitted candidates of both legs: the best
# dense cosine, the best BM25 score, and the idf-weighted share of the question's content terms
# (question words like "nedir", "müdür" excluded) found in the best BM25 chunk. Coverage weighs
# terms by the always-positive idf ln(1 + (N - df + 0.5)/(df + 0.5)) (BM25's own idf is 0 or
# negative for common terms and meaningless in a two-chunk collection); terms absent from the
# lexicon weigh as the rarest possible term.
EVIDENCE_CTE = """
top_lexical AS (SELECT id FROM lexical ORDER BY rnk LIMIT 1),
query_idf AS (
    SELECT q.term, q.qtf * ln(1 + (s.n - coalesce(l.df, 0) + 0.5) / (coalesce(l.df, 0) + 0.5)) AS weight
    FROM qterms q LEFT JOIN lexicon l ON l.term = q.term CROSS JOIN stats s
    WHERE q.term = ANY(%(evidence_terms)s::text[])
),
evidence AS (
    SELECT (SELECT max(score) FROM dense) AS best_cosine,
           (SELECT max(score) FROM lexical) AS best_bm25,
           (SELECT sum(weight) FROM query_idf q JOIN postings p ON p.term = q.term
                                               JOIN top_lexical t ON t.id = p.chunk_id)
           / NULLIF((SELECT sum(weight) FROM query_idf), 0) AS coverage,
           (SELECT count(*) FROM joined) AS permitted_hits
)"""

# One statement for every mode: both legs, fused, ranked by the mode's score, with the evidence
# row attached to each result (and returned alone when nothing is permitted).
RETRIEVAL_SQL = f"""
WITH {DENSE_CTE}, {LEXICAL_CTE}, {FUSION_CTE}, {EVIDENCE_CTE},
ranked AS (
    SELECT f.id, f.dense_score, f.lexical_score,
           CASE %(mode)s WHEN 'dense' THEN f.dense_score WHEN 'lexical' THEN f.lexical_score
                         ELSE f.score END AS score,
           CASE %(mode)s WHEN 'dense' THEN f.dense_rank WHEN 'lexical' THEN f.lexical_rank END AS leg_rank,
           f.dense_rank, f.lexical_rank
    FROM fused f
    WHERE CASE %(mode)s WHEN 'dense' THEN f.dense_rank IS NOT NULL
                        WHEN 'lexical' THEN f.lexical_rank IS NOT NULL
                        ELSE true END
    ORDER BY leg_rank NULLS LAST, score DESC, coalesce(f.lexical_rank, 1e9), coalesce(f.dense_rank, 1e9), f.id
    LIMIT %(k)s
)
SELECT c.id, c.document_id, d.title, d.filename, c.page_start, c.page_end, c.article, c.text,
       r.score, r.dense_score, r.lexical_score,
       e.best_cosine, e.best_bm25, e.coverage, e.permitted_hits
FROM evidence e
LEFT JOIN ranked r ON true
LEFT JOIN chunks c ON c.id = r.id
LEFT JOIN documents d ON d.id = c.document_id
ORDER BY r.leg_rank NULLS LAST, r.score DESC, coalesce(r.lexical_rank, 1e9), coalesce(r.dense_rank, 1e9), r.id"""


# ----------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Hit:
    """A retrieved chunk with the leg scores behind its rank (for the lab and calibration)."""

    source: Source
    dense_score: float | None
    lexical_score: float | None


@dataclass(frozen=True)
class Evidence:
    """Signals the refusal check reads; see ragcore.calibration for how they were chosen."""

    best_cosine: float | None
    best_bm25: float | None
    coverage: float  # idf-weighted share of query terms present in the best BM25 chunk (0..1)
    permitted_hits: int

    def as_dict(self) -> dict:
        return {
            "best_cosine": self.best_cosine,
            "best_bm25": self.best_bm25,
            "coverage": self.coverage,
            "permitted_hits": self.permitted_hits,
        }


@dataclass(frozen=True)
class Retrieval:
    question: str
    role: str
    mode: str
    hits: list[Hit]
    evidence: Evidence
    ms: float
    extra: dict = field(default_factory=dict)

    @property
    def sources(self) -> list[Source]:
        return [hit.source for hit in self.hits]


# ----------------------------------------------------------------------------- API


def resolve_mode(settings: Settings, embedder: object | None = None, mode: str | None = None) -> str:
    """The concrete mode: an explicit one, RETRIEVAL_MODE, or the one measured for the embedder
    (ragcore/measured/retrieval.json; rrf when it was not tuned)."""
    chosen = mode or settings.retrieval_mode
    if chosen == "auto":
        return measurements.retrieval_default(getattr(embedder, "name", "")).mode
    if chosen not in MODES:
        raise RetrievalError(f"Bilinmeyen arama modu: {chosen!r}. Geçerli modlar: auto, {', '.join(MODES)}.")
    return chosen


def check_role(role: str) -> str:
    if role not in ROLES:
        raise RetrievalError(f"Bilinmeyen rol: {role!r}. Geçerli roller: {', '.join(ROLES)}.")
    return role


# Turkish question words and particles: they say nothing about the topic, and their prefix-5
# forms collide with content ("müdür" ~ "müdürlüğü"), so they do not count as evidence.
QUESTION_WORDS = frozenset(
    """mi mı mu mü midir mıdır mudur müdür misin mısın mıyım miyim var mı yok ne neden nedir nelerdir
    nasıl nasıldır niçin niye hangi hangisi hangileri kim kime kimdir kimler kaç kaçtır ne zaman nerede
    nereye nereden acaba lütfen""".split()
)


def evidence_terms(question: str) -> list[str]:
    """Lexical tokens of the question's content words (question words removed)."""
    return [word[:PREFIX_LENGTH] for word in words(question) if word not in QUESTION_WORDS]


def _params(question: str, qvec: np.ndarray | None, role: str, k: int, mode: str, weight: float) -> dict:
    return {
        "qvec": qvec,
        "terms": lexical_tokens(question),
        "evidence_terms": evidence_terms(question),
        "role": role,
        "k": k,
        "candidates": max(MIN_CANDIDATES, 4 * k),
        "mode": mode,
        "weight": weight,
        "rrf_k": RRF_K,
        "k1": BM25_K1,
        "b": BM25_B,
        "epsilon": BM25_EPSILON,
    }


def _embed_question(embedder: object, question: str) -> np.ndarray:
    return np.asarray(embedder.embed_queries([question]), dtype=np.float32)[0]  # type: ignore[attr-defined]


def _row_to_hit(rank: int, row: tuple) -> Hit:
    source = Source(
        rank=rank,
        chunk_id=row[0],
        document_id=row[1],
        title=row[2],
        filename=row[3],
        page_start=row[4],
        page_end=row[5],
        article=row[6],
        score=float(row[8]),
        text=row[7],
    )
    return Hit(source, None if row[9] is None else float(row[9]), None if row[10] is None else float(row[10]))


def _evidence(row: tuple | None) -> Evidence:
    if row is None:
        return Evidence(None, None, 0.0, 0)
    return Evidence(
        best_cosine=None if row[11] is None else float(row[11]),
        best_bm25=None if row[12] is None else float(row[12]),
        coverage=float(row[13] or 0.0),
        permitted_hits=int(row[14] or 0),
    )


def retrieve(
    db: Database,
    embedder: object,
    question: str,
    role: str,
    *,
    k: int,
    mode: str,
    weight: float | None = None,
) -> Retrieval:
    """Ranked permitted chunks plus refusal evidence: one statement in one read transaction.

    `weight` (weighted mode): None = the dense weight measured for the embedder."""
    check_role(role)
    if weight is None:
        weight = measurements.retrieval_default(getattr(embedder, "name", "")).weight
    if mode not in MODES:
        raise RetrievalError(f"Bilinmeyen arama modu: {mode!r}. Geçerli modlar: {', '.join(MODES)}.")
    started = time.perf_counter()
    params = _params(question, _embed_question(embedder, question), role, k, mode, weight)
    with db.connection() as conn:
        db.apply_retrieval_settings(conn)
        rows = conn.execute(RETRIEVAL_SQL, params).fetchall()
    hits = [_row_to_hit(rank, row) for rank, row in enumerate((r for r in rows if r[0] is not None), start=1)]
    elapsed = (time.perf_counter() - started) * 1000
    return Retrieval(question, role, mode, hits, _evidence(rows[0] if rows else None), elapsed)


def search(
    db: Database,
    embedder: object,
    question: str,
    role: str,
    *,
    k: int,
    mode: str | None = None,
    settings: Settings | None = None,
) -> list[Source]:
    """Top-k permitted chunks for a question (mode None: RETRIEVAL_MODE or the backend default)."""
    concrete = resolve_mode(settings or Settings(), embedder, mode)
    return retrieve(db, embedder, question, role, k=k, mode=concrete).sources
