"""Role-scoped hybrid retrieval: pgvector cosine + BM25 over postings, fused in PostgreSQL.

Every statement carries the role predicate itself (`ROLE_PREDICATE` on the role bits of
`chunks` and `postings`; admin's bit is set on every chunk), so no forbidden chunk is ever
ranked, limited away or returned — permission filtering after LIMIT is the bug this module
exists to avoid.

Nothing a role sees depends on chunks it cannot read (issue 11): BM25 uses the role's own
statistics (chunk count, average length, document frequencies and the mean idf of its
vocabulary, kept exact by the migration 003 triggers), and the dense leg searches the role's
own partial HNSW index, whose graph holds only the role's chunks. Nor does the work a
retrieval does (issue 21): the lexical leg plans from the role's statistics and reads the
role's own partial posting indexes (`ragcore.store.role_indexes`), so a forbidden document's
postings are never read, not even to be filtered out. Admin's statistics and indexes are global.

The lexical leg is BM25Okapi exactly as `rank_bm25` computes it over the role's chunks (their
lexical texts, `ragcore.documents.lexical_texts`: a continuation of a long article with the
article's heading), with one deliberate difference: Turkish stop words (`ragcore.core.text.STOPWORDS`) are dropped from the
query (`query_terms`). Pruning (`ragcore.retrieval.bm25`) reads only the postings that can change the
top candidates and is exact. A retrieval is a short sequence of statements in one read-only
REPEATABLE READ transaction (`read_snapshot`): the role's statistics for the query terms, the
pruning threshold when the terms are common, the lexical leg (one round, rarely two), then one
statement with the dense leg, fusion and evidence. Retrieval may run on a read replica
(`ragcore.store.database.open_read_database`).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import psycopg

from ragcore.core import Settings, Source, parse_public_id
from ragcore.documents import Scope, locator_kind
from ragcore.retrieval import bm25, measurements
from ragcore.retrieval.modes import MODES
from ragcore.retrieval.query import LexicalQuery, dense_question, lexical_query
from ragcore.store import Database, reader_bit, role_predicate

RRF_K = 60
BM25_K1 = bm25.K1
BM25_B = bm25.B
BM25_EPSILON = bm25.EPSILON
# Per leg; fusion needs more than the k it returns. The weighted fusion min-max normalises each
# leg over its own candidates and gives a chunk the other leg did not return 0 there, so a
# deeper pool ranks the top better. Chosen on the everyday set's train half (e5, windows: the
# depth with the highest Recall@5 + MRR@10 of 50 … 600, eval/experiments/fusion_tuning.py) and measured
# on its dev half, the paraphrase set and TQuAD (docs/retrieval.md, "Fusion").
MIN_CANDIDATES = 160
# A law's transitional articles ("Geçici Madde N": the passage from the old rules to the new, for
# cut-off dates long past) repeat the words of the articles they amend, and a question asked
# today rarely means them: "İşveren beni haber vermeden işten çıkarabilir mi?" ranked 4857's
# Geçici Madde 10 first. The fused score of a chunk of one is multiplied by this weight; the
# single-leg modes are left as they are. Chosen on the everyday set's train half at the depth
# above (0.3 … 1, the highest Recall@5 + MRR@10, eval/experiments/fusion_tuning.py); TQuAD's chunks have
# no articles, so it changes only the law questions (docs/retrieval.md, "Fusion").
TRANSITIONAL_PATTERN = "Geçici Madde%"
TRANSITIONAL_WEIGHT = 0.5


@dataclass(frozen=True)
class Fusion:
    """How the legs' candidates become one ranking: candidates per leg (at least 4k) and the weight
    of a transitional article's fused score. The app uses FUSION; the lab and the benchmark pass
    others to measure against it."""

    depth: int = MIN_CANDIDATES
    transitional_weight: float = TRANSITIONAL_WEIGHT


FUSION = Fusion()
# Windows read per dense candidate: a chunk has about three (at most eight), and its best one
# is what counts, so twice the candidates reaches about as many chunks as the chunk vectors do.
WINDOWS_PER_CANDIDATE = 2


class RetrievalError(ValueError):
    """Bad retrieval input (unknown role or mode); the message is Turkish."""


# ----------------------------------------------------------------------------- SQL
# One predicate, used verbatim by every leg, on the one relation of its FROM list that has
# role bits (chunks in the dense leg, postings in the lexical leg and the evidence). `%(role_bit)s`
# is the reader's bit (role_bits, migration 021: one role, or the set of roles a user holds);
# admin's bit is on every chunk, so admin is decided here too and no
# code path can forget the filter. Built by the store's `role_predicate`, which spells the
# per-role partial indexes' predicates too (HNSW graphs, posting lists), so that a plan for a
# role's bit reads that role's own index and never a posting of a chunk it cannot read.
ROLE_PREDICATE = role_predicate("%(role_bit)s")


def scope_predicate(chunk_id: str) -> str:
    """The question's restriction (issue 39.2: one collection or one document), on the relation's
    chunk id column `chunk_id` (`c.id`, `p.chunk_id`, `w.chunk_id`): a second, separate predicate
    beside ROLE_PREDICATE in every leg, never instead of it, so it can only narrow what the role
    reads. `%(scope_chunks)s` is NULL (no restriction) or the chunk ids of the scope that the role
    may read (SCOPE_CHUNKS_SQL, same snapshot). Retrieval plans are custom plans
    (`Database.apply_retrieval_settings`), so PostgreSQL folds the NULL case away and an
    unrestricted question runs today's plan; a restricted one adds `chunk_id = ANY(…)` to the scans
    of the role's own indexes. The role's statistics stay as they are: a restriction is a filter,
    not a new corpus, so a chunk's BM25 score is the same in and out of a scope. In a probe of one
    chunk's posting (`p.chunk_id = s.chunk_id`) it is put on the probed chunk's column, not the
    posting's: the same rows, but the probe stays one lookup in the role's (term, chunk) index
    (on `p.chunk_id` the planner would read the chunk's whole list through the global
    postings_chunk index instead). What a restricted plan reads is the scope's and the role's: the
    role's own posting indexes and graph, or for a small scope the scope's chunks by key (ranked
    exactly) and their postings by chunk id — rows the role reads, never a forbidden document's
    (tests/test_collections.py and tests/test_retrieval_scale.py check the plans)."""
    return f"(%(scope_chunks)s::bigint[] IS NULL OR {chunk_id} = ANY(%(scope_chunks)s::bigint[]))"


# The scope's chunks the reader may read (the reader's role predicate here too: a document is in
# when any of the user's roles may read it, never more), of current versions only: those of one
# document, or of a collection's documents; an empty array when the scope holds none the role may read, which
# then matches nothing in every leg — the same as a missing document or collection.
SCOPE_CHUNKS_SQL = f"""
SELECT coalesce(array_agg(c.id ORDER BY c.id), '{{}}'::bigint[]) FROM chunks c
WHERE {ROLE_PREDICATE} AND c.document_id IN (
    SELECT d.id FROM documents d WHERE d.public_id = %(scope_document)s::uuid AND d.is_current
    UNION ALL
    SELECT m.document_id FROM collection_documents m JOIN collections k ON k.id = m.collection_id
    JOIN documents d ON d.id = m.document_id AND d.is_current
    WHERE k.public_id = %(scope_collection)s::uuid)"""

# The role's statistics and, per query term its chunks contain, df, the pruning bounds' inputs
# and what reading the term costs: its postings in the role's own indexes (all, high impact),
# i.e. the role's df and high_df, so that the plan, like the rows read, is the role's alone.
TERM_STATS_SQL = """
SELECT s.chunk_count, s.total_length,
       l.term, l.df, l.max_tf, l.min_len_per_tf, l.low_min_len, l.df, l.high_df
