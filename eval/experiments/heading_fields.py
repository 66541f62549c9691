"""Article headings and the document's title as fields of the lexical leg (issue 20, item 2):
an in-memory measurement, `python -m eval.experiments.heading_fields [--tquad] [--out FILE]`.

Only the chunk that starts an article holds its heading lines ("Kıdem tazminatı"); the
continuation chunks of a long article do not, and the law's title is in its first chunk alone.
This script asks whether BM25 finds the right article more often when every chunk's *indexed*
tokens carry those fields, before anything is built into production:

  (a) today: the chunk's text;
  (b) the text plus its article's heading lines when the chunk does not start with them;
  (c) (b) plus the document's title when the chunk does not already hold every title word;
  (d) field weights: the heading counted w_h times and the title w_t times in every chunk of
      the article (copies added to what the chunk already holds), (w_h, w_t) chosen on the
      everyday set's train half by Recall@5 then MRR@10, then read on its dev half.

The heading of a chunk's article is `ragcore.documents.article_headings`, what production
indexes since (b) won (`lexical_texts`). Everything else is the lab's exact lexical leg: the sample laws read and chunked as an upload
is (`read_upload`, `chunk_pages` at CHUNK_SIZE/CHUNK_OVERLAP, `default_title`), one
`eval.retrievers.BM25Index` per role over the chunks that role may read (the role's own
statistics), the app's lexical query (`eval.retrievers.app_queries`: stop words dropped,
respelled against the role's vocabulary, expanded by the default term table of a fresh
database), a chunk ranked only when it matches a query term (as the SQL leg), and the gold
runs' relevance (`eval.gold_stats.relevant_chunks`) and metrics (`eval.metrics`) over the
answerable (question, role) cases. `--tquad` reads the chosen variants on TQuAD dev (1000-
character chunks, each chunk's article title as the title field) for a regression check.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from eval import metrics
from eval.gold_cases import cases_of
from eval.gold_split import DEV, TRAIN, everyday_split
from eval.gold_stats import ChunkInfo, relevant_chunks
from eval.goldstore import SAMPLE_CORPUS
from eval.lab_corpus import sample_corpus
from eval.retrievers import BM25Index, app_queries
from ragcore.core import ROLES, Settings, lexical_tokens
from ragcore.documents import article_headings, chunk_pages, default_title, mark_ocr, read_upload
from ragcore.retrieval import list_expansions

DEPTH = 10
HEADING_WEIGHTS = (0, 1, 2, 3, 4)
TITLE_WEIGHTS = (0, 1, 2)


@dataclass(frozen=True)
class FieldChunk:
    """A chunk with what its fields would add: its article's heading lines and its document's title."""

    text: str
    heading: str  # "" outside articles
    starts_article: bool  # the chunk's text begins with the heading lines
    title: str
    readable: frozenset[str]  # roles
    info: ChunkInfo | None = None


def tokens(chunk: FieldChunk, heading_weight: int, title_weight: int) -> list[str]:
    """The chunk's indexed tokens with each field counted `weight` times in all (copies of it are
    added for what the chunk's own text does not already hold)."""
    own = lexical_tokens(chunk.text)
    heading = lexical_tokens(chunk.heading)
    title = lexical_tokens(chunk.title)
    heading_copies = max(0, heading_weight - (1 if chunk.starts_article else 0)) if heading else 0
    title_present = bool(title) and set(title) <= set(own)
    title_copies = max(0, title_weight - (1 if title_present else 0)) if title else 0
    return own + heading * heading_copies + title * title_copies


# --------------------------------------------------------------------------- corpora


def sample_chunks(settings: Settings) -> tuple[list[FieldChunk], dict[str, str]]:
    """The three sample laws chunked as an upload is, with their roles; and {sha256: filename}."""
    chunks: list[FieldChunk] = []
    names: dict[str, str] = {}
    for doc in sample_corpus(settings, SAMPLE_CORPUS):
        extracted = read_upload(doc.path.read_bytes(), doc.filename, lambda stage, done, total: None)
        pieces = mark_ocr(chunk_pages(extracted.pages, settings.chunk_size, settings.chunk_overlap),
                          extracted.ocr_pages)
        title = doc.title or default_title(doc.filename, extracted.title, extracted.pages[0].text)
        readable = frozenset(role for role in ROLES if doc.readable_by(role))
        names[doc.sha256] = doc.filename
        headings = article_headings([c.text for c in pieces], [c.article for c in pieces])
        for piece, (heading, starts) in zip(pieces, headings, strict=True):
            info = ChunkInfo(len(chunks), doc.sha256, doc.filename, piece.page_start, piece.page_end, piece.article)
            chunks.append(FieldChunk(piece.text, heading, starts, title, readable, info))
    return chunks, names


