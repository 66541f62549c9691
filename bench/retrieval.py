"""Retrieval at company scale: `python -m bench.retrieval [--chunks 10000,100000,300000]`.

For each size N, a scratch namespace gets N synthetic chunks built from TQuAD text (the 1000-
character lab chunks, re-mixed with a sentence of another chunk beyond the first pass) in
documents of 50 chunks with random roles (1–2 of isg, ik, uretim, personel), and real USE
vectors of the base chunks plus a little noise (no N texts to embed, realistic neighbourhoods).
Rows are loaded through the statistics triggers, then the HNSW and per-role posting indexes
are built, then VACUUM ANALYZE (index-only scans need the visibility map). Measured:

* latency of `ragcore.retrieval.hybrid.retrieve` (question vectors cached: embedding excluded) for
  TQuAD dev questions, per mode and role: p50 / p95 / p99 — and for a user holding three roles
  (isg, ik, uretim: their set's reader, issue 38), against the one-role users of the same run;
* the non-admin lexical leg's p50 / p95 on the role's own posting indexes against the global
  indexes with the role filter (issue 21: the per-role indexes dropped for one pass);
* sizes on disk (chunk heap, postings heap and indexes, each HNSW index, statistics tables);
* build time (row load, each index, vacuum);
* the EXPLAIN (ANALYZE, BUFFERS) plan of the slowest query;
* the incremental cost of storing and deleting Law 6331 (24 pages) at N chunks against an
  empty database — `ragcore.documents.ingest.store_document` and `ragcore.documents.catalog.delete_document`,
  PDF extraction and embedding excluded (they do not depend on the corpus).

Writes bench/results/retrieval.md (the markdown section), retrieval.json (its run card with every
number) and retrieval_p95.png (p95 against chunks per mode, for the README).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench import RESULTS, percentile, publish
from ragcore import store as dbmod
from ragcore.access import create_user
from ragcore.core import ROLES, Settings
from ragcore.retrieval import (
    FUSION,
    MODES,
    Fusion,
    lexical_leg,
    lexical_query,
    read_snapshot,
    retrieve,
    statement_base,
    statement_params,
)

DOC_CHUNKS = 50
BATCH_DOCS = 40  # documents per load transaction
ROLE_CHOICES = tuple(r for r in ROLES if r != "admin")
STAT_TABLES = ("lexicon", "lex_df_histogram", "lex_stats")
# A user holding three roles (issue 38) reads through their set's reader: its own statistics and
# indexes, built with the others'. Its p95 is compared with the one-role users' in the same run.
THREE_ROLES = ("ik", "isg", "uretim")
THREE_ROLE_READER = "+".join(THREE_ROLES)
ASKERS = (*ROLES, THREE_ROLE_READER)
THREE_ROLE_ASKERS = (*THREE_ROLES, THREE_ROLE_READER)
PREVIOUS_FUSION = Fusion(depth=50, transitional_weight=1.0)  # before issue 20's deeper pool, timed in the same run


# --------------------------------------------------------------------------- corpus


def base_corpus(settings: Settings, embedder) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """TQuAD 1000-character chunks with their vectors, and the dev questions with theirs."""
    from eval.tquad import chunk_corpus, load_corpus

    corpus = load_corpus(settings.tquad_dir)
    texts = [c.text for c in chunk_corpus(corpus, 1000).chunks]
    questions = [q.question for q in corpus.dev_questions]
    return texts, embedder.embed_passages(texts), questions, embedder.embed_queries(questions)


def synthetic_chunks(n_chunks: int, texts: Sequence[str], vectors: np.ndarray, seed: int = 0):
    """Yield (roles, [(text, vector)]) per document: the base chunks first, then re-mixes."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    for start in range(0, n_chunks, DOC_CHUNKS):
        size = min(DOC_CHUNKS, n_chunks - start)
        if start + size <= len(texts):
            picks = list(range(start, start + size))
        else:
            picks = [rng.randrange(len(texts)) for _ in range(size)]
        rows = []
        for i in picks:
            text = texts[i]
            if start >= len(texts):  # re-mix: the base text with a sentence of another chunk
                text = f"{text} {rng.choice(texts[rng.randrange(len(texts))].split('. '))}"
            vec = vectors[i] + nrng.normal(0, 0.02, vectors.shape[1]).astype(np.float32)
            rows.append((text, vec / np.linalg.norm(vec)))
        yield rng.sample(ROLE_CHOICES, rng.randint(1, 2)), rows