FROM lex_stats s
LEFT JOIN lexicon l ON l.role = s.role AND l.term = ANY(%(terms)s::text[]) AND l.df > 0
WHERE s.role = %(role)s"""

# rank_bm25's mean idf over the role's vocabulary, from the document-frequency histogram
# (number of terms per df), summed in df order so that it is the same number on every plan.
MEAN_IDF_SQL = """
SELECT sum(h.terms * (ln(s.chunk_count - h.df + 0.5::float8) - ln(h.df + 0.5::float8)) ORDER BY h.df) / sum(h.terms)
FROM lex_df_histogram h JOIN lex_stats s ON s.role = h.role
WHERE h.role = %(role)s AND h.terms > 0"""

# One posting's BM25 contribution; the same expression everywhere, so that a chunk's score is
# the same float whichever statement computes it. `t` has (term, weight = qtf × idf).
TERM_SCORE = "t.weight * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.doc_len / %(avgdl)s::float8))"

# Pruning threshold: the chunks with the best score over the postings read — the rarest
# terms in full and every other term's best few (impact order) — scored exactly over every
# query term; the candidates-th best of those is a lower bound of the candidates-th best score.
THRESHOLD_SQL = f"""
WITH lexical_terms AS (
    SELECT * FROM unnest(%(lex_terms)s::text[], %(lex_weights)s::float8[], %(lex_seed)s::boolean[])
                  AS t(term, weight, seed)
),
seed_parts AS (
    SELECT p.chunk_id, {TERM_SCORE} AS part
    FROM lexical_terms t JOIN postings p ON p.term = t.term
    WHERE t.seed AND {ROLE_PREDICATE} AND {scope_predicate("p.chunk_id")}
    UNION ALL
    SELECT best.chunk_id, best.part
    FROM lexical_terms t CROSS JOIN LATERAL (
        SELECT p.chunk_id, {TERM_SCORE} AS part FROM postings p
        WHERE p.term = t.term AND p.high_impact AND {ROLE_PREDICATE} AND {scope_predicate("p.chunk_id")}
        ORDER BY p.impact DESC
        LIMIT %(champions)s
    ) best
    WHERE NOT t.seed
),
seed AS (
    SELECT chunk_id FROM seed_parts GROUP BY chunk_id ORDER BY sum(part) DESC, chunk_id LIMIT %(seed_chunks)s
)
SELECT sum(x.part ORDER BY x.term) AS score
FROM seed s CROSS JOIN lexical_terms t CROSS JOIN LATERAL (
    SELECT p.term, {TERM_SCORE} AS part FROM postings p
    WHERE p.term = t.term AND p.chunk_id = s.chunk_id AND {ROLE_PREDICATE} AND {scope_predicate("s.chunk_id")}
    OFFSET 0  -- one primary-key probe per (chunk, term), never a scan of a whole list
) x
GROUP BY s.chunk_id"""

# Lexical leg: exact BM25 top candidates under a plan of ragcore.retrieval.bm25. Terms read `all` have
# every posting read (index-only scan of the covering primary key), terms read `high` only
# their high-impact postings (the partial covering index). A chunk's bound is its score over
# what was read plus what the unread postings could add to it; chunks whose bound stays below
# the threshold are dropped; the `lex_complete` best bounds are scored exactly (their other
# term weights by primary-key probes), in term order, so that the sum is the same float on
# any plan PostgreSQL picks. Returns the top list and the next bound (see bm25.settled). The
# exhaustive plan reads every term in full, threshold -inf, and completes every chunk.
LEXICAL_SQL = f"""
WITH lexical_terms AS (
    SELECT * FROM unnest(%(lex_terms)s::text[], %(lex_weights)s::float8[], %(lex_reads)s::text[],
                         %(lex_low_bounds)s::float8[]) WITH ORDINALITY AS t(term, weight, read, low_bound, pos)
),
read_parts AS MATERIALIZED (
    SELECT p.chunk_id, t.pos, true AS in_full, {TERM_SCORE} AS part, {TERM_SCORE} AS gain
    FROM lexical_terms t JOIN postings p ON p.term = t.term
    WHERE t.read = 'all' AND {ROLE_PREDICATE} AND {scope_predicate("p.chunk_id")}
    UNION ALL
    SELECT p.chunk_id, t.pos, false, 0, {TERM_SCORE} - t.low_bound
    FROM lexical_terms t JOIN postings p ON p.term = t.term
    WHERE t.read = 'high' AND p.high_impact AND {ROLE_PREDICATE} AND {scope_predicate("p.chunk_id")}
),
viable AS (
    SELECT chunk_id, bound FROM (
        SELECT chunk_id, %(lex_rest_bound)s + sum(gain) AS bound FROM read_parts GROUP BY chunk_id
    ) b
    WHERE bound >= %(lex_threshold)s
),
best_plus AS MATERIALIZED (
    SELECT chunk_id, bound FROM viable ORDER BY bound DESC, chunk_id LIMIT %(lex_complete)s::bigint + 1
),
best AS (
    SELECT chunk_id FROM best_plus ORDER BY bound DESC, chunk_id LIMIT %(lex_complete)s::bigint
),
parts AS (
    SELECT r.chunk_id, r.pos, r.part FROM read_parts r JOIN best b ON b.chunk_id = r.chunk_id
    WHERE r.in_full
    UNION ALL
    SELECT b.chunk_id, t.pos, x.part
    FROM best b CROSS JOIN lexical_terms t CROSS JOIN LATERAL (
        SELECT {TERM_SCORE} AS part FROM postings p
        WHERE p.term = t.term AND p.chunk_id = b.chunk_id AND {ROLE_PREDICATE} AND {scope_predicate("b.chunk_id")}
        OFFSET 0  -- one primary-key probe per (chunk, term), never a scan of a whole list
    ) x
    WHERE t.read <> 'all'
),
top AS (
    SELECT chunk_id, sum(part ORDER BY pos) AS score FROM parts
    GROUP BY chunk_id ORDER BY score DESC, chunk_id LIMIT %(candidates)s
)
SELECT (SELECT array_agg(chunk_id ORDER BY score DESC, chunk_id) FROM top),
       (SELECT array_agg(score ORDER BY score DESC, chunk_id) FROM top),
       (SELECT bound FROM best_plus ORDER BY bound DESC, chunk_id OFFSET %(lex_complete)s::bigint LIMIT 1)"""

CHUNK_HITS_CTE = f"""chunk_hits AS (
    SELECT c.id, c.embedding <=> %(qvec)s AS distance
    FROM chunks c
    WHERE c.embedding IS NOT NULL AND {ROLE_PREDICATE} AND {scope_predicate("c.id")}
    ORDER BY c.embedding <=> %(qvec)s
    LIMIT %(candidates)s
),"""

# Dense leg: ORDER BY the distance operator so that the role's HNSW index serves it (its
# partial index holds only the role's chunks; admin's is global), then rank the candidates.
DENSE_CTE = f"""
{CHUNK_HITS_CTE}
window_hits AS (SELECT NULL::bigint AS id, NULL::float8 AS distance WHERE false),
dense AS (
    SELECT id, 1 - distance AS score, row_number() OVER (ORDER BY distance, id) AS rnk
    FROM chunk_hits
)"""

# Dense leg with sentence windows (DENSE_WINDOWS, `ragcore.documents.windows`): the role's best
# windows by their own HNSW graphs (the same per-role partial indexes and predicate as chunks',
# on chunk_windows), grouped to their chunks, next to the best chunk vectors. A chunk's dense
# score is the mean of its own cosine and its best window's (its own cosine alone when none of
# its windows is among the best); a chunk found through a window alone gets its own cosine by a
# primary-key probe (the role predicate in that scope too). Measured on the everyday set's dev
# half (e5): the mean lifted both the dense and the weighted leg's Recall@5 and MRR@10; the
# best window alone and max(chunk, best window) lost Recall@5 there.
DENSE_WINDOWS_CTE = f"""
{CHUNK_HITS_CTE}
window_hits AS (
    SELECT w.chunk_id AS id, w.embedding <=> %(qvec)s AS distance
    FROM chunk_windows w
    WHERE w.embedding IS NOT NULL AND {ROLE_PREDICATE} AND {scope_predicate("w.chunk_id")}
    ORDER BY w.embedding <=> %(qvec)s
    LIMIT %(window_candidates)s
),
best_windows AS (
    SELECT id, min(distance) AS distance FROM window_hits GROUP BY id
),
dense_candidates AS (
    SELECT coalesce(h.id, b.id) AS id,
           coalesce(h.distance, (SELECT c.embedding <=> %(qvec)s FROM chunks c
                                 WHERE c.id = b.id AND {ROLE_PREDICATE}
                                   AND {scope_predicate("c.id")})) AS chunk_distance,
           b.distance AS window_distance
    FROM chunk_hits h FULL OUTER JOIN best_windows b ON b.id = h.id
),
dense_hits AS (
    SELECT id, (chunk_distance + coalesce(window_distance, chunk_distance)) / 2 AS distance
    FROM dense_candidates
    ORDER BY (chunk_distance + coalesce(window_distance, chunk_distance)) / 2, id
    LIMIT %(candidates)s
),
dense AS (
    SELECT id, 1 - distance AS score, row_number() OVER (ORDER BY distance, id) AS rnk
    FROM dense_hits
)"""

# The lexical leg's result (LEXICAL_SQL, same snapshot), in rank order.
LEXICAL_CTE = """
lexical AS (
    SELECT id, score, rnk FROM unnest(%(lex_ids)s::bigint[], %(lex_scores)s::float8[]) WITH ORDINALITY AS l(id, score, rnk)
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
# dense cosine, the best BM25 score, and the weighted share of the question's content terms
# (question words like "nedir", "müdür" and stop words excluded) found in the best BM25 chunk.
# The weights (`evidence_weights`) use the always-positive idf ln(1 + (N - df + 0.5)/(df + 0.5))
# over the role's statistics (BM25's own idf is 0 or negative for common terms and meaningless
# in a two-chunk collection); terms the role's chunks lack weigh as the rarest possible term.
EVIDENCE_CTE = f"""
evidence_terms AS (
    SELECT * FROM unnest(%(evidence_terms)s::text[], %(evidence_weights)s::float8[]) AS e(term, weight)
),
top_lexical AS (SELECT id FROM lexical ORDER BY rnk LIMIT 1),
evidence AS (
    SELECT (SELECT 1 - min(distance) FROM chunk_hits) AS best_cosine,
           (SELECT max(score) FROM lexical) AS best_bm25,
           (SELECT sum(e.weight ORDER BY e.term) FROM evidence_terms e CROSS JOIN top_lexical t CROSS JOIN LATERAL (
                SELECT FROM postings p WHERE p.term = e.term AND p.chunk_id = t.id AND {ROLE_PREDICATE}
                                       AND {scope_predicate("t.id")}
                OFFSET 0  -- one probe of the role's (term, chunk) index per term, not the chunk's whole list
            ) x)
           / NULLIF((SELECT sum(weight ORDER BY term) FROM evidence_terms), 0) AS coverage,
           (SELECT count(*) FROM joined) AS permitted_hits,
           (SELECT 1 - min(distance) FROM window_hits) AS best_window_cosine
)"""

# One statement for every mode: both legs, fused, ranked by the mode's score, with the evidence
# row attached to each result (and returned alone when nothing is permitted).
def _retrieval_sql(dense_cte: str) -> str:
    return f"""
WITH {dense_cte}, {LEXICAL_CTE}, {FUSION_CTE}, {EVIDENCE_CTE},
ranked AS (
    SELECT f.id, f.dense_score, f.lexical_score,
           CASE %(mode)s WHEN 'dense' THEN f.dense_score WHEN 'lexical' THEN f.lexical_score
                         ELSE f.score * CASE WHEN a.article LIKE %(transitional_pattern)s
                                             THEN %(transitional_weight)s ELSE 1.0 END END AS score,
           CASE %(mode)s WHEN 'dense' THEN f.dense_rank WHEN 'lexical' THEN f.lexical_rank END AS leg_rank,
           f.dense_rank, f.lexical_rank
    FROM fused f
    LEFT JOIN chunks a ON %(mode)s IN ('weighted', 'rrf') AND %(transitional_weight)s <> 1.0  -- else no probe
                       AND a.id = f.id AND {ROLE_PREDICATE} AND {scope_predicate("a.id")}
    WHERE CASE %(mode)s WHEN 'dense' THEN f.dense_rank IS NOT NULL
                        WHEN 'lexical' THEN f.lexical_rank IS NOT NULL
                        ELSE true END
    ORDER BY leg_rank NULLS LAST, score DESC, coalesce(f.lexical_rank, 1e9), coalesce(f.dense_rank, 1e9), f.id
    LIMIT %(k)s
)
SELECT c.id, c.document_id, d.title, d.filename, c.page_start, c.page_end, c.article, c.text,
       r.score, r.dense_score, r.lexical_score,
       e.best_cosine, e.best_bm25, e.coverage, e.permitted_hits, d.public_id::text, e.best_window_cosine,
       c.locator, d.file_format, c.ocr, d.version_no, d.created_at
FROM evidence e
LEFT JOIN ranked r ON true
LEFT JOIN chunks c ON c.id = r.id
LEFT JOIN documents d ON d.id = c.document_id
ORDER BY r.leg_rank NULLS LAST, r.score DESC, coalesce(r.lexical_rank, 1e9), coalesce(r.dense_rank, 1e9), r.id"""


RETRIEVAL_SQL = _retrieval_sql(DENSE_CTE)
RETRIEVAL_WINDOWS_SQL = _retrieval_sql(DENSE_WINDOWS_CTE)


def retrieval_sql(windows: bool) -> str:
    """The one statement, with the dense leg over chunks alone or over chunks and their windows."""
    return RETRIEVAL_WINDOWS_SQL if windows else RETRIEVAL_SQL


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
    # The best sentence window's cosine (None without windows). A signal for the abstention model
    # to come (issue 20.3); not in `as_dict`, whose keys the API and the questions log publish.
    best_window_cosine: float | None = None

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
    # The question's vector, for the quoter's cosine features: a question is embedded once per
    # answer, whatever the outcome (issue 21: no user's cost depends on the text asked).
    query_vector: np.ndarray | None = field(default=None, compare=False, repr=False)

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


def default_weight(embedder: object) -> float:
    """The weighted mode's dense weight measured for this embedder (ragcore/measured/retrieval.json)."""
    return measurements.retrieval_default(getattr(embedder, "name", "")).weight


def check_role(conn: psycopg.Connection, role: str) -> int:
    """The reader's bit (`role`: one role, or a user's roles as `ragcore.core.reader_key` joins
    them); RetrievalError when there is no such reader (an unknown role, or a set of roles
    nobody holds)."""
    bit = reader_bit(conn, role)
    if bit is None:
        known = [row[0] for row in conn.execute("SELECT name FROM roles ORDER BY name")]
        raise RetrievalError(f"Bilinmeyen rol ya da rol kümesi: {role!r}. Geçerli roller: {', '.join(known)} "
                             "(birden çok rol, bir kullanıcıya birlikte verilmişse '+' ile birleşir: isg+uretim).")
    return bit


def _params(question: str, qvec: np.ndarray | None, role: str, k: int, mode: str, weight: float,
            fusion: Fusion = FUSION, *, role_bit: int) -> dict:
    candidates = max(fusion.depth, 4 * k)
    return {
        "qvec": qvec,
        "role": role,
        "role_bit": role_bit,
        "scope_chunks": None,  # no restriction (`scope_chunks()` gives a restricted question's)
        "k": k,
        "candidates": candidates,
        "window_candidates": WINDOWS_PER_CANDIDATE * candidates,
        "mode": mode,
        "weight": weight,
        "rrf_k": RRF_K,
        "transitional_pattern": TRANSITIONAL_PATTERN,
        "transitional_weight": fusion.transitional_weight,
        "k1": BM25_K1,
        "b": BM25_B,
    }


@contextmanager
def read_snapshot(db: Database) -> Iterator[psycopg.Connection]:
    """One read-only REPEATABLE READ transaction with the retrieval settings applied: every
    statement of a retrieval sees the same statistics and postings."""
    with db.connection() as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        db.apply_retrieval_settings(conn)
        yield conn


@dataclass(frozen=True)
class LexicalResult:
    """The lexical leg's top candidates (score DESC, id ASC) and how they were found."""

    ids: list[int]
    scores: list[float]
    plan: bm25.LexicalPlan
    rounds: int


def lexical_leg(conn: psycopg.Connection, terms: list[str], base: dict, *, exhaustive: bool = False) -> tuple[
        LexicalResult, int, dict[str, int], float]:
    """BM25 top candidates for the role: exact, pruned where that pays (ragcore.retrieval.bm25), or
    within `base["postings_budget"]` postings when exact would read more (0: always exact).

    Returns the result, the role's chunk count, its df per query term, and avgdl (the
    evidence weights use them). `exhaustive=True` skips pruning (tests compare the two).
    """
    rows = conn.execute(TERM_STATS_SQL, {"terms": sorted(set(terms)), "role": base["role"]}).fetchall()
    n, total = int(rows[0][0]), int(rows[0][1])
    found = [bm25.TermRow(*r[2:]) for r in rows if r[2] is not None]
    avgdl = total / n if n else 1.0
    mean_idf = None
    if found and bm25.needs_mean_idf(n, [r.df for r in found]):
        mean_idf = conn.execute(MEAN_IDF_SQL, {"role": base["role"]}).fetchone()[0]
    stats = bm25.term_stats(terms, n, avgdl, found, mean_idf)
    df = {r.term: r.df for r in found}
    params = {**base, "avgdl": avgdl}
    budget = 0 if exhaustive else base.get("postings_budget", 0)
    if not exhaustive and bm25.can_prune(stats):
        result = _pruned_leg(conn, stats, params, budget)
        if result is not None:
            return result, n, df, avgdl
    plan = bm25.fallback_plan(stats, budget)
    complete = bm25.BUDGET_COMPLETE if plan.capped else None  # None: every chunk found is completed
    ids, scores, _ = conn.execute(LEXICAL_SQL, {**params, **plan.params(), "lex_complete": complete}).fetchone()
    return LexicalResult(ids or [], scores or [], plan, 0), n, df, avgdl


def _pruned_leg(conn: psycopg.Connection, stats: tuple[bm25.TermStats, ...], params: dict,
                budget: int) -> LexicalResult | None:
    """The pruned rounds; None when they cannot settle (no threshold, or an exact round's plan
    reads everything), and the caller reads exhaustively."""
    candidates = params["candidates"]
    seed = {t.term for t in bm25.seed_terms(stats)}
    scores = sorted((row[0] for row in conn.execute(THRESHOLD_SQL, {
        **params, **bm25.exhaustive_plan(stats).params(), "champions": bm25.CHAMPIONS,
        "seed_chunks": bm25.SEED_CHUNKS * candidates,
        "lex_seed": [t.term in seed for t in stats],
    })), reverse=True)
    if len(scores) < candidates:
        return None
    threshold = scores[candidates - 1]
    for rounds, (share, complete) in enumerate(bm25.ROUNDS, start=1):
        plan = bm25.pruned_plan(stats, threshold, share, budget)
        if plan.exhaustive:
            return None
        if plan.capped:
            complete = min(complete, bm25.BUDGET_COMPLETE)
        ids, scores, next_bound = conn.execute(LEXICAL_SQL, {
            **params, **plan.params(), "lex_complete": complete}).fetchone()
        ids, scores = ids or [], scores or []
        if plan.capped or bm25.settled(scores, next_bound, candidates):
            return LexicalResult(ids, scores, plan, rounds)
        if len(scores) >= candidates:
            threshold = max(threshold, scores[candidates - 1])
    return None


def statement_base(conn: psycopg.Connection, question: str, role: str) -> dict:
    """What `lexical_leg` needs of a retrieval's parameters for one role, without a question vector
    (the benchmark compares the leg's plans; `retrieve` builds the whole set)."""
    return {**_params(question, None, role, 5, "lexical", 0.0, role_bit=check_role(conn, role)), "scope_chunks": None}


def _lexical_params(conn: psycopg.Connection, question: str, base: dict, query: LexicalQuery | None = None) -> dict:
    """The lexical leg's candidates and the evidence weights, from the role's statistics."""
    if query is None:
        query = lexical_query(conn, question, base["role"])
    terms = query.terms
    result, n, df, _ = lexical_leg(conn, terms, base)
    counts = Counter(terms)
    wanted = sorted(set(query.evidence_terms))
    return {
        "lex_ids": result.ids,
        "lex_scores": result.scores,
        "evidence_terms": wanted,
        "evidence_weights": [counts[t] * math.log(1 + (n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5))
                             for t in wanted],
        "lexical": result,
        "query": query,
    }


def statement_params(
    conn: psycopg.Connection, question: str, qvec: np.ndarray, role: str, *, k: int, mode: str, weight: float,
    query: LexicalQuery | None = None, fusion: Fusion = FUSION, scope_chunks: list[int] | None = None,
    postings_budget: int = 0,
) -> dict:
    """Parameters of RETRIEVAL_SQL, planned inside the caller's `read_snapshot` transaction
    (also what tests and the benchmark use to EXPLAIN the statement); `query`: the question's
    lexical query when the caller built it already (`retrieve`: before embedding the question);
    `scope_chunks`: the question's restriction (`scope_chunks()`), None for none."""
    base = {**_params(question, qvec, role, k, mode, weight, fusion, role_bit=check_role(conn, role)),
            "scope_chunks": scope_chunks, "postings_budget": postings_budget}
    return {**base, **_lexical_params(conn, question, base, query)}


def scope_chunks(conn: psycopg.Connection, scope: Scope | None, role: str) -> list[int] | None:
    """SCOPE_CHUNKS_SQL's ids for the restricted question (None: no restriction), read inside the
    caller's `read_snapshot` transaction, so the scope and the legs see the same documents."""
    if scope is None or scope.everything:
        return None
    wanted = parse_public_id(scope.document if scope.document is not None else scope.collection)
    if wanted is None:  # not an id at all: the same as a missing one, without a query
        return []
    return conn.execute(SCOPE_CHUNKS_SQL, {
        "role_bit": check_role(conn, role),
        "scope_document": wanted if scope.document is not None else None,
        "scope_collection": wanted if scope.collection is not None else None,
    }).fetchone()[0]


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
        document_public_id=row[15],
        locator_kind=locator_kind(row[18]),
        locator=row[17],
        ocr=bool(row[19]),
        version_no=row[20],
        version_date=row[21],
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
        best_window_cosine=None if row[16] is None else float(row[16]),
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
    windows: bool = False,
    fusion: Fusion = FUSION,
    scope: Scope | None = None,
    postings_budget: int = 0,
) -> Retrieval:
    """Ranked permitted chunks plus refusal evidence: one statement in one read transaction (after
    a short one that reads the role's respellings of the question, which the dense leg embeds).

    `weight` (weighted mode): None = the dense weight measured for the embedder. `windows`:
    the dense leg scores a chunk by the mean of its vector's cosine and its best sentence
    window's (the app passes `Settings.dense_windows`); an index without windows gives the same
    result either way. `fusion`: the app's FUSION unless the lab or the benchmark compares another.
    `scope`: the question's restriction to one collection or one document (None: every document the
    reader reads); inside the SQL of every leg (`scope_predicate`), so it only ever narrows.
    `postings_budget`: the most postings the lexical leg reads (`Settings.lexical_postings_budget`;
    0, the default here: exact BM25 whatever it costs)."""
    if weight is None:
        weight = default_weight(embedder)
    if mode not in MODES:
        raise RetrievalError(f"Bilinmeyen arama modu: {mode!r}. Geçerli modlar: {', '.join(MODES)}.")
    started = time.perf_counter()
    with db.connection() as conn:  # the respellings shape the dense leg's text too (no vector settings needed)
        check_role(conn, role)
        query = lexical_query(conn, question, role)
    # Embedded outside any transaction: a caching embedder may need a connection of the same pool.
    qvec = _embed_question(embedder, dense_question(question, query))
    with read_snapshot(db) as conn:
        restricted = scope_chunks(conn, scope, role)
        params = statement_params(conn, question, qvec, role, k=k, mode=mode, weight=weight, query=query,
                                  fusion=fusion, scope_chunks=restricted, postings_budget=postings_budget)
        rows = conn.execute(retrieval_sql(windows), params).fetchall()
    hits = [_row_to_hit(rank, row) for rank, row in enumerate((r for r in rows if r[0] is not None), start=1)]
    elapsed = (time.perf_counter() - started) * 1000
    lexical: LexicalResult = params["lexical"]
    query: LexicalQuery = params["query"]
    extra = {"lexical_exhaustive": lexical.plan.exhaustive, "lexical_rounds": lexical.rounds,
             "lexical_capped": lexical.plan.capped,
             "lexical_reads": dict(Counter(lexical.plan.reads)), "lexical_postings_read": lexical.plan.postings_read,
             "dense_windows": windows,
             **query.as_dict()}
    if restricted is not None:
        extra["scope"] = {"collection": scope.collection, "document": scope.document, "chunks": len(restricted)}
    return Retrieval(question, role, mode, hits, _evidence(rows[0] if rows else None), elapsed, extra,
                     query_vector=qvec)


def search(
    db: Database,
    embedder: object,
    question: str,
    role: str,
    *,
    k: int,
    mode: str | None = None,
    settings: Settings | None = None,
    weight: float | None = None,
    scope: Scope | None = None,
) -> list[Source]:
    """Top-k permitted chunks for a question (mode None: RETRIEVAL_MODE or the backend default;
    weight None: the dense weight measured for the embedder; the lab's tuning passes one)."""
    settings = settings or Settings()
    concrete = resolve_mode(settings, embedder, mode)
    return retrieve(db, embedder, question, role, k=k, mode=concrete, weight=weight,
                    windows=settings.dense_windows, scope=scope,
                    postings_budget=settings.lexical_postings_budget).sources