def tquad_chunks(settings: Settings, size: int):
    from eval.tquad import cached_corpus, chunk_corpus

    corpus = cached_corpus(str(settings.tquad_dir))
    chunk_set = chunk_corpus(corpus, size)
    fields = [FieldChunk(c.text, "", False, corpus.articles[c.article].title, frozenset({"admin"}))
              for c in chunk_set.chunks]
    return corpus, chunk_set, fields


# --------------------------------------------------------------------------- ranking


def ranked(lab: SimpleNamespace, members: Sequence[int], docs: Sequence[list[str]], questions) -> list[list[int]]:
    """Top DEPTH of `members` (global indices) per question by exact BM25 over `docs`, matching chunks only."""
    index = BM25Index(docs)
    scores = index.score_matrix(app_queries(lab, index, questions))
    out = []
    for row in scores:
        hit = np.flatnonzero(row > 0)
        order = hit[np.lexsort((hit, -row[hit]))][:DEPTH]
        out.append([members[i] for i in order])
    return out


def everyday_scores(lab, chunks: Sequence[FieldChunk], names: dict[str, str], gold, w_h: int, w_t: int) -> dict:
    """Per answerable case metrics of one variant, cases in gold order (question, then role)."""
    cases = [(q, role) for q, role in cases_of(gold) if q.answerable]
    infos = [c.info for c in chunks]
    rankings: dict[int, list[int]] = {}
    for role in sorted({role for _, role in cases}):
        members = [i for i, c in enumerate(chunks) if role in c.readable]
        docs = [tokens(chunks[i], w_h, w_t) for i in members]
        positions = [n for n, (_, r) in enumerate(cases) if r == role]
        questions = [SimpleNamespace(question=cases[n][0].question) for n in positions]
        for n, ranking in zip(positions, ranked(lab, members, docs, questions), strict=True):
            rankings[n] = ranking
    roles_of = {c.info.sha256: c.readable for c in chunks}
    relevant = [relevant_chunks(infos, q.expected, names, {sha for sha, roles in roles_of.items() if role in roles})
                for q, role in cases]
    return metrics.per_question([rankings[n] for n in range(len(cases))], relevant)


def tquad_scores(lab, chunk_set, fields: Sequence[FieldChunk], questions, w_h: int, w_t: int) -> dict:
    from eval.relevance import relevance

    members = list(range(len(fields)))
    docs = [tokens(c, w_h, w_t) for c in fields]
    return metrics.per_question(ranked(lab, members, docs, questions), relevance(chunk_set, questions))


# --------------------------------------------------------------------------- report


def summary(scores: dict, base: dict | None) -> dict:
    out = {}
    for name in ("recall@5", "mrr@10"):
        values = np.asarray(scores[name], dtype=float)
        entry = {"mean": float(values.mean()), "ci": list(metrics.bootstrap_ci(values, metrics.bootstrap_indices(len(values))))}
        if base is not None:
            diff = metrics.paired(values, np.asarray(base[name], dtype=float))
            entry.update(diff=diff["diff"], diff_ci=diff["ci"], p=diff["p"], wins=diff["wins"], losses=diff["losses"])
        out[name] = entry
    out["n"] = int(len(scores["recall@5"]))
    return out


def cell(entry: dict) -> str:
    text = f"{entry['mean']:.3f} [{entry['ci'][0]:.3f}, {entry['ci'][1]:.3f}]"
    if "diff" in entry:
        text += (f" Δ {entry['diff']:+.3f} [{entry['diff_ci'][0]:+.3f}, {entry['diff_ci'][1]:+.3f}]"
                 f" p {entry['p']:.2f} +{entry['wins']}/-{entry['losses']}")
    return text


