"""`python -m eval conversations run --split dev|test --out DIR`: the conversation gold set through
the app (eval/conversation_run.py), with a progress bar per stage and a table of the groups.

    conversations run --split test [--out DIR] [--limit N] [--file F ...] [--topic-switches N] [--quiet]

`--topic-switches N` walks N two-turn topic switches (eval/topic_switches.py: an everyday question
after an unrelated one, from the everyday set's half that matches the split) instead of the gold set.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ragcore.core import Settings


def register(sub: argparse._SubParsersAction) -> None:
    conversations = sub.add_parser("conversations", help="the conversation gold set, turn by turn through the app")
    c = conversations.add_subparsers(dest="conversations_command", required=True)
    p = c.add_parser("run", help="walk every conversation of a split: resolved, typed alone and standalone")
    p.add_argument("--split", choices=("dev", "test"), required=True, help="dev: tune here; test: report here")
    p.add_argument("--file", type=Path, action="append",
                   help="a conversation gold file; give it again for more (default: both of eval/gold, "
                        "conversations_laws.jsonl and conversations_unseen.jsonl)")
    p.add_argument("--limit", type=int, help="only the first N conversations (quick looks; not comparable)")
    p.add_argument("--topic-switches", type=int, metavar="N",
                   help="instead of the gold set: N everyday questions each asked after an unrelated one "
                        "(eval/topic_switches.py; dev from the everyday train half, test from its dev half)")
    p.add_argument("--out", type=Path, help="run folder (default DATA_DIR/eval_runs/<time>-conversations-<split>)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from eval.conversation_run import run_conversations, summary_rows
    from eval.conversations import GOLD_FILES, by_split, load_gold_files
    from eval.gold_cli import markdown_table
    from eval.goldstore import SAMPLE_CORPUS
    from eval.lab_corpus import LabCachedEmbedder, sample_corpus
    from eval.progress import TqdmProgress
    from eval.report import new_run_dir, runs_root
    from eval.schema import open_lab_database
    from eval.topic_switches import SEED, topic_switches
    from ragcore.embed import make_embedder

    if args.topic_switches:
        conversations = topic_switches(args.split, args.topic_switches)
        source = f"everyday_laws.jsonl (topic switches, seed {SEED}, {len(conversations)} pairs)"
    else:
        files = args.file or GOLD_FILES
        conversations = by_split(load_gold_files(files))[args.split]
        source = " + ".join(path.name for path in files)
    if args.limit:
        conversations = conversations[: args.limit]
    name = "topic-switches" if args.topic_switches else "conversations"
    out = args.out or new_run_dir(runs_root(settings), f"{name}-{args.split}")
    progress = TqdmProgress(disable=args.quiet)
    with open_lab_database(settings) as db:
        embedder = LabCachedEmbedder(make_embedder(settings), db)
        try:
            summary = run_conversations(db, settings, conversations, sample_corpus(settings, SAMPLE_CORPUS), embedder,
                                        out, progress, split=args.split, source=source)
        finally:
            progress.close()
    print(markdown_table(summary_rows(summary)))
    t = summary["target"]
    if t.get("n"):
        print(f"\ntarget: follow-up Recall@5 {t['follow_up_resolved']:.3f} vs standalone {t['standalone']:.3f} "
              f"(gap {t['gap']:+.3f}, limit {t['limit']}): {'met' if t['met'] else 'NOT met'}")
    s = summary.get("subject_changes")
    if s and s.get("n"):
        print(f"subject changes: Recall@5 resolved {s['resolved']:.3f} vs typed alone {s['typed']:.3f} "
              f"(loss {s['loss']:+.3f}), rewritten {summary['rewrites']['subject_changes_rewritten']}"
              f"/{summary['rewrites']['subject_changes']}")
    print(f"\nwritten: {out}/summary.json, {out}/cases.jsonl.gz")
    return 0
