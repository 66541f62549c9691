"""Finding the passages a role may read: the hybrid SQL (dense + BM25, the role predicate inside
every statement), the retrieval modes and their measured defaults, the refusal gate's
calibration, and the terms to highlight.
"""

from ragcore.retrieval import abstention, bm25, calibration, hybrid, measurements
from ragcore.retrieval.abstention import (
    ANSWER,
    CLOSEST,
    REFUSED,
    AbstentionModel,
    Decision,
    decide,
    model_for,
    quote_held_back,
)
from ragcore.retrieval.calibration import (
    SIGNALS,
    Threshold,
    threshold_for,
)
from ragcore.retrieval.expansions import (
    Expansion,
    ExpansionError,
    delete_expansion,
    list_expansions,
    save_expansion,
)
from ragcore.retrieval.highlighting import (
    COMMON_WORDS,
    MIN_TERM_CHARS,
    highlight_terms,
    question_terms,
)
from ragcore.retrieval.hybrid import (
    DENSE_CTE,
    DENSE_WINDOWS_CTE,
    RETRIEVAL_SQL,
    RETRIEVAL_WINDOWS_SQL,
    RRF_K,
    Evidence,
    Retrieval,
    RetrievalError,
    lexical_leg,
    read_snapshot,
    resolve_mode,
    retrieval_sql,
    retrieve,
    search,
    statement_params,
)
from ragcore.retrieval.measurements import (
    MeasuredDataError,
    retrieval_default,
    threshold_default,
    write_measured,
)
from ragcore.retrieval.modes import MODES
from ragcore.retrieval.query import LexicalQuery, build_query, fold_index, lexical_query, query_terms, respell

__all__ = [
    "ANSWER",
    "CLOSEST",
    "REFUSED",
    "AbstentionModel",
    "Decision",
    "Expansion",
    "ExpansionError",
    "LexicalQuery",
    "abstention",
    "decide",
    "delete_expansion",
    "build_query",
    "fold_index",
    "lexical_query",
    "respell",
    "list_expansions",
    "model_for",
    "quote_held_back",
    "save_expansion",
    "COMMON_WORDS",
    "DENSE_CTE",
    "DENSE_WINDOWS_CTE",
    "Evidence",
    "MIN_TERM_CHARS",
    "MODES",
    "MeasuredDataError",
    "RETRIEVAL_SQL",
    "RETRIEVAL_WINDOWS_SQL",
    "RRF_K",
    "Retrieval",
    "RetrievalError",
    "SIGNALS",
    "Threshold",
    "bm25",
    "calibration",
    "highlight_terms",
    "hybrid",
    "lexical_leg",
    "measurements",
    "query_terms",
    "question_terms",
    "read_snapshot",
    "resolve_mode",
    "retrieval_default",
    "retrieval_sql",
    "retrieve",
    "search",
    "statement_params",
    "threshold_default",
    "threshold_for",
    "write_measured",
]
