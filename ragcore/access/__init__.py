"""Who may do what: users and roles (roles are data: `roles`, several per user), the first admin,
sign-in with throttling, server-side session revocation, API tokens, which client address the
throttles believe, and sign-in through the company's directory (LDAP/Active Directory, OpenID
Connect) with its group → role table.
"""

from ragcore.access.addresses import UVICORN_DEFAULT_FORWARDED_ALLOW_IPS, server_trusts_only
from ragcore.access.auth import check as login_gate
from ragcore.access.auth import lock_status, login
from ragcore.access.auth import unlock as unlock_logins
from ragcore.access.directory import (
    MAX_GROUP_NAME_CHARS,
    SOURCE_LABELS,
    GroupRole,
    add_group_role,
    delete_group_role,
    list_group_roles,
)
from ragcore.access.directory import SOURCES as DIRECTORY_SOURCES
from ragcore.access.directory import source_of as user_source
from ragcore.access.directory import sources as user_sources
from ragcore.access.first_admin import announce_initial_admin, ensure_initial_admin
from ragcore.access.ldap import PLAIN_WARNING as LDAP_PLAIN_WARNING
from ragcore.access.ldap import configured as ldap_configured
from ragcore.access.ldap import plain as ldap_plain
from ragcore.access.ldap import recheck as ldap_recheck
from ragcore.access.oidc import PROVIDER as OIDC_PROVIDER
from ragcore.access.oidc import configured as oidc_configured
from ragcore.access.oidc import sign_in as oidc_sign_in
from ragcore.access.oidc import write_secrets as write_oidc_secrets
from ragcore.access.roles import MAX_DESCRIPTION_CHARS as MAX_ROLE_DESCRIPTION_CHARS
from ragcore.access.roles import MAX_LABEL_CHARS as MAX_ROLE_LABEL_CHARS
from ragcore.access.roles import MAX_NAME_CHARS as MAX_ROLE_NAME_CHARS
from ragcore.access.roles import (
    Role,
    RoleError,
    create_role,
    delete_role,
    list_roles,
    role_names,
    unknown_roles_message,
    update_role,
)
from ragcore.access.roles import labels as role_labels
from ragcore.access.sessions import cookie_issued_at, cookie_valid, session_valid
from ragcore.access.sessions import epochs as session_epochs
from ragcore.access.sessions import revoke as revoke_sessions
from ragcore.access.tokens import DEFAULT_NAME as DEFAULT_TOKEN_NAME
from ragcore.access.tokens import MAX_EXPIRY_DAYS as MAX_TOKEN_EXPIRY_DAYS
from ragcore.access.tokens import MAX_NAME_CHARS as MAX_TOKEN_NAME_CHARS
from ragcore.access.tokens import TokenError, create_token, list_tokens, revoke_token
from ragcore.access.tokens import authenticate as authenticate_token
from ragcore.access.users import (
    MAX_PASSWORD_BYTES,
    User,
    UserError,
    create_user,
    credentials,
    get_user,
    list_users,
    set_password,
    set_roles,
)
from ragcore.access.users import set_active as set_user_active

__all__ = [
    # addresses: Which client address the throttles count
    "server_trusts_only",
    "UVICORN_DEFAULT_FORWARDED_ALLOW_IPS",
    # auth: Login throttling
    "lock_status",
    "login",
    "login_gate",
    "unlock_logins",
    # directory: Directory users (LDAP/Active Directory, OpenID Connect)
    "add_group_role",
    "delete_group_role",
    "DIRECTORY_SOURCES",
    "GroupRole",
    "list_group_roles",
    "MAX_GROUP_NAME_CHARS",
    "SOURCE_LABELS",
    "user_source",
    "user_sources",
    # first_admin: The first admin
    "announce_initial_admin",
    "ensure_initial_admin",
    # ldap: Sign-in through LDAP / Active Directory (ldap3)
    "ldap_configured",
    "ldap_plain",
    "LDAP_PLAIN_WARNING",
    "ldap_recheck",
    # oidc: Sign-in through an OpenID Connect provider
    "oidc_configured",
    "OIDC_PROVIDER",
    "oidc_sign_in",
    "write_oidc_secrets",
    # roles: Roles as data (issue 38.1)
    "create_role",
    "delete_role",
    "list_roles",
    "MAX_ROLE_DESCRIPTION_CHARS",
    "MAX_ROLE_LABEL_CHARS",
    "MAX_ROLE_NAME_CHARS",
    "Role",
    "role_labels",
    "role_names",
    "RoleError",
    "unknown_roles_message",
    "update_role",
    # sessions: Server-side revocation of sign-ins
    "cookie_issued_at",
    "cookie_valid",
    "revoke_sessions",
    "session_epochs",
    "session_valid",
    # tokens: API tokens
    "authenticate_token",
    "create_token",
    "DEFAULT_TOKEN_NAME",
    "list_tokens",
    "MAX_TOKEN_EXPIRY_DAYS",
    "MAX_TOKEN_NAME_CHARS",
    "revoke_token",
    "TokenError",
    # users: Users
    "create_user",
    "credentials",
    "get_user",
    "list_users",
    "MAX_PASSWORD_BYTES",
    "set_password",
    "set_roles",
    "set_user_active",
    "User",
    "UserError",
]