def load_documents(conn, batch: list[tuple[list[str], list[tuple[str, np.ndarray]]]], first: int) -> None:
    """One transaction: each document through `ragcore.documents.ingest.store_document`, the upload's
    own write path (documents row, chunks and postings by COPY, statistics triggers)."""
    import hashlib

    from ragcore.core import Chunk
    from ragcore.documents import store_document

    for offset, (roles, rows) in enumerate(batch):
        title = f"bench-{first + offset}"
        meta = {"title": title, "filename": f"{title}.pdf", "sha256": hashlib.sha256(title.encode()).hexdigest(),
                "size_bytes": 1, "page_count": 1, "allowed_roles": list(roles)}
        chunks = [Chunk(ordinal=ordinal, text=text, page_start=1, page_end=1, article=None, char_start=0,
                        char_end=len(text)) for ordinal, (text, _) in enumerate(rows)]
        store_document(conn, meta, chunks, np.vstack([vec for _, vec in rows]))


def role_indexes(db: dbmod.Database) -> dict[str, str]:
    """The indexes built after the load: the HNSW graphs and the per-reader posting indexes."""
    with db.connection() as conn:
        bits = dbmod.reader_bits(conn)
    return {**dbmod.embedding_indexes(bits), **dbmod.posting_indexes(bits)}


def build(db: dbmod.Database, n_chunks: int, texts: Sequence[str], vectors: np.ndarray) -> dict:
    """Load N chunks, then the HNSW and per-role posting indexes, then VACUUM ANALYZE; return
    the timings."""
    timings: dict[str, float] = {}
    with db.connection() as conn:
        for name in role_indexes(db):
            conn.execute(f"DROP INDEX IF EXISTS {name}")
    started = time.perf_counter()
    batch: list = []
    first = 0
    for doc in synthetic_chunks(n_chunks, texts, vectors):
        batch.append(doc)
        if len(batch) == BATCH_DOCS:
            with db.connection() as conn:
                load_documents(conn, batch, first)
            first += len(batch)
            batch = []
    if batch:
        with db.connection() as conn:
            load_documents(conn, batch, first)
    timings["load_s"] = time.perf_counter() - started
    timings.update(vacuum(db, "vacuum_load_s"))
    for name, statement in role_indexes(db).items():
        started = time.perf_counter()
        with db.connection() as conn:
            conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
            conn.execute(statement)
        timings[f"index_{name}_s"] = time.perf_counter() - started
    timings.update(vacuum(db, "vacuum_indexes_s"))
    return timings


def vacuum(db: dbmod.Database, key: str) -> dict[str, float]:
    started = time.perf_counter()
    with db.pool.connection() as conn:
        conn.autocommit = True
        for table in ("documents", "chunks", "postings", *STAT_TABLES):
            conn.execute(f"VACUUM (ANALYZE) {table}")
        conn.autocommit = False
    return {key: time.perf_counter() - started}


# --------------------------------------------------------------------------- measurements


def sizes(db: dbmod.Database) -> dict[str, int]:
    """Bytes on disk: heaps (with TOAST), every index of chunks and postings, the statistics."""
    with db.connection() as conn:
        out = {
            "chunks heap": conn.execute("SELECT pg_table_size('chunks')").fetchone()[0],
            "postings heap": conn.execute("SELECT pg_table_size('postings')").fetchone()[0],
        }
        for name, in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename IN ('chunks', 'postings') ORDER BY tablename, indexname"
        ).fetchall():
            out[name] = conn.execute("SELECT pg_relation_size(%s::regclass)", (name,)).fetchone()[0]
        for table in STAT_TABLES:
            out[table] = conn.execute("SELECT pg_total_relation_size(%s::regclass)", (table,)).fetchone()[0]
    return out


