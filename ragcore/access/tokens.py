"""API tokens: per-user bearer tokens for the REST API, stored hashed, shown once.

A token is `dyk_` followed by 43 URL-safe characters: 32 bytes (256 bits) from `secrets`.
The recognisable prefix lets people, log filters and secret scanners spot a leaked token;
its first 12 characters (`prefix`) are stored in the clear so lists can name a token
without revealing it.

**Only the SHA-256 of a token is stored, not a bcrypt hash.** bcrypt is slow on purpose, so
that a stolen table of *passwords* — short, human-chosen, guessable — costs an attacker a
lot per guess. A 256-bit random token has no such weakness: even at 10^12 hashes per second,
finding a preimage of one stored hash takes ~10^57 years, so a fast hash protects a leaked
table just as well. A fast, unsalted, deterministic hash also lets each request find its
token through the unique index in one lookup, where bcrypt would cost ~0.25 s of CPU per
request (and a salted hash would need a scan). A keyed HMAC would only add protection for
low-entropy tokens, which these are not, at the price of one more secret to keep.

Every request reads the token and its user in one statement: a revoked or expired token, or
one whose user is deactivated, stops working at once, and the role is the one in `users` at
that moment. A password change and a deactivation revoke the user's tokens in the same
statement (a trigger of migration 008); a logout and a role change do not (see SECURITY.md).

Rejected tokens are counted per client address (`ragcore.access.auth.count_address_attempt`, the
login-throttling table and window). **A valid token is never throttled**: it is looked up first
(by its SHA-256 through the unique index, so the lookup's time says nothing about how close a
guess came) and passes whatever its address's counter says — one client with a stale token
behind a proxy or NAT must not lock out every other integration behind it. Only a rejected
token is counted; once an address has `TOKEN_POLICY.max_attempts` rejections in one window its
rejected tokens get "too many attempts" (429) instead of "invalid" (401) until the window ends,
while other addresses are unaffected. That refusal costs a guesser nothing it did not already
lack: a 256-bit token cannot be guessed, so the counter is there to make a misbehaving
client visible and give it a `Retry-After`, not to stop a search. Concurrent bad tokens can
overshoot the count by the number in flight, for the same reason harmlessly. A valid token
does not clear the counter: otherwise one valid token would reset its neighbour's misuse.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

from ragcore.access import auth
from ragcore.core import User
from ragcore.store import Database

log = logging.getLogger(__name__)

TOKEN_PREFIX = "dyk_"
TOKEN_BYTES = 32
SHOWN_PREFIX_CHARS = 12  # "dyk_" + 8 characters
_TOKEN_RE = re.compile(r"^dyk_[A-Za-z0-9_-]{43}$")
MAX_NAME_CHARS = 100
MAX_EXPIRY_DAYS = 3650
DEFAULT_NAME = "API anahtarı"
# The key under which rejected tokens are counted per address. No username can take it
# (usernames match ^[a-z0-9._-]{2,64}$), so it never mixes with a login counter.
THROTTLE_KEY = "~api-token"
TOKEN_POLICY = auth.ThrottlePolicy(max_attempts=10, window=auth.DEFAULT_POLICY.window)
# last_used_at is written at most this often per token, so concurrent requests with one
# token do not queue on its row lock.
LAST_USED_RESOLUTION_S = 60

REVOKE_REASONS = {"manual": "iptal edildi", "password": "parola değişti", "deactivated": "kullanıcı devre dışı"}


class TokenError(ValueError):
    """A token operation was refused; the message is Turkish and safe to show."""


@dataclass(frozen=True)
class ApiToken:
    """A token as lists show it: never the secret, only its prefix."""

    id: int
    user_id: int
    username: str
    name: str
    prefix: str
    created_by: str | None
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None
    revoked_reason: str | None

    def usable(self, now: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

    def state(self, now: datetime) -> str:
        """Turkish, for the Kullanıcılar page and the CLI."""
        if self.revoked_at is not None:
            return REVOKE_REASONS.get(self.revoked_reason or "", "iptal edildi")
        if self.expires_at is not None and self.expires_at <= now:
            return "süresi doldu"
        return "etkin"

    def as_dict(self) -> dict:
        return {
            "id": self.id, "username": self.username, "name": self.name, "prefix": self.prefix,
            "created_by": self.created_by, "created_at": self.created_at.isoformat(),
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "last_used_at": self.last_used_at.isoformat() if self.last_used_at else None,
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
            "revoked_reason": self.revoked_reason,
        }


@dataclass(frozen=True)
class NewToken:
    """A token just made: `secret` exists only here, to be shown once."""

    token: ApiToken
    secret: str


@dataclass(frozen=True)
class TokenCheck:
    """The outcome of one presented token: the user when it is valid, and the address's gate."""

    user: User | None
    token_id: int | None
    gate: auth.LoginGate

    @property
    def throttled(self) -> bool:
        return not self.gate.allowed


_COLUMNS = """t.id, t.user_id, u.username, t.name, t.prefix, t.created_by, t.created_at, t.expires_at,
              t.last_used_at, t.revoked_at, t.revoked_reason"""

# The one check of a presented token: its hash, not revoked, not expired, an active user.
_LOOKUP_SQL = """
SELECT t.id, u.id, u.username, u.display_name,
       ARRAY(SELECT ur.role FROM user_roles ur WHERE ur.user_id = u.id ORDER BY ur.role), u.active, u.email
FROM api_tokens t JOIN users u ON u.id = t.user_id
WHERE t.token_hash = %(hash)s
  AND t.revoked_at IS NULL
  AND (t.expires_at IS NULL OR t.expires_at > now())
  AND u.active"""

