"""`python -m ragcore …`: one subcommand module per concern, each registering its parsers.

Every command prints a human-readable result, or JSON with `--json`, and exits non-zero with
the message on stderr when it fails. What the command modules share is `ragcore.cli.common`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from ragcore.cli.common import CommandError
from ragcore.core import Settings, SettingsError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    from ragcore.cli import api, core, documents, jobs, questions

    parser = argparse.ArgumentParser(prog="python -m ragcore", description="Dayanak command line")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (core, documents, questions, jobs, api):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=getattr(logging, settings.log_level, logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    import psycopg

    from ragcore.store import DatabaseError, redact_message

    try:
        return args.func(args, settings)
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except DatabaseError as exc:  # the database went away mid-command, or would not start again: its reason
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except psycopg.OperationalError as exc:  # the server refused mid-command (its disk is full, it shuts down)
        print(f"error: the database failed: {redact_message(str(exc), settings.database_url or '')}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