class CachedQuestions:
    """An embedder for retrieve() that serves precomputed question vectors (embedding excluded)."""

    def __init__(self, embedder, questions: Sequence[str], vectors: np.ndarray):
        self.kind, self.model, self.name, self.dim = embedder.kind, embedder.model, embedder.name, embedder.dim
        self.known = dict(zip(questions, vectors, strict=True))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.vstack([self.known[t] for t in texts]).astype(np.float32)


class ServerClock:
    """CPU time of the one backend serving the benchmark's pool (when the server runs on this
    machine): unlike wall time, it does not grow with other load on a shared machine."""

    def __init__(self, db: dbmod.Database) -> None:
        with db.connection() as conn:
            self.path = Path(f"/proc/{conn.info.backend_pid}/schedstat")

    def ms(self) -> float | None:
        try:
            return int(self.path.read_text().split()[0]) / 1e6
        except (OSError, ValueError, IndexError):
            return None


def _timed(clock: ServerClock, db: dbmod.Database, embedder, question: str, role: str, **how):
    """One retrieval and the server CPU ms it took (None when the server's clock cannot be read)."""
    before = clock.ms()
    run = retrieve(db, embedder, question, role, k=5, **how)
    after = clock.ms()
    return run, (after - before if before is not None and after is not None else None)


def _cell(timed: Sequence[tuple]) -> dict:
    """What a cell keeps of its questions' (retrieval, server CPU ms) pairs."""
    runs = [run for run, _ in timed]
    return {
        "ms": [r.ms for r in runs],
        "cpu_ms": [cpu for _, cpu in timed if cpu is not None],
        "pruned": sum(not r.extra["lexical_exhaustive"] for r in runs),
        "capped": sum(r.extra["lexical_capped"] for r in runs),
        "postings_read": [r.extra["lexical_postings_read"] for r in runs],
        "rounds": dict(Counter(r.extra["lexical_rounds"] for r in runs)),
        "slowest": max(runs, key=lambda r: r.ms).question,
    }


def latencies(db: dbmod.Database, embedder, questions: Sequence[str], roles: Sequence[str],
              modes: Sequence[str] = MODES, *, postings_budget: int) -> dict:
    """Wall and server-CPU ms per question for every (mode, role); one warm-up pass first. Within a
    mode the roles take turns question by question, so a slow spell of the machine falls on every
    role alike (the three-role comparison divides one cell by others)."""
    clock = ServerClock(db)
    for q in questions:
        retrieve(db, embedder, q, "admin", k=5, mode="rrf", postings_budget=postings_budget)
    out: dict = {}
    for mode in modes:
        timed: dict[str, list] = {role: [] for role in roles}
        for q in questions:
            for role in roles:
                timed[role].append(_timed(clock, db, embedder, q, role, mode=mode, postings_budget=postings_budget))
        out.update({(mode, role): _cell(timed[role]) for role in roles})
    return out


def budget_against_exact(db: dbmod.Database, embedder, questions: Sequence[str], roles: Sequence[str],
                         postings_budget: int) -> dict:
    """Weighted retrieval under the postings budget and with exact BM25 (budget 0), the two taking
    turns question by question and role by role, so that both meet the same machine: what the
    budget changes in the three-role comparison."""
    clock = ServerClock(db)
    ways = (("budget", postings_budget), ("exact", 0))
    timed: dict[str, dict[str, list]] = {name: {role: [] for role in roles} for name, _ in ways}
    for i, q in enumerate(questions):
        for role in roles:
            for name, budget in ways if i % 2 == 0 else ways[::-1]:
                timed[name][role].append(_timed(clock, db, embedder, q, role, mode="weighted", postings_budget=budget))
    return {name: {("weighted", role): _cell(per_role[role]) for role in roles} for name, per_role in timed.items()}


