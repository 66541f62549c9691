"""Sign-in through LDAP / Active Directory (ldap3): find the user, bind as them, read their groups.

One sign-in is: a search for the typed name (as LDAP_BIND_DN, or anonymously), a bind as the
entry found with the typed password (the directory checks it; Dayanak never stores it), then
the groups read: the entry's `memberOf` (AD, OpenLDAP's memberof overlay), the groups whose
`member`/`uniqueMember` names it (groupOfNames, groupOfUniqueNames) and, transitively, the
groups that hold those groups, `MAX_GROUP_DEPTH` levels deep. On Active Directory (its root DSE
says so) the server resolves the whole chain itself too (LDAP_MATCHING_RULE_IN_CHAIN). An
account is disabled when AD's userAccountControl has bit 2 (ACCOUNTDISABLE), OpenLDAP's
ppolicy has set `pwdAccountLockedTime`, or it is in LDAP_DISABLED_GROUP.

A plain `ldap://` connection is refused unless LDAP_START_TLS upgrades it or LDAP_ALLOW_PLAIN
says plain is wanted (then every connection logs a warning and the login page shows one).

`recheck` re-reads a signed-in directory user at most every LDAP_RECHECK_SECONDS, on the
request that finds the last check older than that: gone from the directory, disabled or in no
mapped group → deactivated there and then (sessions, cookies and tokens void), so a removal
takes effect at the first request after the interval. A directory that does not answer keeps
the user as they were until the next interval (logged): an outage must not sign the whole
company out, and no new sign-in succeeds meanwhile anyway.
"""

from __future__ import annotations

import functools
import logging
import math
import ssl
from dataclasses import dataclass

import ldap3
from ldap3.core.exceptions import LDAPException, LDAPInvalidCredentialsResult
from ldap3.utils.conv import escape_filter_chars
from ldap3.utils.dn import parse_dn

from ragcore.access import directory
from ragcore.access.users import get_user
from ragcore.core import Settings, User
from ragcore.store import Database

log = logging.getLogger(__name__)

MAX_GROUP_DEPTH = 8  # nesting levels followed; a deeper (or cyclic) chain stops here
_FILTER_BATCH = 50  # group DNs per `(|(member=…)…)` search
_AD_CAPABILITY = "1.2.840.113556.1.4.800"  # LDAP_CAP_ACTIVE_DIRECTORY_OID in the root DSE
_IN_CHAIN = "1.2.840.113556.1.4.1941"  # LDAP_MATCHING_RULE_IN_CHAIN
_ACCOUNTDISABLE = 0x2
_USER_ATTRIBUTES = ["cn", "displayName", "mail", "memberOf", "userAccountControl", "pwdAccountLockedTime"]

UNAVAILABLE = ("Dizin sunucusuna (LDAP) ulaşılamadı; dizin hesabıyla giriş şu an yapılamıyor. "
               "Biraz sonra yeniden deneyin ya da BT birimine haber verin.")
PLAIN_WARNING = ("Dizin bağlantısı şifresiz (LDAP_ALLOW_PLAIN): parolalar ağda okunabilir gidiyor. "
                 "Yöneticiniz ldaps:// ya da LDAP_START_TLS ayarlamalı.")


class DirectoryUnavailable(Exception):
    """The directory did not answer, or refused the connection's security (operator text; the user sees `UNAVAILABLE`)."""


@dataclass(frozen=True)
class _Entry:
    dn: str
    attributes: dict


def configured(settings: Settings) -> bool:
    return settings.ldap_url is not None


def plain(settings: Settings) -> bool:
    """Passwords would cross the network unencrypted (allowed only with LDAP_ALLOW_PLAIN)."""
    return bool(settings.ldap_url) and settings.ldap_url.lower().startswith("ldap://") and not settings.ldap_start_tls


@functools.cache
def _warn_plain(url: str) -> None:
    """Once per process and URL (the login page shows `PLAIN_WARNING` on every visit)."""
    log.warning("LDAP connections to %s without TLS (LDAP_ALLOW_PLAIN): passwords cross the network readable", url)


def _server(settings: Settings) -> ldap3.Server:
    url = settings.ldap_url or ""
    tls = ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=str(settings.ldap_ca_file) if settings.ldap_ca_file else None)
    return ldap3.Server(url, use_ssl=url.lower().startswith("ldaps://"), tls=tls, get_info=ldap3.NONE,
                        connect_timeout=settings.ldap_timeout_seconds)


