"""Retrievers of the lab: the production path, and exact *reference* methods to compare it with.

`production[-<mode>]` runs the app's own retrieval (`ragcore.retrieval.search`: HNSW + SQL BM25,
sentence windows, the transitional-article weight) over the corpus stored in a namespace; the
lab's tuning of the dense weight (`tune_production_weight`) runs through it, so the weight that
ships is the weight measured on what ships. The exact methods (bm25*, dense, hybrid = RRF,
hybrid-weighted) score every chunk in numpy: references for the sweep's comparison tables (what
a method can do; the production gap is the cost of the approximate index and the app's
refinements), never used for tuning. Their fusions mirror `ragcore.retrieval.hybrid` without
sentence windows: candidates are each leg's top `FUSION_CANDIDATES`, RRF uses k = 60, weighted
fusion min-max normalises each leg over its candidates (missing leg = 0) and weighs the dense
part by w.

Every retriever returns, for a list of questions, an (n, depth) array of chunk indices (-1 pads
when fewer chunks exist), optionally with some chunks excluded per question (the unanswerable
protocol of the answer evaluation removes the question's own article).
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np

from eval.tquad import ChunkSet, Corpus, Progress, Question, chunk_corpus
from ragcore.core import TOKENIZERS, get_tokenizer
from ragcore.retrieval import BM25_B, BM25_EPSILON, BM25_K1, MIN_CANDIDATES, RRF_K, default_dense_weight

# The app's constants, never retyped: BM25Okapi's k1/b/epsilon (ragcore.retrieval.bm25), RRF's k and the
# per-leg candidates of ragcore.retrieval (max(MIN_CANDIDATES, 4k) = MIN_CANDIDATES for k <= 12).
FUSION_CANDIDATES = MIN_CANDIDATES
# The production lexical leg: prefix-5 postings, the question without stop words
# (ragcore.retrieval.hybrid.query_terms). `bm25-app`; the hybrids and the production gap use it.
APP_LEXICAL = "app"
HYBRID_LEXICAL = APP_LEXICAL
EMBED_BATCH = 64
WEIGHT_GRID: tuple[float, ...] = tuple(round(0.05 * i, 2) for i in range(21))

Exclusions = Sequence[Sequence[int]] | None


# --------------------------------------------------------------------------- BM25


class BM25Index:
    """BM25Okapi exactly as rank_bm25 0.2.2 scores it, vectorised over postings.

    rank_bm25 loops over every document for every query token (about 3 s for 892 queries at
    1000-character chunks, 10 s at 500); here each term keeps its postings (document indices and
    precomputed tf-length weights), so a query touches only the documents containing its terms.
    Same idf (negative idf → epsilon × mean idf), same k1/b, same sum over query tokens with
    repetition; a test asserts equal scores.
    """

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = BM25_K1, b: float = BM25_B, epsilon: float = BM25_EPSILON):
        self.n_docs = len(docs)
        vocab: dict[str, int] = {}
        doc_idx: list[int] = []
        term_idx: list[int] = []
        tfs: list[int] = []
        lengths = np.zeros(self.n_docs, dtype=np.float64)
        for d, tokens in enumerate(docs):
            lengths[d] = len(tokens)
            for term, tf in Counter(tokens).items():
                doc_idx.append(d)
                term_idx.append(vocab.setdefault(term, len(vocab)))
                tfs.append(tf)
        self.vocab = vocab
        terms = np.asarray(term_idx, dtype=np.int64)
        docs_arr = np.asarray(doc_idx, dtype=np.int64)
        tf = np.asarray(tfs, dtype=np.float64)
        avgdl = lengths.sum() / max(self.n_docs, 1)
        df = np.bincount(terms, minlength=len(vocab)).astype(np.float64)
        self.df = df
        idf = np.log(self.n_docs - df + 0.5) - np.log(df + 0.5)
        average = idf.sum() / max(len(idf), 1)
        self.idf = np.where(idf < 0, epsilon * average, idf)
        weights = tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[docs_arr] / avgdl))
        order = np.argsort(terms, kind="stable")
        self.post_docs = docs_arr[order]
        self.post_weights = weights[order]
        self.ptr = np.concatenate([[0], np.cumsum(np.bincount(terms, minlength=len(vocab)))])

    def scores(self, query: Sequence[str]) -> np.ndarray:
        out = np.zeros(self.n_docs, dtype=np.float64)
        for term, qtf in Counter(query).items():
            t = self.vocab.get(term)
            if t is None:
                continue
            lo, hi = self.ptr[t], self.ptr[t + 1]
            out[self.post_docs[lo:hi]] += qtf * self.idf[t] * self.post_weights[lo:hi]
        return out

    def score_matrix(self, queries: Sequence[Sequence[str]]) -> np.ndarray:
        return np.vstack([self.scores(q) for q in queries]) if queries else np.zeros((0, self.n_docs))


def tokenize_all(texts: Sequence[str], tokenizer: str) -> list[list[str]]:
    """Tokenise texts with a `ragcore.core.text` tokenizer ("prefix5" is `lexical_tokens`, the postings' form)."""
    fn = get_tokenizer(tokenizer)
    return [fn(t) for t in texts]


def indexed_texts(chunks: ChunkSet) -> list[str]:
    """What the app's postings hold of each chunk as `store_articles` stores it: its lexical text
    (`ragcore.documents.lexical_texts`; a TQuAD chunk lies in no law article, so it is its text)."""
    from ragcore.documents import lexical_texts

    return lexical_texts(chunks.texts, [None] * len(chunks))


# --------------------------------------------------------------------------- workspace


@dataclass
class Workspace:
    """Everything a sweep computes once and shares: chunk sets, token lists, indices, embeddings.

    Embeddings go through the app's embedding cache (`ragcore.embed.cache`, in `cache_db`),
    so the lab, ingest and reembed embed each text once per model between them. `open_cache`
    opens that database when the first embedder is needed (a BM25-only run needs none); with
    neither, the workspace embeds without a cache.
    """

    corpus: Corpus
    cache_db: object | None = None
    embedder_factory: Callable[[str], object] | None = None
    progress: Progress | None = None
    settings: object | None = None
    open_cache: Callable[[], object] | None = None
    owns_cache_db: bool = False
    _chunks: dict[int, ChunkSet] = field(default_factory=dict)
    _tokens: dict[tuple[int, str], list[list[str]]] = field(default_factory=dict)
    _bm25: dict[tuple[int, str], BM25Index] = field(default_factory=dict)
    _embedders: dict[str, object] = field(default_factory=dict)
    _vectors: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    tuned: dict[str, dict] = field(default_factory=dict)

    def chunks(self, size: int) -> ChunkSet:
        if size not in self._chunks:
            self._chunks[size] = chunk_corpus(self.corpus, size, self.progress)
        return self._chunks[size]

    def bm25(self, size: int, tokenizer: str) -> BM25Index:
        key = (size, tokenizer)
        if key not in self._bm25:
            if self.progress:
                self.progress(f"indexing {tokenizer} {size}", 0, 1)
            self._bm25[key] = BM25Index(tokenize_all(indexed_texts(self.chunks(size)), tokenizer))
            if self.progress:
                self.progress(f"indexing {tokenizer} {size}", 1, 1)
        return self._bm25[key]

    def embedder(self, spec: str = "default"):
        """The spec's embedder, behind the embedding cache when the workspace has one."""
        if spec not in self._embedders:
            if self.embedder_factory is None:
                raise RuntimeError("this workspace has no embedder factory")
            from ragcore.embed import CachedEmbedder

            embedder = self.embedder_factory(spec)
            if self.cache_db is None and self.open_cache is not None:
                self.cache_db, self.owns_cache_db = self.open_cache(), True
            if self.cache_db is not None and not isinstance(embedder, CachedEmbedder):
                embedder = CachedEmbedder(embedder, self.cache_db, cache_questions=True)  # the lab's dev questions
            self._embedders[spec] = embedder
        return self._embedders[spec]

    def loaded_embedders(self) -> dict[str, object]:
        """The embedders this workspace has created (for the run card)."""
        return dict(self._embedders)

    def vectors(self, spec: str, texts: Sequence[str], label: str, kind: str) -> np.ndarray:
        """Vectors of `texts` as questions (kind "q", embed_queries) or passages ("p", embed_passages)."""
        if kind not in ("q", "p"):
            raise ValueError(f"kind must be 'q' or 'p', got {kind!r}")
        key = (spec, label, kind)
        if key not in self._vectors:
            self._vectors[key] = self._embed(self.embedder(spec), texts, kind, f"embedding {label}")
        return self._vectors[key]

    def _embed(self, embedder, texts: Sequence[str], kind: str, stage: str) -> np.ndarray:
        """In batches, so the progress bar moves and every batch is in the cache once it is paid for."""
        embed = embedder.embed_queries if kind == "q" else embedder.embed_passages
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        if self.progress:
            self.progress(stage, 0, len(texts))
        for start in range(0, len(texts), EMBED_BATCH):
            out[start : start + EMBED_BATCH] = embed(list(texts[start : start + EMBED_BATCH]))
            if self.progress:
                self.progress(stage, min(start + EMBED_BATCH, len(texts)), len(texts))
        return out

    def close(self) -> None:
        """Close the cache database if this workspace opened it."""
        if self.owns_cache_db and self.cache_db is not None:
            self.cache_db.close()  # type: ignore[attr-defined]
            self.cache_db = None


# --------------------------------------------------------------------------- ranking helpers


def top_indices(scores: np.ndarray, depth: int, exclude: Exclusions = None) -> np.ndarray:
    """Top `depth` columns per row by descending score, ties by lower index; excluded/-inf dropped."""
    scores = np.array(scores, dtype=np.float64, copy=True)
    if exclude is not None:
        for row, cols in enumerate(exclude):
            if len(cols):
                scores[row, list(cols)] = -np.inf
    n = scores.shape[1]
    depth_eff = min(depth, n)
    if depth_eff < n:
        part = np.argpartition(-scores, depth_eff - 1, axis=1)[:, :depth_eff]
        # argpartition may cut inside a tie; keep every column tied with the cut-off score
        cutoff = np.take_along_axis(scores, part, axis=1).min(axis=1, keepdims=True)
        candidates = [np.flatnonzero(row >= c) for row, c in zip(scores, cutoff[:, 0], strict=True)]
    else:
        candidates = [np.arange(n) for _ in range(scores.shape[0])]
    out = np.full((scores.shape[0], depth), -1, dtype=np.int64)
    for r, cols in enumerate(candidates):
        ordered = cols[np.lexsort((cols, -scores[r, cols]))]
        ordered = ordered[np.isfinite(scores[r, ordered])][:depth]
        out[r, : len(ordered)] = ordered
    return out


def _leg_candidates(scores: np.ndarray, exclude: Exclusions, n: int) -> np.ndarray:
    return top_indices(scores, n, exclude)


def rrf_scores(legs: Sequence[np.ndarray], n_docs: int, exclude: Exclusions = None,
               candidates: int = FUSION_CANDIDATES, k: int = RRF_K) -> np.ndarray:
    """RRF over each leg's top candidates; chunks in no leg's candidates get -inf."""
    fused = np.full((legs[0].shape[0], n_docs), -np.inf)
    for leg in legs:
        top = _leg_candidates(leg, exclude, candidates)
        for r, row in enumerate(top):
            row = row[row >= 0]
            current = fused[r, row]
            fused[r, row] = np.where(np.isinf(current), 0.0, current) + 1.0 / (k + np.arange(1, len(row) + 1))
    return fused


def _minmax(values: np.ndarray) -> np.ndarray:
    span = values.max() - values.min() if len(values) else 0.0
    return (values - values.min()) / span if span > 0 else np.ones_like(values)


def weighted_scores(dense: np.ndarray, lexical: np.ndarray, weight: float, exclude: Exclusions = None,
                    candidates: int = FUSION_CANDIDATES) -> np.ndarray:
    """w × minmax(dense) + (1 − w) × minmax(BM25), each over its leg's candidates, missing = 0."""
    n_q, n_docs = dense.shape
    fused = np.full((n_q, n_docs), -np.inf)
    for leg, w in ((dense, weight), (lexical, 1.0 - weight)):
        top = _leg_candidates(leg, exclude, candidates)
        for r, row in enumerate(top):
            row = row[row >= 0]
            current = fused[r, row]
            fused[r, row] = np.where(np.isinf(current), 0.0, current) + w * _minmax(leg[r, row])
    return fused


# --------------------------------------------------------------------------- retrievers


class Retriever:
    """Base: `rank(ws, size, questions, split, depth, exclude)` → (n, depth) chunk indices."""

    name = "retriever"
    description = ""

    def config(self) -> dict:
        return {"name": self.name, "description": self.description}

    def rank(self, ws: Workspace, size: int, questions: Sequence[Question], split: str, depth: int,
             exclude: Exclusions = None) -> np.ndarray:
        return top_indices(self.scores(ws, size, questions, split), depth, exclude)

    def scores(self, ws: Workspace, size: int, questions: Sequence[Question], split: str) -> np.ndarray:
        raise NotImplementedError


def app_queries(ws, index: BM25Index, questions) -> list[list[str]]:
    """The app's lexical query of each question (ragcore.retrieval.query.build_query: stop words
    dropped, ASCII-typed words respelled against this index's vocabulary as the app respells them
    against the role's lexicon, everyday words expanded by the database's table)."""
    from ragcore.retrieval import build_query, fold_index, list_expansions, respell, respelling_candidates

    expansions = list_expansions(ws.cache_db) if ws.cache_db is not None else []
    df = {term: int(index.df[i]) for term, i in index.vocab.items()}
    known, by_fold = set(df), fold_index(df)
    return [build_query(q.question, respell(respelling_candidates(q.question), known, by_fold), expansions).terms
            for q in questions]


class BM25Retriever(Retriever):
    def __init__(self, tokenizer: str = "plain"):
        if tokenizer not in TOKENIZERS and tokenizer != APP_LEXICAL:
            raise ValueError(f"unknown tokenizer {tokenizer!r}")
        self.tokenizer = tokenizer
        self.name = "bm25" if tokenizer == "plain" else f"bm25-{tokenizer}"
        self.description = (f"BM25Okapi (k1 1.5, b 0.75) over ragcore.text {tokenizer} tokens, exact"
                            if tokenizer != APP_LEXICAL else
                            "BM25Okapi (k1 1.5, b 0.75) over prefix-5 tokens, the question without stop words "
                            "(ragcore.retrieval.query.build_query: respelled, expanded), exact: the app's lexical leg")

    def config(self) -> dict:
        return {**super().config(), "tokenizer": self.tokenizer, "k1": BM25_K1, "b": BM25_B}

    def scores(self, ws, size, questions, split):
        app = self.tokenizer == APP_LEXICAL
        index = ws.bm25(size, "prefix5" if app else self.tokenizer)
        if ws.progress:
            ws.progress(f"scoring {self.name} {size}", 0, len(questions))
        queries = (app_queries(ws, index, questions) if app
                   else tokenize_all([q.question for q in questions], self.tokenizer))
        out = index.score_matrix(queries)
        if ws.progress:
            ws.progress(f"scoring {self.name} {size}", len(questions), len(questions))
        return out


class DenseRetriever(Retriever):
    def __init__(self, spec: str = "default"):
        self.spec = spec
        self.name = "dense" if spec == "default" else f"dense:{spec}"
        self.description = "exact cosine over the embedder's L2-normalised vectors"

    def config(self) -> dict:
        return {**super().config(), "embedder": self.spec}

    def scores(self, ws, size, questions, split):
        chunks = ws.chunks(size)
        c = ws.vectors(self.spec, chunks.texts, f"chunks {size}", "p")
        q = ws.vectors(self.spec, [x.question for x in questions], f"{split} questions ({len(questions)})", "q")
        return q @ c.T


class RRFRetriever(Retriever):
    """Reference: exact RRF in numpy (no sentence windows); the app's is `production-rrf`."""

    def __init__(self, spec: str = "default", lexical: str = HYBRID_LEXICAL):
        self.dense, self.lexical = DenseRetriever(spec), BM25Retriever(lexical)
        self.name = "hybrid" if spec == "default" else f"hybrid:{spec}"
        self.description = (f"reference: exact RRF (k = {RRF_K}) of {self.lexical.name} and {self.dense.name}, "
                            f"top {FUSION_CANDIDATES} each, no sentence windows")

    def rank(self, ws, size, questions, split, depth, exclude=None):
        legs = [self.lexical.scores(ws, size, questions, split), self.dense.scores(ws, size, questions, split)]
        return top_indices(rrf_scores(legs, len(ws.chunks(size)), exclude), depth)


class WeightedRetriever(Retriever):
    """Reference: exact weighted fusion in numpy (no sentence windows) at a given weight, or at the
    weight that ships for the embedder (ragcore/measured/retrieval.json, tuned through the
    production path by `tune_production_weight`). The app's is `production-weighted`."""

    def __init__(self, spec: str = "default", lexical: str = HYBRID_LEXICAL, weight: float | None = None):
        self.dense, self.lexical = DenseRetriever(spec), BM25Retriever(lexical)
        self.fixed = weight
        self.name = "hybrid-weighted" if spec == "default" else f"hybrid-weighted:{spec}"
        self.description = ("reference: exact w·minmax(dense) + (1−w)·minmax(BM25) over top candidates, "
                            "no sentence windows; w given or the shipped weight")

    def weight(self, ws: Workspace, size: int) -> float:
        if self.fixed is not None:
            return self.fixed
        key = f"{self.name}@{size}"
        if key not in ws.tuned:
            ws.tuned[key] = {"weight": default_dense_weight(ws.embedder(self.dense.spec)),
                             "from": "the shipped weight (ragcore/measured/retrieval.json)"}
        return ws.tuned[key]["weight"]

    def rank(self, ws, size, questions, split, depth, exclude=None):
        w = self.weight(ws, size)
        dense = self.dense.scores(ws, size, questions, split)
        lexical = self.lexical.scores(ws, size, questions, split)
        return top_indices(weighted_scores(dense, lexical, w, exclude), depth)


# --------------------------------------------------------------------------- registry


def make_retriever(name: str, **options) -> Retriever:
    """production[-<mode>] (the app's retrieval), production-weighted-w<weight> (the app's at a
    fixed dense weight); references: bm25, bm25-<tokenizer>, dense[:model], hybrid[:model] (= RRF),
    hybrid-rrf, hybrid-weighted[:model] (the shipped weight), hybrid-weighted-w<weight>, weighted."""
    base, _, model = name.partition(":")
    spec = model or "default"
    if base == "bm25":
        return BM25Retriever("plain")
    if base.startswith("bm25-"):
        return BM25Retriever(base[5:])
    if base == "dense":
        return DenseRetriever(spec)
    if base in ("hybrid", "hybrid-rrf", "rrf"):
        r = RRFRetriever(spec)
        r.name = name
        return r
    if base.startswith("hybrid-weighted-w"):  # a fixed weight, e.g. hybrid-weighted-w0.3
        r = WeightedRetriever(spec, weight=float(base.removeprefix("hybrid-weighted-w")))
        r.name = name
        return r
    if base in ("hybrid-weighted", "weighted"):
        r = WeightedRetriever(spec, weight=options.get("weight"))
        r.name = name
        return r
    if base.startswith("production-weighted-w"):
        return ProductionRetriever("weighted", weight=float(base.removeprefix("production-weighted-w")))
    if base == "production" or base.startswith("production-"):
        return ProductionRetriever(base.partition("-")[2] or None)
    raise ValueError(f"unknown retriever {name!r}")


def known_retrievers() -> list[str]:
    names = ["bm25"] + [f"bm25-{t}" for t in TOKENIZERS if t != "plain"] + [f"bm25-{APP_LEXICAL}"]
    return names + ["dense", "hybrid", "hybrid-weighted", "production", "production-lexical", "production-dense",
                    "production-rrf", "production-weighted"]


def describe(retrievers: Sequence[Retriever]) -> list[dict]:
    return [r.config() for r in retrievers]


# --------------------------------------------------------------------------- production path


class _QueryVectors:
    """An embedder for ragcore.retrieval that serves the sweep's question vectors first."""

    def __init__(self, embedder, texts: Sequence[str], vectors: np.ndarray):
        self.inner = embedder
        self.kind, self.model, self.name, self.dim = embedder.kind, embedder.model, embedder.name, embedder.dim
        self.known = {t: v for t, v in zip(texts, vectors, strict=True)}

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if all(t in self.known for t in texts):
            return np.vstack([self.known[t] for t in texts]).astype(np.float32)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)


