"""api (serve the REST API) and token (create, list, revoke API tokens).

`python -m ragcore api` opens the database first (a clear error if it cannot), then serves
`ragcore.api.create_app` with uvicorn on API_HOST:API_PORT (127.0.0.1:8502 by default) and,
runs a background job worker in the same process when `ragcore.jobs.runs_jobs_here` says so
(WORKER_IN_APP, --no-worker). uvicorn's own
X-Forwarded-For handling is off: the app believes that header only from TRUSTED_PROXIES
(ragcore.access.addresses; uvicorn's FORWARDED_ALLOW_IPS plays no part here).

SIGTERM (a service manager, `docker stop`) ends it like SIGINT: uvicorn shuts the app down
gracefully and then re-raises the signal it caught; with SIGTERM's default action that killed
the process before `atexit` ran, and the embedded PostgreSQL that pgserver stops there was
left running. `_exit_on_sigterm` turns that re-raised signal into a normal exit.

`python -m ragcore token create USER` prints the new token once; only its hash is stored.
"""

from __future__ import annotations

import argparse
import signal
import sys
from datetime import datetime, timezone
from types import FrameType

from ragcore.access import DEFAULT_TOKEN_NAME, TokenError, create_token, list_tokens, revoke_token
from ragcore.cli.common import CommandError, add_json_flag, emit, open_db
from ragcore.core import Settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("api", help="serve the REST API (FastAPI + uvicorn)")
    p.add_argument("--host", help="bind address (default API_HOST, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default API_PORT, 8502)")
    p.add_argument("--no-worker", action="store_true", help="no job worker in this process (even if WORKER_IN_APP)")
    p.set_defaults(func=cmd_api)

    p = sub.add_parser("token", help="API tokens: create USER, list, revoke ID")
    actions = p.add_subparsers(dest="token_command", required=True)
    create = actions.add_parser("create", help="make a token for a user (printed once)")
    create.add_argument("username")
    create.add_argument("--name", help=f"what the token is for (default: {DEFAULT_TOKEN_NAME!r})")
    create.add_argument("--expires-days", type=int, help="valid for N days (default: until revoked)")
    add_json_flag(create)
    create.set_defaults(func=cmd_token_create)
    listing = actions.add_parser("list", help="list tokens (never their secret)")
    listing.add_argument("--user", help="only this user's tokens")
    listing.add_argument("--active", action="store_true", help="hide revoked tokens")
    add_json_flag(listing)
    listing.set_defaults(func=cmd_token_list)
    revoke = actions.add_parser("revoke", help="revoke a token by id")
    revoke.add_argument("token_id", type=int)
    add_json_flag(revoke)
    revoke.set_defaults(func=cmd_token_revoke)


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    """Leave through SystemExit, so atexit handlers (pgserver's stop of the embedded server) run."""
    sys.exit(128 + signum)


def cmd_api(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    # Before the database opens: a SIGTERM while it starts stops it too. uvicorn replaces this
    # handler while it serves and restores it before re-raising the signal it caught.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)

    from ragcore.api import HEADER_READ_LIMIT, create_app

    host = args.host or settings.api_host
    port = args.port if args.port is not None else settings.api_port
    if not 0 < port < 65536:
        raise CommandError(f"--port must be a TCP port (1–65535), got {port}")
    db = open_db(settings)
    # h11 named, not "auto": HEADER_READ_LIMIT is h11's setting, and what a tested server does
    # must not change when httptools happens to be installed.
    from ragcore.jobs import runs_jobs_here

    app = create_app(settings, db=db, own_db=True, worker=runs_jobs_here(settings, "api", opted_out=args.no_worker))
    uvicorn.run(app, host=host, port=port, proxy_headers=False, log_level=settings.log_level.lower(),
                server_header=False, http="h11", h11_max_incomplete_event_size=HEADER_READ_LIMIT)
    return 0


def _when(value: datetime | None) -> str:
    return value.astimezone().strftime("%d.%m.%Y %H:%M") if value else "-"


def cmd_token_create(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            made = create_token(db, args.username, name=args.name, expires_days=args.expires_days,
                                       created_by="cli")
        except TokenError as exc:
            raise CommandError(str(exc)) from exc
    token = made.token
    payload = {**token.as_dict(), "token": made.secret}
    emit(payload, args.json, lambda: (
        f"API anahtarı #{token.id} ({token.username}, “{token.name}”, bitiş: {_when(token.expires_at)}):\n"
        f"{made.secret}\n"
        "Bu anahtar yalnızca şimdi gösteriliyor; güvenli bir yerde saklayın. "
        "Kullanım: Authorization: Bearer <anahtar>"))
    return 0


def cmd_token_list(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        found = list_tokens(db, args.user, include_revoked=not args.active)
    now = datetime.now(timezone.utc)  # noqa: UP017 - explicit tz
    rows = [{**t.as_dict(), "state": t.state(now)} for t in found]
    emit(rows, args.json, lambda: "\n".join(
        f"#{t.id:<4} {t.prefix}…  {t.username:16} {t.name[:30]:30} {t.state(now):20} "
        f"son kullanım: {_when(t.last_used_at)}  bitiş: {_when(t.expires_at)}" for t in found) or "API anahtarı yok")
    return 0


def cmd_token_revoke(args: argparse.Namespace, settings: Settings) -> int:
    with open_db(settings) as db:
        try:
            token = revoke_token(db, args.token_id)
        except TokenError as exc:
            raise CommandError(str(exc)) from exc
    emit(token.as_dict(), args.json, lambda: f"API anahtarı #{token.id} ({token.prefix}…, {token.username}) iptal edildi")
    return 0
