"""`python -m eval gold …`: gold sets and gold runs from the command line (the page's twin).

    gold import --file F --name N      # JSONL or CSV (--questions F is the same); a bad line imports nothing
    gold sample                        # the shipped paraphrase set
    gold list | gold history --name N | gold export --name N [--version V] [--format csv] [--out F]
    gold run --set N --embedders e5,use --modes weighted,lexical --chunk-sizes 1000 --k 5
             [--corpus company|sample] [--out DIR] [--background]
    gold resume RUN_ID                 # a stopped run, from its cache
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragcore.core import ANSWER_POLICIES, Settings


def _csv_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in _csv_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"integers separated by commas expected: {text!r}") from None


def register(sub: argparse._SubParsersAction) -> None:
    gold = sub.add_parser("gold", help="gold sets over the company's documents, and runs over them")
    g = gold.add_subparsers(dest="gold_command", required=True)

    p = g.add_parser("import", help="import a JSONL or CSV gold file as (a new version of) a set")
    p.add_argument("--file", "--questions", dest="file", type=Path, required=True, help="the gold file (.jsonl or .csv)")
    p.add_argument("--name", required=True, help="gold set name (created if new)")
    p.set_defaults(func=cmd_import)

    p = g.add_parser("sample", help="import the shipped sample set (eval/gold/paraphrase_laws.jsonl)")
    p.set_defaults(func=cmd_sample)

    p = g.add_parser("everyday", help="import a half of the everyday-question development set")
    p.add_argument("--half", choices=("train", "dev"), required=True)
    p.set_defaults(func=cmd_everyday)

    p = g.add_parser("list", help="gold sets at their newest version")
    p.set_defaults(func=cmd_list)

    p = g.add_parser("history", help="every version of a set: who, when, what changed")
    p.add_argument("--name", required=True)
    p.set_defaults(func=cmd_history)

    p = g.add_parser("export", help="write a set (a version of it) as JSONL or CSV")
    p.add_argument("--name", required=True)
    p.add_argument("--version", type=int)
    p.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    p.add_argument("--out", type=Path, help="file to write (default: stdout)")
    p.set_defaults(func=cmd_export)

    p = g.add_parser("run", help="measure a gold set through the app: embedders × modes × chunk sizes × k")
    p.add_argument("--set", dest="gold_set", required=True, help="gold set name")
    p.add_argument("--version", type=int, help="gold set version (default: the newest)")
    p.add_argument("--embedders", type=_csv_list, default=["use"], help="e5, use, ollama:<model>; comma-separated")
    p.add_argument("--modes", type=_csv_list, default=["weighted"], help="weighted, lexical, dense, rrf")
    p.add_argument("--chunk-sizes", type=_ints, default=[1000])
    p.add_argument("--k", type=_ints, default=[5], help="sources given to the answer; comma-separated")
    p.add_argument("--corpus", choices=("company", "sample"), default="company",
                   help="company: the app's documents; sample: the three laws in DOCUMENTS_DIR")
    p.add_argument("--primary", default="ndcg@10", choices=("ndcg@10", "recall@1", "recall@5", "recall@10", "mrr@10"))
    p.add_argument("--limit", type=int, help="only the first N questions (quick looks; not comparable)")
    p.add_argument("--policy", choices=ANSWER_POLICIES, default=None,
                   help="answering policy (default: the app's own, ANSWER_POLICY): the reader, or the earlier rules "
                        "(gate and sentence quoter)")
    p.add_argument("--out", type=Path, help="run folder (default DATA_DIR/eval_runs/<time>-gold-<id>)")
    p.add_argument("--background", action="store_true", help="queue it as a job for a worker and return")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_run)

    p = g.add_parser("resume", help="continue a stopped gold run from its cache (same folder)")
    p.add_argument("run_id", type=int)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_resume)


def _db(settings: Settings):
    from eval.schema import open_lab_database

    return open_lab_database(settings)


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    from eval import goldstore

    try:
        data = args.file.read_bytes()
    except OSError as exc:
        raise FileNotFoundError(f"cannot read {args.file}: {exc.strerror or exc}") from exc
    with _db(settings) as db:
        version, new = goldstore.import_file(db, args.name, args.file.name, data, created_by=None)
    _print_version(version, new)
    return 0


def cmd_sample(args: argparse.Namespace, settings: Settings) -> int:
    from eval import goldstore

    with _db(settings) as db:
        version, new = goldstore.import_sample(db)
    _print_version(version, new)
    return 0


def cmd_everyday(args: argparse.Namespace, settings: Settings) -> int:
    from eval import goldstore

    with _db(settings) as db:
        version, new = goldstore.import_everyday(db, args.half)
    _print_version(version, new)
    return 0


def _print_version(version, new: bool) -> None:
    what = "imported" if new else "unchanged (same content as the newest version)"
    print(f"{version.name}: version {version.version}, {version.question_count} questions — {what}; {version.change}")
    print(f"sha256 {version.sha256}")


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    from eval import goldstore

    with _db(settings) as db:
        sets = goldstore.list_sets(db)
    if not sets:
        print("no gold sets yet: `python -m eval gold import --file F --name N` or `python -m eval gold sample`")
        return 0
    print("| name | version | questions | answerable | changed | by | what changed |")
    print("|---|---|---|---|---|---|---|")
    for v in sets:
        print(f"| {v.name} | {v.version} | {v.question_count} | {v.answerable} | "
              f"{v.created_at.astimezone().strftime('%Y-%m-%d %H:%M')} | {v.created_by or '-'} | {v.change} |")
    return 0


def cmd_history(args: argparse.Namespace, settings: Settings) -> int:
    from eval import goldstore

    with _db(settings) as db:
        versions = goldstore.history(db, goldstore.find_set(db, args.name))
    for v in versions:
        print(f"v{v.version}  {v.created_at.astimezone().strftime('%Y-%m-%d %H:%M')}  {v.created_by or '-'}  "
              f"{v.question_count} questions  [{v.source}] {v.change}  sha256 {v.sha256[:16]}")
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from eval import goldset, goldstore

    with _db(settings) as db:
        _, found = goldstore.questions(db, goldstore.find_set(db, args.name), args.version)
    text = goldset.to_csv(found) if args.format == "csv" else goldset.to_jsonl(found)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
        print(f"written: {args.out} ({len(found)} questions)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from eval import goldstore, lab_runs
    from eval.gold_run import GoldRunSpec, create_gold_run
    from eval.report import new_run_dir, runs_root

    with _db(settings) as db:
        set_id = goldstore.find_set(db, args.gold_set)
        version = goldstore.get_version(db, set_id, args.version)
        spec = GoldRunSpec(set_id, version.version, tuple(args.embedders), tuple(args.modes), tuple(args.chunk_sizes),
                           tuple(args.k), args.corpus, args.primary, args.limit, args.policy or settings.answer_policy)
        if args.background:
            from eval.jobs import submit_gold_run
            from ragcore import jobs

            run, job = submit_gold_run(db, settings, spec, created_by=None)
            print(f"queued: gold run #{run.id} as job #{job.id} (folder {run.folder})")
            if not jobs.live_workers(db, settings):
                print("warning: no live worker; the job waits until `python -m ragcore worker` (or the app) runs",
                      file=sys.stderr)
            return 0
        run = create_gold_run(db, settings, spec, created_by=None, folder=Path(""))
        folder = args.out or new_run_dir(runs_root(settings), f"gold-{run.id}")
        lab_runs.set_folder(db, run.id, str(folder))
        return _foreground(db, settings, run.id, args.quiet)


def cmd_resume(args: argparse.Namespace, settings: Settings) -> int:
    from eval import lab_runs

    with _db(settings) as db:
        run = lab_runs.get_run(db, args.run_id)
        if run is None or run.kind != "gold":
            raise ValueError(f"no gold run #{args.run_id}")
        return _foreground(db, settings, run.id, args.quiet)


def _foreground(db, settings: Settings, run_id: int, quiet: bool) -> int:
    from eval import gold_report, lab_runs
    from eval.gold_run import run_gold
    from eval.progress import TqdmProgress

    progress = TqdmProgress(disable=quiet)
    try:
        summary = run_gold(db, settings, run_id, progress)
    except KeyboardInterrupt:
        lab_runs.finish(db, run_id, "cancelled")
        progress.close()
        print(f"interrupted; finished questions are kept: `python -m eval gold resume {run_id}` continues",
              file=sys.stderr)
        return 130
    except BaseException as exc:
        lab_runs.finish(db, run_id, "failed", error=str(exc))
        raise
    finally:
        progress.close()
    lab_runs.finish(db, run_id, "succeeded")
    print(markdown_table(gold_report.results_rows(summary)))
    print()
    print(summary["recommendation"].get("text", ""))
    for warning in summary.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    folder = lab_runs.get_run(db, run_id).folder  # type: ignore[union-attr]
    print(f"\nwritten: {folder}/summary.json, {folder}/per_question.csv, {folder}/report.html")
    return 0


def markdown_table(rows: list[dict[str, str]]) -> str:
    if not rows:
        return "(no results)"
    head = "| " + " | ".join(rows[0]) + " |"
    lines = [head, "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(str(v) for v in row.values()) + " |" for row in rows]
    return "\n".join(lines)