def corpus_fingerprint(chunks: ChunkSet, model: str) -> str:
    digest = hashlib.sha256(model.encode())
    for c in chunks.chunks:
        digest.update(f"{c.chunk_id}:{c.start}:{c.end}\n".encode())
    return digest.hexdigest()[:16]


def corpus_windows(ws: Workspace, chunks: ChunkSet) -> dict[int, list]:
    """The sentence windows of every chunk of the size (`ragcore.documents.windows`, as an upload
    computes them), by chunk index, and their passage vectors (the workspace's cache)."""
    from ragcore.documents import chunk_windows

    by_chunk: dict[int, list] = {}
    texts: list[str] = []
    rows: dict[int, list[int]] = {}
    for c in chunks.chunks:
        found = chunk_windows(c.text, None)
        by_chunk[c.index] = found
        rows[c.index] = list(range(len(texts), len(texts) + len(found)))
        texts.extend(w.text for w in found)
    vectors = ws.vectors("default", texts, f"windows {chunks.size}", "p")
    return {i: [(w, vectors[r]) for w, r in zip(found, rows[i], strict=True)] for i, found in by_chunk.items()}


def store_articles(conn, chunks: ChunkSet, corpus: Corpus, articles: Sequence[int], vectors: np.ndarray,
                   marker: str, windows: dict[int, list] | None = None) -> None:
    """Inside the caller's transaction: each article as one document through
    `ragcore.documents.ingest.store_document` (the upload's own write path: COPY, lexical tokens,
    triggers), with its chunks' sentence windows (`corpus_windows`) when given."""
    from ragcore.core import Chunk
    from ragcore.documents import store_document

    for index in articles:
        article = corpus.articles[index]
        members = chunks.by_article[article.index]
        if not members:
            continue
        data = article.text.encode("utf-8")  # the key is hashed in too: some articles share a text
        meta = {
            "title": article.title[:500] or article.key,
            "filename": article.key,
            "sha256": hashlib.sha256(article.key.encode() + b"\0" + data).hexdigest(),
            "size_bytes": len(data),
            "page_count": 1,
            "allowed_roles": ["admin"],
            "uploaded_by": marker,
        }
        pieces = [Chunk(ordinal=chunks.chunks[i].ordinal, text=chunks.chunks[i].text, page_start=1, page_end=1,
                        article=None, char_start=chunks.chunks[i].start, char_end=chunks.chunks[i].end)
                  for i in members]
        own = [(replace(w, chunk=n), v) for n, i in enumerate(members) for w, v in (windows or {}).get(i, [])]
        store_document(conn, meta, pieces, vectors[members], windows=[w for w, _ in own],
                              window_vectors=np.vstack([v for _, v in own]) if own else None)


