"""`python -m eval retrieval …`, `python -m eval answers …`, `python -m eval gold …` (eval/gold_cli.py)
and `python -m eval fit …` (eval/fit/): the lab from the command line.

Progress goes to stderr as tqdm bars (one per stage); the result folder gets summary.json and
per_question.csv, and a short table is printed on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from eval.progress import TqdmProgress
from ragcore.core import Settings, SettingsError
from ragcore.embed import EmbeddingError
from ragcore.store import DatabaseError


def _csv_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _sizes(text: str) -> list[int]:
    try:
        return [int(x) for x in _csv_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"chunk sizes must be integers: {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m eval", description="Dayanak evaluation lab (TQuAD, and gold sets over the company's documents)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("retrieval", help="retrieval sweep: retrievers × chunk sizes on the 892 dev questions")
    p.add_argument("--retrievers", type=_csv_list, default=["production"],
                   help="comma-separated: production[-lexical|-dense|-rrf|-weighted|-weighted-w<weight>] (the app's "
                        "retrieval); exact references: bm25, bm25-prefix5, bm25-snowball, …, dense[:ollama-model], "
                        "hybrid (RRF), hybrid-weighted[-w<weight>]")
    p.add_argument("--chunk-sizes", type=_sizes, default=[1000], help="comma-separated, e.g. 500,1000,1500")
    p.add_argument("--baseline", help="system compared against, RETRIEVER or RETRIEVER@SIZE (default: the first)")
    p.add_argument("--depth", type=int, default=10)
    p.add_argument("--train-questions", type=int, default=1000, help="recorded in the run card only; the weight is tuned by `python -m eval fit retrieval`")
    p.add_argument("--limit", type=int, help="only the first N dev questions (quick looks; not comparable)")
    p.add_argument("--keep-namespaces", action="store_true", help="keep the production namespaces for reuse")
    p.add_argument("--out", type=Path, help="output folder (default DATA_DIR/eval_runs/<time>-retrieval)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--background", action="store_true", help="queue it as a job (lab_tquad) and return")
    p.set_defaults(func=cmd_retrieval)

    p = sub.add_parser("answers", help="answer evaluation: 300 answerable + 150 unanswerable dev questions")
    p.add_argument("--retriever", default="production",
                   help="production (the app's retrieval and mode, through AnswerService) or "
                        "production-<rrf|weighted|dense|lexical> to force a mode")
    p.add_argument("--chunk-size", type=int, default=1000)
    p.add_argument("--answerable", type=int, default=300)
    p.add_argument("--unanswerable", type=int, default=150)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--no-gate", action="store_true", help="skip the app's evidence threshold before generation")
    p.add_argument("--out", type=Path, help="output folder (default DATA_DIR/eval_runs/<time>-answers); "
                                            "an existing folder resumes from its answer cache")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--background", action="store_true", help="queue it as a job (lab_answers) and return")
    p.set_defaults(func=cmd_answers)

    from eval import conversation_cli, fit, gold_cli
    from eval.reader import cli as reader_cli

    gold_cli.register(sub)
    conversation_cli.register(sub)
    reader_cli.register(sub)
    fit.register(sub)
    return parser


def cmd_retrieval(args: argparse.Namespace, settings: Settings) -> int:
    from eval.report import (
        comparisons_markdown,
        new_run_dir,
        results_markdown,
        runs_root,
        write_retrieval_run,
    )
    from eval.sweep import SweepConfig, make_workspace, run_sweep

    config = SweepConfig(retrievers=args.retrievers, chunk_sizes=args.chunk_sizes, depth=args.depth,
                         baseline=args.baseline, train_questions=args.train_questions, limit=args.limit,
                         keep_namespaces=args.keep_namespaces)
    if args.background:
        return _submit_tquad(settings, "tquad", dataclasses.asdict(config))
    out = args.out or new_run_dir(runs_root(settings), "retrieval")
    progress = TqdmProgress(disable=args.quiet)
    ws = make_workspace(settings, progress)
    try:
        result = run_sweep(settings, config, progress, workspace=ws)
    finally:
        progress.close()
        ws.close()
    summary = write_retrieval_run(result, out, settings, embedders=ws.loaded_embedders())
    print(_corpus_line(summary))
    print(results_markdown(summary))
    if summary["comparisons"]:
        print()
        print(comparisons_markdown(summary))
    print(f"\nwritten: {out}/summary.json, {out}/per_question.csv")
    return 0


def _corpus_line(summary: dict) -> str:
    c = summary["corpus"]
    chunks = ", ".join(f"{k}: {v}" for k, v in c["chunks"].items())
    return (f"corpus: {c['articles']} articles ({c['excluded_train']} train articles excluded), "
            f"{c['characters']:,} characters, {c['questions']} questions; chunks {chunks}")


def cmd_answers(args: argparse.Namespace, settings: Settings) -> int:
    from eval.answers import AnswerConfig, answers_markdown, run_answers
    from eval.report import new_run_dir, runs_root

    config = AnswerConfig(retriever=args.retriever, chunk_size=args.chunk_size, answerable=args.answerable,
                          unanswerable=args.unanswerable, k=args.k, gate=not args.no_gate)
    if args.background:
        return _submit_tquad(settings, "answers", dataclasses.asdict(config))
    out = args.out or new_run_dir(runs_root(settings), "answers")
    progress = TqdmProgress(disable=args.quiet)
    try:
        summary = run_answers(settings, config, out, progress)
    finally:
        progress.close()
    print(answers_markdown(summary))
    print(f"\nwritten: {out}/summary.json, {out}/per_question.csv")
    return 0


def _submit_tquad(settings: Settings, kind: str, configuration: dict) -> int:
    """Queue a TQuAD run as a background job (eval.jobs) and print its ids."""
    from eval.jobs import submit_tquad
    from eval.schema import open_lab_database
    from ragcore import jobs

    with open_lab_database(settings) as db:
        run, job = submit_tquad(db, settings, kind, configuration, created_by=None)
        if not jobs.live_workers(db, settings):
            print("warning: no live worker; the job waits until `python -m ragcore worker` (or the app) runs",
                  file=sys.stderr)
    print(f"queued: lab run #{run.id} as job #{job.id} (folder {run.folder})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=getattr(logging, settings.log_level, logging.INFO), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args, settings)
    except (FileNotFoundError, ValueError, AssertionError, DatabaseError, EmbeddingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted (answers already generated are cached; rerun with the same --out to resume)",
              file=sys.stderr)
        return 130