def budget_fidelity(db: dbmod.Database, questions: Sequence[str], roles: Sequence[str], postings_budget: int) -> dict:
    """The lexical leg's candidates under the budget against exact BM25's, per role: how many
    questions the budget bound, the same top 10 (in order), and the mean overlap of the top 10 and
    of the whole candidate list (what fusion pools)."""
    out = {}
    for role in roles:
        capped = same_top10 = 0
        top10, pool = [], []
        for q in questions:
            with db.connection() as conn:
                terms = lexical_query(conn, q, role).terms
            with read_snapshot(db) as conn:
                base = {**statement_base(conn, q, role), "postings_budget": postings_budget}
                got, *_ = lexical_leg(conn, terms, base)
                want, *_ = lexical_leg(conn, terms, {**base, "postings_budget": 0})
            capped += got.plan.capped
            same_top10 += got.ids[:10] == want.ids[:10]
            top10.append(len(set(got.ids[:10]) & set(want.ids[:10])) / max(1, min(10, len(want.ids))))
            pool.append(len(set(got.ids) & set(want.ids)) / max(1, len(want.ids)))
        out[role] = {"questions": len(questions), "capped": capped, "same_top10": same_top10,
                     "top10_overlap": statistics.fmean(top10), "pool_overlap": statistics.fmean(pool),
                     "pool_overlap_min": min(pool)}
    return out


def fusion_comparison(db: dbmod.Database, embedder, questions: Sequence[str], roles: Sequence[str], *,
                      postings_budget: int) -> dict:
    """Weighted retrieval with the previous fusion (50 candidates per leg) and with the app's, the
    two alternating question by question so that both meet the same load: the deeper pool's cost."""
    out: dict[str, list[float]] = {"previous": [], "current": []}
    for role in roles:
        for q in questions:
            for name, fusion in (("previous", PREVIOUS_FUSION), ("current", FUSION)):
                out[name].append(retrieve(db, embedder, q, role, k=5, mode="weighted", fusion=fusion,
                                          postings_budget=postings_budget).ms)
    return out


def lexical_on_global_postings(db: dbmod.Database, embedder, questions: Sequence[str], *, postings_budget: int) -> dict:
    """The non-admin lexical cells again with the per-role posting indexes dropped (the global
    indexes and the role filter serve them, as before issue 21), then the indexes rebuilt: the
    latency effect of reading only the role's own postings."""
    with db.connection() as conn:
        for name in dbmod.posting_indexes(dbmod.reader_bits(conn)):
            conn.execute(f"DROP INDEX {name}")
    try:
        cells = latencies(db, embedder, questions, ROLE_CHOICES, modes=("lexical",), postings_budget=postings_budget)
    finally:
        with db.connection() as conn:
            conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
            dbmod.create_role_indexes(conn)
        vacuum(db, "vacuum_rebuilt_s")
    return cells


class _Recorder:
    """Passes statements through to a connection and remembers them (to EXPLAIN them after)."""

    def __init__(self, conn) -> None:
        self.conn = conn
        self.statements: list[tuple[str, dict]] = []

    def execute(self, query, params=None):
        self.statements.append((query, params))
        return self.conn.execute(query, params)