def store_corpus(db, chunks: ChunkSet, corpus: Corpus, vectors: np.ndarray, marker: str,
                 progress: Progress | None = None, batch: int = 100, windows: dict[int, list] | None = None) -> None:
    """Write the chunked corpus, one document per article, `batch` articles per transaction."""
    total = len(corpus.articles)
    for lo in range(0, total, batch):
        with db.connection() as conn:
            store_articles(conn, chunks, corpus, range(lo, min(lo + batch, total)), vectors, marker, windows)
        if progress:
            progress(f"storing corpus {chunks.size}", min(lo + batch, total), total)


class ProductionRetriever(Retriever):
    """The app's retrieval SQL over the eval corpus in its own namespace `eval_tquad_<size>`.

    `weight` (weighted mode only): the dense weight passed to `ragcore.retrieval.search`; None =
    the shipped weight, as the app runs."""

    def __init__(self, mode: str | None = None, weight: float | None = None):
        if weight is not None and mode != "weighted":
            raise ValueError("a dense weight needs the weighted mode (production-weighted-w<weight>)")
        self.mode = mode
        self.weight = weight
        self.name = "production" if mode is None else f"production-{mode}"
        if weight is not None:
            self.name += f"-w{weight}"
        self.description = "ragcore.retrieval.hybrid.search (HNSW + SQL BM25) in namespace eval_tquad_<size>, role admin"
        self.keep_namespace = False
        self.used: set[int] = set()
        self.report: dict[int, dict] = {}
        self.markers: dict[int, str] = {}
        self._windows: dict[int, dict[int, list]] = {}

    def config(self) -> dict:
        return {**super().config(), "mode": self.mode or "auto (resolve_mode)", "role": "admin",
                "weight": self.weight if self.weight is not None else "shipped"}

    def namespace(self, size: int) -> str:
        return f"eval_tquad_{size}"

    def windows(self, ws: Workspace, size: int) -> dict[int, list]:
        """The size's sentence windows with their vectors, computed once per sweep."""
        if size not in self._windows:
            self._windows[size] = corpus_windows(ws, ws.chunks(size))
        return self._windows[size]

    def _open(self, ws: Workspace, size: int):
        """Open (and fill, unless an identical corpus is already there) the size's namespace."""
        from ragcore import store as dbmod

        chunks = ws.chunks(size)
        embedder = ws.embedder("default")
        marker = f"eval-lab:{corpus_fingerprint(chunks, embedder.name)}"
        self.markers[size] = marker
        db = dbmod.open_database(ws.settings, self.namespace(size))
        with db.connection() as conn:
            stored = conn.execute("SELECT count(*), count(DISTINCT uploaded_by), max(uploaded_by) FROM documents").fetchone()
            stored_chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        fresh = stored[0] == 0
        complete = stored[1] == 1 and stored[2] == marker and stored_chunks == len(chunks)
        if not fresh and not complete:  # another corpus, another model, or an interrupted store
            dbmod.drop_namespace(db, self.namespace(size))
            db.close()
            db = dbmod.open_database(ws.settings, self.namespace(size))
            fresh = True
        space = dbmod.ensure_embedding_space(db, embedder.name, embedder.dim, windows=ws.settings.dense_windows)
        if fresh:
            vectors = ws.vectors("default", chunks.texts, f"chunks {size}", "p")
            windows = self.windows(ws, size) if space.windows else None
            store_corpus(db, chunks, ws.corpus, vectors, marker, ws.progress, windows=windows)
        return db

    def query(self, db, ws: Workspace, size: int, questions: Sequence[Question], split: str, depth: int,
              weight: float | None = None, label: str | None = None) -> tuple[str, np.ndarray]:
        """(mode, rankings) of the questions through `ragcore.retrieval.search` on an open namespace
        (weight None: this retriever's); the weight tuning calls it once per weight."""
        from ragcore.retrieval import resolve_mode, search

        embedder = ws.embedder("default")
        texts = [q.question for q in questions]
        qe = _QueryVectors(embedder, texts, ws.vectors("default", texts, f"{split} questions ({len(texts)})", "q"))
        mode = resolve_mode(ws.settings, embedder, self.mode)
        weight = self.weight if weight is None else weight
        index = self.chunk_index(db, ws, size)
        out = np.full((len(questions), depth), -1, dtype=np.int64)
        for qi, text in enumerate(texts):
            sources = search(db, qe, text, "admin", k=depth, mode=mode, settings=ws.settings, weight=weight)
            ids = [index[s.chunk_id] for s in sources][:depth]
            out[qi, : len(ids)] = ids
            if ws.progress and (qi % 25 == 0 or qi == len(texts) - 1):
                ws.progress(label or f"querying {self.name} {size}", qi + 1, len(texts))
        return mode, out

    def rank(self, ws, size, questions, split, depth, exclude=None):
        from ragcore import store as dbmod

        if exclude is not None and any(len(e) for e in exclude):
            raise ValueError("the production retriever cannot exclude chunks; use an exact retriever")
        started = time.perf_counter()
        db = self._open(ws, size)
        stored_at = time.perf_counter()
        try:
            mode, out = self.query(db, ws, size, questions, split, depth)
            self.report[size] = {"mode": mode, "namespace": self.namespace(size),
                                 "store_seconds": round(stored_at - started, 2),
                                 "query_ms_mean": round((time.perf_counter() - stored_at) * 1000 / max(len(questions), 1), 2)}
            self.report[size].update(self._gap(ws, size, questions, split, depth, mode, out))
        finally:
            if self.keep_namespace:
                self.used.add(size)
            else:
                dbmod.drop_namespace(db, self.namespace(size))
            db.close()
        return out

    @staticmethod
    def chunk_index(db, ws: Workspace, size: int, document_ids: Sequence[int] | None = None) -> dict[int, int]:
        """Database chunk id → index into the size's ChunkSet (by article key and ordinal)."""
        index = {c.chunk_id: c.index for c in ws.chunks(size).chunks}
        sql = "SELECT c.id, d.filename, c.ordinal FROM chunks c JOIN documents d ON d.id = c.document_id"
        with db.connection() as conn:
            rows = (conn.execute(sql + " WHERE d.id = ANY(%s)", (list(document_ids),)) if document_ids is not None
                    else conn.execute(sql))
            return {row[0]: index[f"{row[1]}#{row[2]}"] for row in rows}

    @contextmanager
    def withdrawn(self, db, ws: Workspace, size: int, article: int, index: dict[int, int]) -> Iterator[None]:
        """The namespace without one article (its document deleted, statistics updated by the
        triggers) for the duration of the block, then stored again the same way; `index` is
        updated with the new chunk ids. The answer evaluation's unanswerable protocol."""
        from ragcore.store import current_embedding_space

        key = ws.corpus.articles[article].key
        with db.connection() as conn:
            gone = [row[0] for row in conn.execute("DELETE FROM chunks WHERE document_id IN "
                                                   "(SELECT id FROM documents WHERE filename = %s) RETURNING id", (key,))]
            conn.execute("DELETE FROM documents WHERE filename = %s", (key,))
        for chunk_id in gone:
            index.pop(chunk_id, None)
        try:
            yield
        finally:
            chunks = ws.chunks(size)
            vectors = ws.vectors("default", chunks.texts, f"chunks {size}", "p")
            windows = self.windows(ws, size) if current_embedding_space(db).windows else None
            with db.connection() as conn:
                store_articles(conn, chunks, ws.corpus, [article], vectors, self.markers[size], windows)
                ids = [row[0] for row in conn.execute("SELECT id FROM documents WHERE filename = %s", (key,))]
            index.update(self.chunk_index(db, ws, size, ids))

    def cleanup(self, ws: Workspace) -> None:
        """Drop the namespaces kept during a sweep (several production modes share one per size)."""
        from ragcore import store as dbmod

        for size in sorted(self.used):
            db = dbmod.Database(dbmod.database_url(ws.settings), "public")
            try:
                dbmod.drop_namespace(db, self.namespace(size))
            finally:
                db.close()
        self.used.clear()

    def _gap(self, ws, size, questions, split, depth, mode: str, production: np.ndarray) -> dict:
        """The same method computed exactly (numpy, every chunk): metric deltas and top-k agreement."""
        from eval.metrics import per_question
        from eval.relevance import relevance

        weight = self.weight if self.weight is not None else default_dense_weight(ws.embedder("default"))
        exact: Retriever = {
            "lexical": BM25Retriever(HYBRID_LEXICAL),
            "dense": DenseRetriever("default"),
            "rrf": RRFRetriever("default"),
            "weighted": WeightedRetriever("default", weight=weight),
        }[mode]
        top = exact.rank(ws, size, questions, split, depth)
        rel = relevance(ws.chunks(size), questions)
        a, b = per_question(production.tolist(), rel), per_question(top.tolist(), rel)
        same5 = float(np.mean([list(x[:5]) == list(y[:5]) for x, y in zip(production, top, strict=True)]))
        overlap = float(np.mean([len(set(x) & set(y)) / depth for x, y in zip(production, top, strict=True)]))
        return {
            "exact_counterpart": exact.name + (f" (w={weight})" if mode == "weighted" else ""),
            "exact_recall@5": float(b["recall@5"].mean()),
            "production_recall@5": float(a["recall@5"].mean()),
            "gap_recall@5": float(a["recall@5"].mean() - b["recall@5"].mean()),
            "gap_mrr@10": float(a["mrr@10"].mean() - b["mrr@10"].mean()),
            "identical_top5": same5,
            "top10_overlap": overlap,
        }