def expansions_database(folder: Path):
    """A fresh database (the default term-expansion table of migration 010) on a throwaway embedded server."""
    from ragcore import store as dbmod

    return dbmod.open_database(Settings.from_env().replace(database_url="", data_dir=folder))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tquad", action="store_true", help="also read the variants on TQuAD dev")
    parser.add_argument("--tquad-size", type=int, default=1000)
    parser.add_argument("--database-url", help="take the expansion table from this database instead of a fresh one")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    with tempfile.TemporaryDirectory(prefix="heading-fields-") as tmp:
        if args.database_url:
            from ragcore import store as dbmod

            db = dbmod.Database(args.database_url, max_size=1)
        else:
            db = expansions_database(Path(tmp) / "data")
        try:
            report = run(settings, SimpleNamespace(cache_db=db), args)
        finally:
            db.close()
    if args.out:
        from eval.report import write_card

        write_card(args.out, {"kind": "heading-fields", **report})
    return 0


def run(settings: Settings, lab: SimpleNamespace, args) -> dict:
    """The train grid, then every variant on both halves (and TQuAD dev), printed and returned."""
    lines: list[str] = []

    def say(text: str) -> None:
        print(text)
        lines.append(text)

    chunks, names = sample_chunks(settings)
    halves = everyday_split()
    variants = {"(a) text": (0, 0), "(b) + heading": (1, 0), "(c) + heading + title": (1, 1)}
    grid = {}
    for w_h in HEADING_WEIGHTS:
        for w_t in TITLE_WEIGHTS:
            s = everyday_scores(lab, chunks, names, halves[TRAIN], w_h, w_t)
            grid[(w_h, w_t)] = (float(s["recall@5"].mean()), float(s["mrr@10"].mean()))
    best = max(grid, key=lambda k: (grid[k][0], grid[k][1], -k[0] - k[1]))
    variants[f"(d) w_h={best[0]}, w_t={best[1]} (train)"] = best
    continuation = sum(1 for c in chunks if c.heading and not c.starts_article)
    say(f"sample laws: {len(chunks)} chunks at {settings.chunk_size}/{settings.chunk_overlap}, "
        f"{continuation} article continuations without their heading; "
        f"{len(list_expansions(lab.cache_db))} expansion rows")
    say("train grid (Recall@5, MRR@10) by (w_h, w_t):")
    for key, (r5, mrr) in sorted(grid.items()):
        say(f"  {key}: {r5:.3f} {mrr:.3f}")
    report: dict = {"chunks": len(chunks), "continuations": continuation, "chunk_size": settings.chunk_size,
                    "chunk_overlap": settings.chunk_overlap, "chosen": list(best),
                    "grid": [{"w_h": k[0], "w_t": k[1], "recall@5": v[0], "mrr@10": v[1]} for k, v in grid.items()],
                    "variants": {}}
    base: dict[str, dict] = {}
    tquad = tquad_chunks(settings, args.tquad_size) if args.tquad else None
    header = (f"{'variant':30} {'half':5} {'Recall@5 [CI] Δ vs (a) [paired CI] p wins/losses':74} "
              "MRR@10 [CI] Δ vs (a) [paired CI] p wins/losses")
    say(header)
    for name, (w_h, w_t) in variants.items():
        row = {}
        for half in (TRAIN, DEV):
            s = everyday_scores(lab, chunks, names, halves[half], w_h, w_t)
            base.setdefault(half, s)
            row[half] = summary(s, None if s is base[half] else base[half])
            say(f"{name:30} {half:5} {cell(row[half]['recall@5']):74} {cell(row[half]['mrr@10'])}")
        if tquad is not None:
            corpus, chunk_set, fields = tquad
            s = tquad_scores(lab, chunk_set, fields, corpus.dev_questions, w_h, w_t)
            base.setdefault("tquad", s)
            row["tquad-dev"] = summary(s, None if s is base["tquad"] else base["tquad"])
            say(f"{name:30} {'tquad':5} {cell(row['tquad-dev']['recall@5']):74} {cell(row['tquad-dev']['mrr@10'])}")
        report["variants"][name] = {"w_h": w_h, "w_t": w_t, **row}
    n = {half: report["variants"]["(a) text"][half]["n"] for half in (TRAIN, DEV)}
    say(f"answerable cases: train {n[TRAIN]}, dev {n[DEV]}")
    report["table"] = lines
    return report


if __name__ == "__main__":
    raise SystemExit(main())