def explain(db: dbmod.Database, embedder, question: str, role: str, mode: str, *, postings_budget: int) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of every statement of one retrieval, planned as retrieve() plans it."""
    from ragcore.retrieval import (
        LEXICAL_SQL,
        MEAN_IDF_SQL,
        RETRIEVAL_SQL,
        TERM_STATS_SQL,
        THRESHOLD_SQL,
        default_dense_weight,
    )

    names = {TERM_STATS_SQL: "role statistics", MEAN_IDF_SQL: "mean idf",
             THRESHOLD_SQL: "pruning threshold", LEXICAL_SQL: "lexical leg",
             RETRIEVAL_SQL: "dense leg, fusion, evidence"}
    qvec = embedder.embed_queries([question])[0]
    with read_snapshot(db) as conn:
        recorder = _Recorder(conn)
        params = statement_params(recorder, question, qvec, role, k=5, mode=mode,
                                  weight=default_dense_weight(embedder),  # as retrieve() chooses it
                                  postings_budget=postings_budget)
        recorder.statements.append((RETRIEVAL_SQL, params))
        parts = []
        for query, values in recorder.statements:
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN (ANALYZE, BUFFERS) " + query, values))
            parts.append(f"-- {names.get(query, 'statement')}\n{plan}")
    return "\n\n".join(parts)


def law_chunks(settings: Settings, embedder):
    """Law 6331 extracted and chunked as an upload would be, with its (cached) vectors."""
    from ragcore.documents import chunk_pages, extract_pages

    path = settings.documents_dir / "6331-is-sagligi-ve-guvenligi-kanunu.pdf"
    data = path.read_bytes()
    extracted = extract_pages(data)
    chunks = chunk_pages(extracted.pages, settings.chunk_size, settings.chunk_overlap)
    return data, extracted, chunks, embedder.embed_passages([c.text for c in chunks])


def ingest_cost(db: dbmod.Database, settings: Settings, law, runs: int = 3) -> dict:
    """Median seconds to store (one committed transaction) and delete Law 6331, as isg+personel,
    after one warm-up store and delete (not counted: the first touches cold index pages)."""
    import hashlib

    from ragcore.documents import delete_document, store_document

    data, extracted, chunks, vectors = law
    store, delete = [], []
    for run in range(runs + 1):
        meta = {"title": "Law 6331", "filename": "6331.pdf",
                "sha256": hashlib.sha256(data + str(run).encode()).hexdigest(), "size_bytes": len(data),
                "page_count": extracted.page_count, "allowed_roles": ["isg", "personel"]}
        started = time.perf_counter()
        with db.connection() as conn:
            doc_id = store_document(conn, meta, chunks, vectors)
        store.append(time.perf_counter() - started)
        started = time.perf_counter()
        delete_document(db, settings, doc_id)
        delete.append(time.perf_counter() - started)
    store, delete = store[1:], delete[1:]
    return {"chunks": len(chunks), "store_s": statistics.median(store), "delete_s": statistics.median(delete),
            "store_runs": store, "delete_runs": delete}


# --------------------------------------------------------------------------- report


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f} MB"


def section(n_chunks: int, result: dict, n_questions: int, version: str) -> str:
    t = result["timings"]
    index_s = sum(v for k, v in t.items() if k.startswith("index_"))
    lines = [f"## retrieval latency ({n_chunks:,} chunks)", "",
             f"{n_questions} TQuAD dev questions per cell, top-5, question vectors cached (embedding excluded), "
             f"pgvector {version}. Build: rows {t['load_s']:.1f} s, HNSW and per-role posting indexes {index_s:.1f} s "
             f"({', '.join(f'{k[6:-2]} {v:.1f} s' for k, v in t.items() if k.startswith('index_'))}), "
             f"vacuum {t['vacuum_load_s'] + t['vacuum_indexes_s']:.1f} s.", "",
             "Server CPU: the time the PostgreSQL backend spent on CPU for the question (independent "
             "of other load on the machine; wall time also includes the client and waiting for a core). "
             "Pruned: questions whose lexical leg was pruned rather than exhaustive; capped: of those, whose "
             "plan the postings budget cut.", "",
             "| mode | role | p50 ms | p95 ms | p99 ms | server CPU p50 / p95 ms | pruned | capped |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (mode, role), cell in result["cells"].items():
        ms, cpu = cell["ms"], cell["cpu_ms"]
        server = f"{percentile(cpu, 0.5):.1f} / {percentile(cpu, 0.95):.1f}" if cpu else "n/a"
        lines.append(f"| {mode} | {role} | {percentile(ms, 0.5):.1f} | {percentile(ms, 0.95):.1f} | "
                     f"{percentile(ms, 0.99):.1f} | {server} | {cell['pruned']}/{len(ms)} | {cell.get('capped', 0)} |")
    lines += ["", "Non-admin lexical leg, every non-admin role's questions together: reading the role's own "
              "posting indexes (as built) against the global indexes with the role filter (the per-role "
              "posting indexes dropped; same plans from the role's statistics).", "",
              "| lexical, non-admin | p50 ms | p95 ms | server CPU p50 / p95 ms |", "|---|---:|---:|---:|"]
    for label, cells in (("per-role posting indexes", {k: v for k, v in result["cells"].items()
                                                        if k[0] == "lexical" and k[1] != "admin"}),
                         ("global posting indexes", result["lexical_global"])):
        ms = [x for cell in cells.values() for x in cell["ms"]]
        cpu = [x for cell in cells.values() for x in cell["cpu_ms"]]
        server = f"{percentile(cpu, 0.5):.1f} / {percentile(cpu, 0.95):.1f}" if cpu else "n/a"
        lines.append(f"| {label} | {percentile(ms, 0.5):.1f} | {percentile(ms, 0.95):.1f} | {server} |")
    budget = result.get("postings_budget", 0)
    lines += ["", f"A user holding three roles ({', '.join(THREE_ROLES)}; their set's reader) against the one-role "
              "users (isg, ik, uretim: every question of each), same run, the roles taking turns question by "
              "question; target ≤ 1.3 (issue 38). Postings read: what the lexical statement scans per question "
              "(`LexicalPlan.postings_read`, mean), the part of the work that grows with the chunks the reader "
              f"may read. The app's lexical postings budget: {budget:,} (`LEXICAL_POSTINGS_BUDGET`).", "",
              "| mode | one role p95 ms | three roles p95 ms | ratio | server CPU p95 one / three ms | ratio "
              "| postings read one / three | ratio |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for mode in MODES:
        lines.append(_three_role_row(mode, result["cells"]))
    if "against_exact" in result:
        lines += ["", "The same comparison, weighted mode, under the budget and with exact BM25 (budget 0), the two "
                  "taking turns question by question and role by role (measured after the table above):", "",
                  "| lexical leg | one role p95 ms | three roles p95 ms | ratio | server CPU p95 one / three ms "
                  "| ratio | postings read one / three | ratio |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for name, cells in result["against_exact"].items():
            label = f"budget {budget:,}" if name == "budget" else "exact"
            lines.append(_three_role_row("weighted", cells).replace("| weighted |", f"| {label} |", 1))
    if "budget_fidelity" in result:
        lines += ["", f"The lexical leg's candidates under the budget against exact BM25's, the same questions: "
                  "questions the budget bound, the same top 10 (in order), mean overlap of the top 10 and of the "
                  f"whole list of {FUSION.depth} (what fusion pools; its lowest in brackets).", "",
                  "| reader | budget bound | same top 10 | top-10 overlap | pool overlap |", "|---|---:|---:|---:|---:|"]
        for role, f in result["budget_fidelity"].items():
            lines.append(f"| {role} | {f['capped']}/{f['questions']} | {f['same_top10']}/{f['questions']} | "
                         f"{f['top10_overlap']:.4f} | {f['pool_overlap']:.4f} [{f['pool_overlap_min']:.3f}] |")
    previous, current = result["fusion"]["previous"], result["fusion"]["current"]
    lines += ["", f"Candidates per leg: weighted mode, every role's questions, {PREVIOUS_FUSION.depth} (before issue "
              f"20's deeper pool) against {FUSION.depth} (now), alternating question by question.", "",
              "| candidates per leg | p50 ms | p95 ms |", "|---|---:|---:|",
              f"| {PREVIOUS_FUSION.depth} | {percentile(previous, 0.5):.1f} | {percentile(previous, 0.95):.1f} |",
              f"| {FUSION.depth} | {percentile(current, 0.5):.1f} | {percentile(current, 0.95):.1f} |",
              f"| ratio | {percentile(current, 0.5) / percentile(previous, 0.5):.2f} | "
              f"{percentile(current, 0.95) / percentile(previous, 0.95):.2f} |"]
    lines += ["", "| on disk | size |", "|---|---:|"]
    lines += [f"| {name} | {_mb(size)} |" for name, size in result["sizes"].items()]
    cost, empty = result["ingest"], result["ingest_empty"]
    lines += ["", f"Law 6331 ({cost['chunks']} chunks, isg + personel; extraction and embedding excluded), "
              "median of 3 after a warm-up:", "", "| | empty database | this size | ratio |", "|---|---:|---:|---:|",
              f"| store | {empty['store_s'] * 1000:.0f} ms | {cost['store_s'] * 1000:.0f} ms | "
              f"{cost['store_s'] / empty['store_s']:.2f} |",
              f"| delete | {empty['delete_s'] * 1000:.0f} ms | {cost['delete_s'] * 1000:.0f} ms | "
              f"{cost['delete_s'] / empty['delete_s']:.2f} |"]
    slow = result["slowest"]
    lines += ["", f"Slowest query ({slow['mode']}, {slow['role']}, {slow['ms']:.1f} ms): {slow['question']!r}", "",
              "```", slow["plan"], "```"]
    return "\n".join(lines)


def _three_role_row(mode: str, cells: dict) -> str:
    """One mode's row of the three-role comparison: wall p95, server CPU p95 and postings read."""
    def pooled(key: str) -> tuple[list[float], list[float]]:
        return ([x for role in THREE_ROLES for x in cells[(mode, role)][key]], cells[(mode, THREE_ROLE_READER)][key])

    (one_ms, three_ms), (one_cpu, three_cpu) = pooled("ms"), pooled("cpu_ms")
    one_read, three_read = pooled("postings_read")
    wall = f"{percentile(one_ms, 0.95):.1f} | {percentile(three_ms, 0.95):.1f} | " \
           f"{percentile(three_ms, 0.95) / percentile(one_ms, 0.95):.2f}"
    cpu = (f"{percentile(one_cpu, 0.95):.1f} / {percentile(three_cpu, 0.95):.1f} | "
           f"{percentile(three_cpu, 0.95) / percentile(one_cpu, 0.95):.2f}") if one_cpu and three_cpu else "n/a | n/a"
    mean_one, mean_three = statistics.fmean(one_read), statistics.fmean(three_read)
    reads = f"{mean_one:,.0f} / {mean_three:,.0f} | " + (f"{mean_three / mean_one:.2f}" if mean_one else "n/a")
    return f"| {mode} | {wall} | {cpu} | {reads} |"