def tune_production_weight(ws: Workspace, size: int, train_questions: int = 1000,
                           weights: Sequence[float] = WEIGHT_GRID, keep_namespace: bool = False) -> dict:
    """The one tuning of the dense weight: grid search on a fixed sample of TQuAD train questions
    through the app's retrieval (`ragcore.retrieval.search`, weighted mode, the weight passed
    explicitly), best Recall@5, then MRR@10, then the lower w. The namespace is filled once and
    queried at every weight; `keep_namespace` leaves it for a sweep that follows (whose
    `ProductionRetriever.cleanup` drops it)."""
    from eval.metrics import per_question
    from eval.relevance import relevance
    from eval.tquad import sample_train_questions

    questions = sample_train_questions(ws.corpus, train_questions)
    rel = relevance(ws.chunks(size), questions)
    retriever = ProductionRetriever("weighted")
    retriever.keep_namespace = True
    db = retriever._open(ws, size)
    grid = []
    try:
        for i, w in enumerate(weights):
            _, top = retriever.query(db, ws, size, questions, "train", 10, weight=w,
                                     label=f"tuning weight {size}: w {w} ({i + 1}/{len(weights)})")
            scores = per_question(top.tolist(), rel)
            grid.append({"weight": w, "recall@5": float(scores["recall@5"].mean()),
                         "mrr@10": float(scores["mrr@10"].mean())})
    finally:
        if not keep_namespace:
            from ragcore import store as dbmod

            dbmod.drop_namespace(db, retriever.namespace(size))
        db.close()
    best = max(grid, key=lambda g: (g["recall@5"], g["mrr@10"], -g["weight"]))
    return {"weight": best["weight"], "train_questions": len(questions), "objective": "recall@5 then mrr@10",
            "path": "ragcore.retrieval.search (production, weighted mode)", "grid": grid}
