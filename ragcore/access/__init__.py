"""Who may do what: users and roles, sign-in with throttling, server-side session revocation,
and API tokens.
"""

from ragcore.access import auth, sessions, tokens, users
from ragcore.access.users import (
    MAX_PASSWORD_BYTES,
    announce_initial_admin,
    create_user,
    credentials,
    ensure_initial_admin,
    get_user,
)

__all__ = [
    "MAX_PASSWORD_BYTES",
    "announce_initial_admin",
    "auth",
    "create_user",
    "credentials",
    "ensure_initial_admin",
    "get_user",
    "sessions",
    "tokens",
    "users",
]