def chart(results: dict[int, dict], path: Path) -> None:
    """p95 over all roles per mode against chunks (log axes): wall time and server CPU time,
    with the targets (50 ms at 100k, 150 ms at 300k)."""
    import altair as alt
    import pandas as pd

    rows = []
    for n, r in results.items():
        for mode in MODES:
            cells = [cell for (m, _), cell in r["cells"].items() if m == mode]
            rows.append({"chunks": n, "mode": mode, "measure": "wall",
                         "p95 ms": percentile([x for c in cells for x in c["ms"]], 0.95)})
            cpu = [x for c in cells for x in c["cpu_ms"]]
            if cpu:
                rows.append({"chunks": n, "mode": mode, "measure": "server CPU", "p95 ms": percentile(cpu, 0.95)})
    targets = pd.DataFrame([{"chunks": 100_000, "p95 ms": 50.0, "target": "≤ 50 ms at 100k"},
                            {"chunks": 300_000, "p95 ms": 150.0, "target": "≤ 150 ms at 300k"}])
    lines = alt.Chart(pd.DataFrame(rows)).mark_line(point=True).encode(
        x=alt.X("chunks:Q", scale=alt.Scale(type="log"), title="chunks"),
        y=alt.Y("p95 ms:Q", scale=alt.Scale(type="log"), title="p95 latency, every role (ms)"),
        color=alt.Color("mode:N"),
        strokeDash=alt.StrokeDash("measure:N", scale=alt.Scale(domain=["wall", "server CPU"], range=[[1, 0], [5, 3]]),
                                  legend=None))
    goal = alt.Chart(targets).mark_point(shape="cross", size=150, color="black").encode(
        x="chunks:Q", y="p95 ms:Q", tooltip=["target"])
    (lines + goal).properties(width=440, height=280, title=alt.TitleParams("Retrieval p95 by corpus size (2 cores)",
                             subtitle="solid: wall time, dashed: server CPU time; crosses: the targets")).save(
        str(path), scale_factor=1.5)