_TOUCH_SQL = """
UPDATE api_tokens SET last_used_at = now()
WHERE id = %(id)s AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => %(every)s))"""


def token_hash(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


def well_formed(secret: str) -> bool:
    return bool(_TOKEN_RE.match(secret or ""))


def _token(row: tuple) -> ApiToken:
    return ApiToken(*row)


def create_token(db: Database, username: str, *, name: str | None = None, expires_days: int | None = None,
                 created_by: str | None = None) -> NewToken:
    """Make a token for an active user; the secret is returned once and never stored."""
    label = (name or "").strip() or DEFAULT_NAME
    if len(label) > MAX_NAME_CHARS:
        raise TokenError(f"Anahtar adı en fazla {MAX_NAME_CHARS} karakter olabilir.")
    if expires_days is not None and not 1 <= expires_days <= MAX_EXPIRY_DAYS:
        raise TokenError(f"Geçerlilik süresi 1 ile {MAX_EXPIRY_DAYS} gün arasında olmalı (süresiz için boş bırakın).")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    assert well_formed(secret)
    with db.connection() as conn:
        user = conn.execute("SELECT id, active FROM users WHERE username = %s",
                            (username.strip().lower(),)).fetchone()
        if user is None:
            raise TokenError(f"'{username}' adında bir kullanıcı yok.")
        if not user[1]:
            raise TokenError(f"'{username}' devre dışı; devre dışı bir kullanıcıya API anahtarı verilemez.")
        row = conn.execute(
            f"""WITH t AS (
                    INSERT INTO api_tokens (user_id, name, prefix, token_hash, created_by, expires_at)
                    VALUES (%(user_id)s, %(name)s, %(prefix)s, %(hash)s, %(by)s,
                            CASE WHEN %(days)s::int IS NULL THEN NULL
                                 ELSE now() + make_interval(days => %(days)s::int) END)
                    RETURNING *)
                SELECT {_COLUMNS} FROM t JOIN users u ON u.id = t.user_id""",
            {"user_id": user[0], "name": label, "prefix": secret[:SHOWN_PREFIX_CHARS], "hash": token_hash(secret),
             "by": created_by, "days": expires_days},
        ).fetchone()
    token = _token(row)
    log.info("API token %d (%s…) created for %s by %s", token.id, token.prefix, token.username, created_by or "-")
    return NewToken(token, secret)


def list_tokens(db: Database, username: str | None = None, *, include_revoked: bool = True) -> list[ApiToken]:
    """Tokens, newest first; one user's when `username` is given."""
    with db.connection() as conn:
        rows = conn.execute(
            f"""SELECT {_COLUMNS} FROM api_tokens t JOIN users u ON u.id = t.user_id
                WHERE (%(username)s::text IS NULL OR u.username = %(username)s)
                  AND (%(revoked)s OR t.revoked_at IS NULL)
                ORDER BY t.created_at DESC, t.id DESC""",
            {"username": username.strip().lower() if username else None, "revoked": include_revoked},
        ).fetchall()
    return [_token(row) for row in rows]


def get_token(db: Database, token_id: int) -> ApiToken | None:
    with db.connection() as conn:
        row = conn.execute(f"SELECT {_COLUMNS} FROM api_tokens t JOIN users u ON u.id = t.user_id "
                           "WHERE t.id = %s", (token_id,)).fetchone()
    return _token(row) if row else None


def revoke_token(db: Database, token_id: int) -> ApiToken:
    """Revoke one token by hand (admin, CLI); it stops working on the next request."""
    existing = get_token(db, token_id) if 0 < token_id < 2**63 else None
    if existing is None:
        raise TokenError(f"API anahtarı #{token_id} bulunamadı.")
    with db.connection() as conn:
        row = conn.execute(
            "UPDATE api_tokens SET revoked_at = now(), revoked_reason = 'manual' "
            "WHERE id = %s AND revoked_at IS NULL RETURNING id", (token_id,)).fetchone()
    if row is None:
        raise TokenError(f"API anahtarı #{token_id} zaten iptal edilmiş.")
    token = get_token(db, token_id)
    assert token is not None
    log.info("API token %d (%s…) of %s revoked", token.id, token.prefix, token.username)
    return token


def authenticate(db: Database, secret: str, address: str | None) -> TokenCheck:
    """The user behind a presented token, read now; a rejection is counted against `address`.

    The token is checked before the address's counter is read, so a valid one passes even from
    an address that is over the limit (see the module docstring).
    """
    if well_formed(secret):
        with db.connection() as conn:
            row = conn.execute(_LOOKUP_SQL, {"hash": token_hash(secret)}).fetchone()
            if row is not None:
                conn.execute(_TOUCH_SQL, {"id": row[0], "every": LAST_USED_RESOLUTION_S})
        if row is not None:
            user = User(id=row[1], username=row[2], display_name=row[3], roles=tuple(row[4]), active=row[5],
                        email=row[6])
            return TokenCheck(user, row[0], auth.LoginGate(True))
    gate = auth.count_address_attempt(db, THROTTLE_KEY, address, policy=TOKEN_POLICY)
    return TokenCheck(None, None, gate)
