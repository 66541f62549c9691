"""Connection strings in messages: never show a password, never echo an ambiguous string."""

from __future__ import annotations

import re
from urllib.parse import quote

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

# Connection strings come as URLs (`postgresql://user:pass@host/db`, `?password=…`) or as
# key=value lists (`host=… password='…'`); libpq's parser (psycopg.conninfo) reads both, so
# the password is found as libpq itself would use it. A URL whose password holds a raw "@",
# "/", "?" or "#" is ambiguous: libpq splits it elsewhere and pieces of the password end up
# as host, port or database name, and libpq's own error text repeats them ("failed to
# resolve host 'ss'"). Such a string, or one libpq cannot parse at all (its error quotes the
# text), is never echoed: the message says how to fix it instead.

REDACTED = "***"
_URI_RE = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_HINT = "percent-encode special characters of the password, e.g. @ as %40, : as %3A, / as %2F"
UNPARSEABLE = f"(connection string hidden: it cannot be parsed unambiguously; {_HINT})"


def _unambiguous(dsn: str) -> dict[str, str] | None:
    """libpq's reading of `dsn`, or None if it fails or a URL's user info is ambiguous."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:
        return None
    match = _URI_RE.match(dsn.strip())
    if match:
        rest = dsn.strip()[match.end():]
        authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
        if rest.count("@") > authority.count("@") or authority.count("@") > 1:
            return None
    return {k: str(v) for k, v in params.items() if v is not None}


def redact_dsn(dsn: str) -> str:
    """The connection string without its password, as key=value pairs, safe to log and show."""
    params = _unambiguous(dsn)
    if params is None:
        return UNPARSEABLE
    if "password" in params:
        params["password"] = REDACTED
    return make_conninfo(**params)


def redact_message(message: str, dsn: str) -> str:
    """`message` (a driver error about `dsn`) with every form of the password removed."""
    params = _unambiguous(dsn)
    if params is None:
        return "connection failed (details hidden with the connection string)"
    password = params.get("password")
    if password:
        for form in sorted({password, quote(password, safe=""), quote(password)}, key=len, reverse=True):
            message = message.replace(form, REDACTED)
    return message