def run(n_chunks: int, base, law, settings: Settings, url: str, n_questions: int) -> dict:
    from ragcore.embed import make_embedder

    texts, vectors, questions, qvectors = base
    embedder = CachedQuestions(make_embedder(settings.replace(embed_backend="use")), questions, qvectors)
    questions = questions[:n_questions]
    namespace = f"bench_retrieval_{n_chunks}"
    db = dbmod.Database(url, namespace)
    try:
        dbmod.drop_namespace(db, namespace)
        db.close()
        db = dbmod.Database(url, namespace, min_size=1, max_size=1)  # one backend: its CPU time is measurable
        dbmod.migrate(db)
        dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
        create_user(db, "bench-three-roles", THREE_ROLES, "bench-parola-1")  # its reader, before the load
        timings = build(db, n_chunks, texts, vectors)
        budget = settings.lexical_postings_budget
        cells = latencies(db, embedder, questions, ASKERS, postings_budget=budget)
        against_exact = budget_against_exact(db, embedder, questions, THREE_ROLE_ASKERS, budget)
        (mode, role), cell = max(cells.items(), key=lambda item: max(item[1]["ms"]))
        plan = explain(db, embedder, cell["slowest"], role, mode, postings_budget=budget)
        lexical_global = lexical_on_global_postings(db, embedder, questions, postings_budget=budget)
        fusion = fusion_comparison(db, embedder, questions, ROLES, postings_budget=budget)
        return {"timings": timings, "cells": cells, "against_exact": against_exact, "postings_budget": budget,
                "budget_fidelity": budget_fidelity(db, questions, THREE_ROLE_ASKERS, budget),
                "lexical_global": lexical_global, "fusion": fusion,
                "sizes": sizes(db), "ingest": ingest_cost(db, settings, law),
                "slowest": {"mode": mode, "role": role, "question": cell["slowest"], "ms": max(cell["ms"]),
                            "plan": plan},
                "version": ".".join(map(str, db.info.pgvector_version))}
    finally:
        dbmod.drop_namespace(db, namespace)
        db.close()