def _connection(settings: Settings, dn: str | None, password: str | None) -> ldap3.Connection:
    """An open, bound connection (anonymous when `dn` is None), StartTLS first when configured."""
    if not configured(settings):
        raise DirectoryUnavailable("LDAP_URL is not set")
    if plain(settings):
        if not settings.ldap_allow_plain:
            raise DirectoryUnavailable("plain ldap:// refused: set LDAP_START_TLS=true, use ldaps://, or LDAP_ALLOW_PLAIN=true")
        _warn_plain(settings.ldap_url or "")
    conn = ldap3.Connection(_server(settings), user=dn, password=password, auto_bind=ldap3.AUTO_BIND_NONE,
                            receive_timeout=max(1, math.ceil(settings.ldap_timeout_seconds)), raise_exceptions=True, read_only=True)
    try:
        conn.open()
        if settings.ldap_start_tls:
            conn.start_tls()
        conn.bind()
    except BaseException:
        conn.unbind()
        raise
    return conn


def _service(settings: Settings) -> ldap3.Connection:
    return _connection(settings, settings.ldap_bind_dn, settings.ldap_bind_password)


def _find(conn: ldap3.Connection, settings: Settings, username: str) -> _Entry | None:
    """The one entry the user filter finds for `username` (none or several: None)."""
    search = settings.ldap_user_filter.replace("{username}", escape_filter_chars(username))
    conn.search(settings.ldap_user_base_dn, search, ldap3.SUBTREE, attributes=_USER_ATTRIBUTES, size_limit=2)
    entries = [e for e in conn.response or [] if e.get("type") == "searchResEntry"]
    if len(entries) != 1:
        if len(entries) > 1:
            log.warning("LDAP_USER_FILTER finds several entries for %r; refused", username)
        return None
    return _Entry(entries[0]["dn"], dict(entries[0]["attributes"]))


def _values(entry: _Entry, name: str) -> list:
    value = entry.attributes.get(name)
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _is_ad(conn: ldap3.Connection) -> bool:
    conn.search("", "(objectClass=*)", ldap3.BASE, attributes=["supportedCapabilities"])
    entries = [e for e in conn.response or [] if e.get("type") == "searchResEntry"]
    return bool(entries) and _AD_CAPABILITY in (entries[0]["attributes"].get("supportedCapabilities") or [])


def _holders(conn: ldap3.Connection, base: str, members: list[str]) -> set[str]:
    """DNs of the groups that list any of `members` in `member` or `uniqueMember`."""
    found: set[str] = set()
    for start in range(0, len(members), _FILTER_BATCH):
        batch = [escape_filter_chars(dn) for dn in members[start:start + _FILTER_BATCH]]
        terms = "".join(f"(member={dn})(uniqueMember={dn})" for dn in batch)
        conn.search(base, f"(|{terms})", ldap3.SUBTREE, attributes=["memberOf"])
        for entry in conn.response or []:
            if entry.get("type") == "searchResEntry":
                found.add(entry["dn"])
                found.update(entry["attributes"].get("memberOf") or [])
    return found


def groups_of(conn: ldap3.Connection, settings: Settings, entry: _Entry) -> set[str]:
    """Every group DN `entry` is in, directly or through nested groups (bounded: depth and count)."""
    base = settings.ldap_group_base_dn or settings.ldap_user_base_dn or ""
    groups = {str(dn) for dn in _values(entry, "memberOf")}
    if _is_ad(conn):
        conn.search(base, f"(member:{_IN_CHAIN}:={escape_filter_chars(entry.dn)})", ldap3.SUBTREE, attributes=[])
        groups.update(e["dn"] for e in conn.response or [] if e.get("type") == "searchResEntry")
    frontier = [entry.dn, *groups]
    for _ in range(MAX_GROUP_DEPTH):
        new = _holders(conn, base, frontier) - groups
        groups |= new
        if not new or len(groups) >= directory.MAX_GROUPS:
            break
        frontier = sorted(new)
    if len(groups) >= directory.MAX_GROUPS:
        log.warning("LDAP user %s is in %d+ groups; only the first %d are mapped", entry.dn, len(groups), directory.MAX_GROUPS)
    return set(sorted(groups)[:directory.MAX_GROUPS])


def group_names(dns: set[str]) -> tuple[str, ...]:
    """Each group DN and its cn (the first RDN's value): a mapping may name either."""
    names: set[str] = set()
    for dn in dns:
        names.add(dn)
        try:
            names.add(parse_dn(dn)[0][1])
        except (LDAPException, IndexError):
            log.warning("LDAP group DN %r does not parse; matched by its full DN only", dn)
    return tuple(sorted(names))


