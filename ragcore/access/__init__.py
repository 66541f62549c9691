"""Who may do what: users and roles, the first admin, sign-in with throttling, server-side
session revocation, API tokens, and which client address the throttles believe.
"""

from ragcore.access import addresses, auth, first_admin, sessions, tokens, users
from ragcore.access.first_admin import announce_initial_admin, ensure_initial_admin
from ragcore.access.users import (
    MAX_PASSWORD_BYTES,
    create_user,
    credentials,
    get_user,
)

__all__ = [
    "MAX_PASSWORD_BYTES",
    "addresses",
    "announce_initial_admin",
    "auth",
    "create_user",
    "credentials",
    "ensure_initial_admin",
    "first_admin",
    "get_user",
    "sessions",
    "tokens",
    "users",
]
