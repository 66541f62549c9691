"""migrate and doctor."""

from __future__ import annotations

import argparse

from ragcore import db as dbmod
from ragcore.cli import CommandError, add_json_flag, emit
from ragcore.config import Settings
from ragcore.doctor import run_checks


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("migrate", help="apply pending database migrations")
    add_json_flag(p)
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("doctor", help="check database, models and servers")
    add_json_flag(p)
    p.set_defaults(func=cmd_doctor)


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    try:
        with dbmod.Database(dbmod.database_url(settings)) as db:
            applied = dbmod.migrate(db)
    except dbmod.DatabaseError as exc:
        raise CommandError(str(exc)) from exc
    emit({"applied": applied}, args.json, lambda: f"applied: {', '.join(applied) or 'nothing to do'}")
    return 0


def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    report = run_checks(settings)
    emit(report.as_dict(), args.json, report.as_text)
    return 0 if report.database_ok else 1
