"""Who may do what: users and roles (roles are data: `roles`, several per user), the first admin,
sign-in with throttling, server-side session revocation, API tokens, which client address the
throttles believe, and sign-in through the company's directory (LDAP/Active Directory, OpenID
Connect) with its group → role table.
"""

from ragcore.access import addresses, auth, directory, first_admin, ldap, oidc, roles, sessions, tokens, users
from ragcore.access.first_admin import announce_initial_admin, ensure_initial_admin
from ragcore.access.roles import Role, RoleError, list_roles, role_names
from ragcore.access.users import (
    MAX_PASSWORD_BYTES,
    create_user,
    credentials,
    get_user,
)

__all__ = [
    "MAX_PASSWORD_BYTES",
    "Role",
    "RoleError",
    "addresses",
    "announce_initial_admin",
    "auth",
    "create_user",
    "credentials",
    "directory",
    "ensure_initial_admin",
    "first_admin",
    "get_user",
    "ldap",
    "list_roles",
    "oidc",
    "role_names",
    "roles",
    "sessions",
    "tokens",
    "users",
]
