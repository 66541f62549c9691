"""Finding the passages a role may read: the hybrid SQL (dense + BM25, the role predicate inside
every statement), the retrieval modes and their measured defaults, the refusal gate's
calibration, and the terms to highlight.
"""

from ragcore.retrieval.abstention import (
    ABSTENTION_FILE,
    ANSWER,
    CLOSEST,
    QUOTE_FEATURE_NAMES,
    REFUSED,
    AbstentionModel,
    Decision,
    QuoteCheck,
    QuoteSignals,
    decide,
    model_for,
    quote_features,
    quote_held_back,
)
from ragcore.retrieval.abstention import FEATURE_NAMES as ABSTENTION_FEATURE_NAMES
from ragcore.retrieval.abstention import features as abstention_features
from ragcore.retrieval.bm25 import EPSILON as BM25_EPSILON
from ragcore.retrieval.bm25 import K1 as BM25_K1
from ragcore.retrieval.bm25 import B as BM25_B
from ragcore.retrieval.calibration import SIGNALS, Threshold, should_refuse, threshold_for
from ragcore.retrieval.expansions import (
    Expansion,
    ExpansionError,
    delete_expansion,
    lemma_tokens,
    list_expansions,
    save_expansion,
    term_tokens,
)
from ragcore.retrieval.highlighting import COMMON_WORDS, MIN_TERM_CHARS, highlight_terms, question_terms
from ragcore.retrieval.hybrid import (
    DENSE_CTE,
    FUSION,
    LEXICAL_SQL,
    MEAN_IDF_SQL,
    MIN_CANDIDATES,
    RETRIEVAL_SQL,
    RETRIEVAL_WINDOWS_SQL,
    RRF_K,
    TERM_STATS_SQL,
    THRESHOLD_SQL,
    Evidence,
    Fusion,
    Retrieval,
    RetrievalError,
    lexical_leg,
    read_snapshot,
    resolve_mode,
    retrieval_sql,
    retrieve,
    search,
    statement_base,
    statement_params,
)
from ragcore.retrieval.hybrid import default_weight as default_dense_weight
from ragcore.retrieval.measurements import (
    MEASURED_DIR,
    RETRIEVAL_FILE,
    THRESHOLDS_FILE,
    MeasuredDataError,
    retrieval_default,
    threshold_default,
    write_measured,
)
from ragcore.retrieval.modes import MODES
from ragcore.retrieval.query import (
    LexicalQuery,
    build_query,
    fold_index,
    lexical_query,
    query_terms,
    respell,
    respelling_candidates,
)

__all__ = [
    # abstention: Three outcomes instead of a yes/no refusal
    "ABSTENTION_FEATURE_NAMES",
    "abstention_features",
    "ABSTENTION_FILE",
    "AbstentionModel",
    "ANSWER",
    "CLOSEST",
    "decide",
    "Decision",
    "model_for",
    "QUOTE_FEATURE_NAMES",
    "quote_features",
    "quote_held_back",
    "QuoteCheck",
    "QuoteSignals",
    "REFUSED",
    # bm25: BM25Okapi arithmetic and the exact pruning plan of the SQL lexical leg
    "BM25_B",
    "BM25_EPSILON",
    "BM25_K1",
    # calibration: Refusal thresholds
    "should_refuse",
    "SIGNALS",
    "Threshold",
    "threshold_for",
    # expansions: The term-expansion table
    "delete_expansion",
    "Expansion",
    "ExpansionError",
    "lemma_tokens",
    "list_expansions",
    "save_expansion",
    "term_tokens",
    # highlighting: Which of a question's words to mark in the passages shown as its sources
    "COMMON_WORDS",
    "highlight_terms",
    "MIN_TERM_CHARS",
    "question_terms",
    # hybrid: Role-scoped hybrid retrieval
    "default_dense_weight",
    "DENSE_CTE",
    "Evidence",
    "FUSION",
    "Fusion",
    "lexical_leg",
    "LEXICAL_SQL",
    "MEAN_IDF_SQL",
    "MIN_CANDIDATES",
    "read_snapshot",
    "resolve_mode",
    "Retrieval",
    "RETRIEVAL_SQL",
    "retrieval_sql",
    "RETRIEVAL_WINDOWS_SQL",
    "RetrievalError",
    "retrieve",
    "RRF_K",
    "search",
    "statement_base",
    "statement_params",
    "TERM_STATS_SQL",
    "THRESHOLD_SQL",
    # measurements: Measured defaults as data
    "MEASURED_DIR",
    "MeasuredDataError",
    "retrieval_default",
    "RETRIEVAL_FILE",
    "threshold_default",
    "THRESHOLDS_FILE",
    "write_measured",
    # modes: The retrieval modes, named once
    "MODES",
    # query: The lexical query a question becomes
    "build_query",
    "fold_index",
    "lexical_query",
    "LexicalQuery",
    "query_terms",
    "respell",
    "respelling_candidates",
]