def _disabled(settings: Settings, entry: _Entry, names: tuple[str, ...]) -> bool:
    control = _values(entry, "userAccountControl")
    if control and int(control[0]) & _ACCOUNTDISABLE:
        return True
    if _values(entry, "pwdAccountLockedTime"):
        return True
    wanted = settings.ldap_disabled_group
    return wanted is not None and directory.normalise_group(wanted) in {directory.normalise_group(n) for n in names}


def _account(conn: ldap3.Connection, settings: Settings, username: str, entry: _Entry) -> directory.DirectoryAccount:
    names = group_names(groups_of(conn, settings, entry))
    display = (_values(entry, "displayName") or _values(entry, "cn") or [username])[0]
    mail = (_values(entry, "mail") or [None])[0]
    return directory.DirectoryAccount(
        source="ldap", external_id=entry.dn, username=username.strip().lower(), display_name=str(display),
        email=str(mail) if mail else None, groups=names, disabled=_disabled(settings, entry, names))


def authenticate(settings: Settings, username: str, password: str) -> directory.DirectoryAccount | None:
    """The directory's account for `username` when `password` binds as it; None when it does not.

    Raises `DirectoryUnavailable` when the directory cannot be asked. An empty password is
    refused here: LDAP treats a bind with a DN and no password as an anonymous bind that succeeds.
    """
    if not password or not username.strip():
        return None
    try:
        conn = _service(settings)
        try:
            entry = _find(conn, settings, username.strip())
        finally:
            conn.unbind()
        if entry is None:
            return None
        try:
            conn = _connection(settings, entry.dn, password)
        except LDAPInvalidCredentialsResult:
            return None
        try:
            return _account(conn, settings, username, entry)
        finally:
            conn.unbind()
    except LDAPException as exc:
        raise DirectoryUnavailable(f"LDAP {settings.ldap_url}: {exc}") from exc


def lookup(settings: Settings, username: str) -> directory.DirectoryAccount | None:
    """The account as the service bind sees it now (no password): None when it is gone."""
    try:
        conn = _service(settings)
        try:
            entry = _find(conn, settings, username)
            return None if entry is None else _account(conn, settings, username, entry)
        finally:
            conn.unbind()
    except LDAPException as exc:
        raise DirectoryUnavailable(f"LDAP {settings.ldap_url}: {exc}") from exc


def sign_in(db: Database, settings: Settings, username: str, password: str) -> tuple[User | None, str | None]:
    """(user, None) on success; (None, Turkish refusal) when the password was right but access is
    refused or the directory is down; (None, None) for a wrong name or password."""
    try:
        account = authenticate(settings, username, password)
    except DirectoryUnavailable as exc:
        log.error("LDAP sign-in of %r failed: %s", username, exc)
        return None, UNAVAILABLE
    if account is None:
        return None, None
    try:
        return directory.sign_in(db, account), None
    except directory.DirectoryRefusal as refusal:
        log.info("LDAP sign-in of %r refused: %s", username, refusal)
        return None, str(refusal)


_CLAIM_RECHECK = """
UPDATE users SET directory_checked_at = now()
WHERE id = %(id)s AND auth_source = 'ldap' AND active
  AND (directory_checked_at IS NULL OR directory_checked_at <= now() - make_interval(secs => %(every)s))
RETURNING username"""


def recheck(db: Database, settings: Settings, user: User) -> User | None:
    """`user` as the directory allows it now: unchanged within LDAP_RECHECK_SECONDS of the last
    check, else re-read (roles refreshed; gone, disabled or unmapped → deactivated, None).

    Local and OIDC users pass unchanged. The check is claimed by one statement, so of many
    concurrent requests one asks the directory and the others go on.
    """
    if not configured(settings):
        return user
    with db.connection() as conn:
        claimed = conn.execute(_CLAIM_RECHECK, {"id": user.id, "every": settings.ldap_recheck_seconds}).fetchone()
    if claimed is None:
        return user
    try:
        account = lookup(settings, user.username)
    except DirectoryUnavailable as exc:
        log.warning("LDAP re-check of %s skipped (kept as is until the next interval): %s", user.username, exc)
        return user
    if account is None or account.disabled:
        directory.refuse(db, user.id, "gone from the directory" if account is None else "disabled in the directory")
        return None
    roles = directory.mapped_roles(db, "ldap", account.groups)
    if not roles:
        directory.refuse(db, user.id, "no group maps to a role any more")
        return None
    directory.apply_mapped_roles(db, user.id, roles)
    return get_user(db, user.username)
