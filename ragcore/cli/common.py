"""What every command module shares: the handler type, the error a user can act on, printing a
result (human-readable or JSON) and opening the migrated database. A leaf module, so the command
modules never import the package face that imports them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from ragcore.core import Settings

__all__ = ["CommandError", "Handler", "add_json_flag", "emit", "open_db"]

Handler = Callable[[argparse.Namespace, Settings], int]


class CommandError(Exception):
    """A failure the user can act on; printed without a traceback."""


def emit(payload: object, as_json: bool, human: Callable[[], str] | None = None) -> None:
    if as_json or human is None:
        print(json.dumps(payload, ensure_ascii=False, indent=2, default=str))
    else:
        print(human())


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def open_db(settings: Settings):  # -> ragcore.store.Database
    """The migrated public database, with database problems turned into command errors."""
    from ragcore import store as dbmod
    from ragcore.documents import reindex_stale

    try:
        db = dbmod.open_database(settings)
        reindex_stale(db)  # documents stored before the current lexical text (migration 016)
        return db
    except dbmod.DatabaseError as exc:
        raise CommandError(str(exc)) from exc
