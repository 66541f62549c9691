"""End-to-end ingest benchmark: `python -m bench.ingest [--runs 3] [--laws 6331 4857 5510] [--backend e5]
[--windows on|off|both]`.

Ingests the sample laws with an embedded embedder (e5 by default, as the app without Ollama;
`--backend use` for the USE) into a throw-away embedded PostgreSQL (each run into an emptied
database with an emptied embedding cache, so every run pays for its vectors the way a first
upload does), through the app's cached embedder, and reports the median of the runs: seconds,
pages/s, chunks/s, seconds per stage, and peak RSS of the process. The model is loaded (and
warmed) before timing, as in the app where one embedder serves the whole process. Prints a
markdown section and writes it to bench/results/ingest.md with its run card ingest.json. Also
prints the Law 6331 chunking report.

The throughput table sets the upload against the raw embedder: after each run, the very texts
the upload stored vectors for (its chunks and windows, each distinct text once) are embedded
again by the bare model (no cache, no database, the upload's batches of 32) and timed. Ingest
vectors/s is the vectors stored over the upload's seconds up to its commit; the ratio to the raw
rate is what reading, chunking, the store and the pipeline's overhead leave of the embedder's
speed (target ≥ 0.9); the same ratio of this process's CPU seconds (raw embedding's over the
upload's, reading thread included) is the guide on a shared machine, where wall time measures the
neighbours. `--windows both` ingests each law into an index with sentence windows and one without
(`embedding_index.windows`), and reports the ratio: what the windows' embeddings cost.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench import publish
from ragcore import store as dbmod
from ragcore.answer import warm_quote_sentences
from ragcore.core import Settings
from ragcore.documents import ARTICLE_RE, chunk_pages, extract_pages, ingest_pdf, joined_text
from ragcore.embed import CachedEmbedder, Embedder, make_embedder

REPO = Path(__file__).resolve().parent.parent
LAWS = {
    "6331": "6331-is-sagligi-ve-guvenligi-kanunu.pdf",
    "4857": "4857-is-kanunu.pdf",
    "5510": "5510-sosyal-sigortalar-ve-genel-saglik-sigortasi-kanunu.pdf",
}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _empty(db: dbmod.Database) -> None:
    with db.connection() as conn:
        conn.execute("DELETE FROM documents")
        conn.execute("DELETE FROM public.embedding_cache")


def stored_texts(db: dbmod.Database, document_id: int) -> list[str]:
    """The distinct texts the upload stored vectors for: its chunks' and its windows' (spans of them)."""
    with db.connection() as conn:
        chunks = [r[0] for r in conn.execute("SELECT text FROM chunks WHERE document_id = %s ORDER BY ordinal",
                                             (document_id,))]
        windows = [r[0] for r in conn.execute(
            "SELECT substr(c.text, w.char_start + 1, w.char_end - w.char_start) FROM chunk_windows w "
            "JOIN chunks c ON c.id = w.chunk_id WHERE c.document_id = %s ORDER BY c.ordinal, w.position",
            (document_id,))]
    return list(dict.fromkeys(chunks + windows))


def raw_seconds(model: Embedder, texts: list[str], batch: int = 32) -> tuple[float, float]:
    """The bare model's wall and CPU time for `texts`, in the upload's batches."""
    started, cpu_started = time.perf_counter(), time.process_time()
    for start in range(0, len(texts), batch):
        model.embed_passages(texts[start : start + batch])
    return time.perf_counter() - started, time.process_time() - cpu_started


def run_once(db: dbmod.Database, settings: Settings, embedder: Embedder, path: Path,
             model: Embedder | None = None) -> dict:
    _empty(db)
    shutil.rmtree(settings.uploads_dir, ignore_errors=True)
    marks: dict[str, list[float]] = {}

    def progress(stage: str, done: int, total: int) -> None:
        marks.setdefault(stage, []).append(time.perf_counter())

    cpu_started = time.process_time()
    started = time.perf_counter()
    result = ingest_pdf(db, settings, embedder, path.read_bytes(), filename=path.name, roles=["personel"],
                        progress=progress)
    stages, previous = {}, started
    for stage, times in marks.items():
        stages[stage] = times[-1] - previous
        previous = times[-1]
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    # what the upload job does next, after the commit: the quoter's sentences into the cache
    started = time.perf_counter()
    sentences = warm_quote_sentences(db, embedder, [result.document_id])
    quotes = time.perf_counter() - started
    texts = stored_texts(db, result.document_id)
    raw, raw_cpu = raw_seconds(model, texts) if model is not None else (float("nan"), float("nan"))
    return {"seconds": seconds, "cpu_seconds": cpu_seconds, "pages": result.pages, "chunks": result.chunks,
            "windows": result.windows, "vectors": len(texts), "raw_seconds": raw, "raw_cpu_seconds": raw_cpu,
            **stages, "quote_sentences": sentences, "quotes": quotes}


def _index_windows(db: dbmod.Database, embedder: Embedder, windows: bool) -> None:
    """An index with or without sentence windows (the record ingest reads)."""
    dbmod.ensure_embedding_space(db, embedder.name, embedder.dim)
    with db.connection() as conn:
        conn.execute("UPDATE embedding_index SET windows = %s", (windows,))


def bench(paths: dict[str, Path], runs: int, backend: str, windows: str = "on") -> list[dict]:
    root = Path(tempfile.mkdtemp(prefix="dayanak-bench-"))
    settings = Settings(data_dir=root / "data", embed_backend=backend, llm_backend="extractive")
    db = dbmod.Database(dbmod.embedded_url(root / "server"))
    try:
        dbmod.migrate(db)
        model = make_embedder(settings)
        model.embed_passages(["ısınma turu"])  # load the weights once, as the app does at start
        embedder = CachedEmbedder(model, db)
        rows = []
        for law, path in paths.items():
            for with_windows in {"on": [True], "off": [False], "both": [False, True]}[windows]:
                _index_windows(db, model, with_windows)
                results = [run_once(db, settings, embedder, path, model) for _ in range(runs)]
                row = {key: statistics.median(r.get(key, 0) for r in results) for key in results[0]}
                # rates per run, then their median (not the ratio of medians)
                row["ingest_vps"] = statistics.median(r["vectors"] / r["seconds"] for r in results)
                row["raw_vps"] = statistics.median(r["vectors"] / r["raw_seconds"] for r in results)
                row["ratio"] = statistics.median(r["raw_seconds"] / r["seconds"] for r in results)
                row["cpu_ratio"] = statistics.median(r["raw_cpu_seconds"] / r["cpu_seconds"] for r in results)
                row["law"] = law if windows != "both" else f"{law} ({'windows' if with_windows else 'no windows'})"
                row["peak_rss_mb"] = peak_rss_mb()
                rows.append(row)
                print(f"{row['law']}: {row['seconds']:.2f}s", file=sys.stderr, flush=True)
        return rows
    finally:
        db.close()
        dbmod.stop_embedded(root / "server")
        shutil.rmtree(root, ignore_errors=True)


def table(rows: list[dict], runs: int, backend: str) -> str:
    lines = [
        f"## Ingest (embedded {backend} embedder, empty embedding cache, median of {runs})",
        "",
        "| law | pages | chunks | seconds | CPU s | pages/s | chunks/s | extract s | chunk s | embed s | store s "
        "| peak RSS MB | quote sentences | their s (after the commit) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['law']} | {r['pages']:.0f} | {r['chunks']:.0f} | {r['seconds']:.2f} | {r['cpu_seconds']:.2f} "
            f"| {r['pages'] / r['seconds']:.1f} "
            f"| {r['chunks'] / r['seconds']:.1f} | {r.get('extract', 0):.2f} | {r.get('chunk', 0):.2f} "
            f"| {r.get('embed', 0):.2f} | {r.get('store', 0):.2f} | {r['peak_rss_mb']:.0f} "
            f"| {r['quote_sentences']:.0f} | {r['quotes']:.2f} |"
        )
    pairs = [(a, b) for a, b in zip(rows, rows[1:], strict=False)
             if a["law"].endswith("(no windows)") and b["law"].endswith("(windows)")]
    for without, with_ in pairs:
        lines.append(f"\n{with_['law'].split()[0]}: with windows / without = {with_['seconds'] / without['seconds']:.2f}× "
                     f"wall, {with_['cpu_seconds'] / without['cpu_seconds']:.2f}× CPU, "
                     f"{with_.get('embed', 0) / max(without.get('embed', 0), 1e-9):.2f}× embed stage")
    lines += [
        "",
        f"### Ingest throughput against the raw embedder (same texts, median of {runs})",
        "",
        "| law | chunks | windows | vectors stored | vectors per chunk | ingest s (to the commit) | chunks/s "
        "| ingest vectors/s | raw embedder vectors/s | ingest / raw (wall) | ingest / raw (CPU) "
        "| quote sentences per chunk (after the commit) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['law']} | {r['chunks']:.0f} | {r['windows']:.0f} | {r['vectors']:.0f} "
            f"| {r['vectors'] / r['chunks']:.2f} | {r['seconds']:.1f} | {r['chunks'] / r['seconds']:.2f} "
            f"| {r['ingest_vps']:.2f} | {r['raw_vps']:.2f} | {r['ratio']:.2f} | {r['cpu_ratio']:.2f} "
            f"| {r['quote_sentences'] / r['chunks']:.2f} |"
        )
    lines += [
        "",
        f"Load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores. CPU s is this "
        "process's CPU time (user+sys, all threads; the PostgreSQL server's work is not included), a "
        "better guide than wall time on a shared machine. Peak RSS is the process maximum so far "
        "(model loaded; cumulative over the rows above). The last two columns are the upload job's step after "
        "its commit (`ragcore.answer.warm_quote_sentences`): the document is searchable before it, and "
        "answers quoting or marking its sentences embed none of them after it.",
    ]
    return "\n".join(lines)


def chunking_report(path: Path, size: int = 1000, overlap: int = 150) -> str:
    """Law 6331 quality figures for docs/ingestion.md (no database, no embedding)."""
    pages = extract_pages(path.read_bytes()).pages
    chunks = chunk_pages(pages, size, overlap)
    text, starts = joined_text(pages)
    numbers = [p.number for p in pages]
    sizes = sorted(len(c.text) for c in chunks)
    per_article = Counter(c.article for c in chunks if c.article)
    two_starts = sum(1 for c in chunks if len(ARTICLE_RE.findall(c.text)) > 1)
    wrong_pages = sum(1 for c in chunks if not _pages_right(c, text, starts, numbers))
    quartiles = statistics.quantiles(sizes, n=4)
    return "\n".join([
        f"## Chunking of {path.name} (CHUNK_SIZE={size}, CHUNK_OVERLAP={overlap})",
        "",
        "| figure | value |",
        "|---|---:|",
        f"| pages with text | {len(pages)} |",
        f"| chunks | {len(chunks)} |",
        f"| chunk size min / p25 / median / p75 / max (chars) | {sizes[0]} / {quartiles[0]:.0f} / "
        f"{quartiles[1]:.0f} / {quartiles[2]:.0f} / {sizes[-1]} |",
        f"| chunks without article label (title page, amendment table) | {sum(1 for c in chunks if not c.article)} |",
        f"| articles (incl. 25/A and provisional) | {len(per_article)} |",
        f"| articles split across chunks | {sum(1 for n in per_article.values() if n > 1)} |",
        f"| articles kept in one chunk | {sum(1 for n in per_article.values() if n == 1)} |",
        f"| chunks holding two article starts | {two_starts} |",
        f"| chunks whose page range is wrong | {wrong_pages} |",
        f"| chunks crossing a page break | {sum(1 for c in chunks if c.page_end != c.page_start)} |",
    ])


def _pages_right(chunk, text: str, starts: list[int], numbers: list[int]) -> bool:
    """The chunk's text lies within its page range, and starts and ends on those very pages."""
    first = numbers.index(chunk.page_start)
    last = numbers.index(chunk.page_end)
    lo = starts[first]
    hi = starts[last + 1] if last + 1 < len(starts) else len(text)
    inside = text.find(chunk.text, lo, hi) != -1
    touches_first = chunk.char_start < (starts[first + 1] if first + 1 < len(starts) else len(text))
    touches_last = chunk.char_end > starts[last]
    return inside and touches_first and touches_last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--laws", nargs="*", default=list(LAWS), choices=list(LAWS))
    parser.add_argument("--backend", default="e5", choices=["e5", "use"], help="embedded embedder")
    parser.add_argument("--windows", default="on", choices=["on", "off", "both"],
                        help="index with sentence windows (on), without (off), or both with their ratio")
    parser.add_argument("--documents-dir", type=Path, default=Settings.from_env().documents_dir)
    args = parser.parse_args(argv)
    folder = args.documents_dir if args.documents_dir.is_absolute() else (REPO / args.documents_dir)
    paths = {law: folder / LAWS[law] for law in args.laws}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        print(f"missing PDFs: {', '.join(missing)} (run `make download-data`)", file=sys.stderr)
        return 1
    rows = bench(paths, args.runs, args.backend, args.windows)
    section = table(rows, args.runs, args.backend)
    if "6331" in paths:
        section += "\n\n" + chunking_report(paths["6331"])
    publish("ingest", section, numbers={"backend": args.backend, "runs": args.runs, "windows": args.windows,
                                        "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
