"""The ids users see and send: random UUIDs (migration 013), never the tables' sequential keys.

A sequential id is a counter everybody shares: the gap between two of a user's question ids is
the number of questions others asked in between, and a reader's document ids skip over the
documents they may not read. So questions, documents and jobs carry a `public_id`
(`gen_random_uuid()`, UUID version 4) next to their bigint key, and every id the app, the API
and the CLI's output show or accept is that one; the keys stay inside the database and the code.

A lookup by public id treats text that is not a UUID exactly like a UUID nobody has: both are
"not found", so the answer says nothing about which ids look valid.
"""

from __future__ import annotations

import uuid

SHORT_CHARS = 8  # what the Turkish texts show ("iş 3f2a9c1e"): random too, enough to tell jobs apart


def parse_public_id(text: object) -> str | None:
    """The canonical form ("3f2a9c1e-…", lower case) of a public id, or None when `text` is not one."""
    if isinstance(text, uuid.UUID):
        return str(text)
    if not isinstance(text, str) or len(text) > 64:
        return None
    try:
        return str(uuid.UUID(text.strip()))
    except ValueError:
        return None


def short_id(public_id: str) -> str:
    """The first characters of a public id, for a sentence a person reads (never for a lookup)."""
    return public_id[:SHORT_CHARS]