def empty_cost(settings: Settings, url: str, law, embedder) -> dict:
    db = dbmod.Database(url, "bench_retrieval_empty")
    try:
        dbmod.drop_namespace(db, "bench_retrieval_empty")
        db.close()
        db = dbmod.Database(url, "bench_retrieval_empty")
        dbmod.migrate(db)
        dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
        return ingest_cost(db, settings, law)
    finally:
        dbmod.drop_namespace(db, "bench_retrieval_empty")
        db.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="10000,100000,300000", help="comma-separated chunk counts")
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args(argv)
    from ragcore.embed import CachedEmbedder, make_embedder

    settings = Settings.from_env()
    root = Path(tempfile.mkdtemp(prefix="dayanak-bench-"))
    url = settings.database_url or dbmod.embedded_url(root / "server")
    try:
        with dbmod.Database(url) as public:  # the vectors come through the shared embedding cache
            dbmod.migrate(public)
            embedder = CachedEmbedder(make_embedder(settings.replace(embed_backend="use")), public,
                                      cache_questions=True)  # the dev questions, embedded once
            base = base_corpus(settings, embedder)
            law = law_chunks(settings, embedder)
        empty = empty_cost(settings.replace(data_dir=root / "data"), url, law, embedder)
        results = {}
        for n in (int(x) for x in args.chunks.split(",")):
            results[n] = run(n, base, law, settings.replace(data_dir=root / "data"), url, args.queries)
            results[n]["ingest_empty"] = empty
            print(f"{n} chunks done", file=sys.stderr, flush=True)
    finally:
        if not settings.database_url:
            dbmod.stop_embedded(root / "server")
    sections = [section(n, r, args.queries, r["version"]) for n, r in results.items()]
    RESULTS.mkdir(parents=True, exist_ok=True)
    chart(results, RESULTS / "retrieval_p95.png")
    publish("retrieval", "\n\n".join(sections), outputs=["retrieval_p95.png"], numbers={
        str(n): {**r, "cells": [{"mode": m, "role": ro, **c} for (m, ro), c in r["cells"].items()],
                 "lexical_global": [{"mode": m, "role": ro, **c} for (m, ro), c in r["lexical_global"].items()],
                 "against_exact": {name: [{"mode": m, "role": ro, **c} for (m, ro), c in cells.items()]
                                   for name, cells in r["against_exact"].items()}}
        for n, r in results.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
