"""Which client address the throttles count: the TCP peer, or the client a trusted proxy names.

`X-Forwarded-For` is a header any client can write, so it may name the client only when the
TCP peer is one of the reverse proxies listed in TRUSTED_PROXIES (`Settings.trusted_proxies`,
none by default — not even 127.0.0.1, where any local process could otherwise pick a fresh
throttling address per request). The REST API applies that rule itself, with uvicorn's
`ProxyHeadersMiddleware` over exactly those networks (ragcore/api/app.py).

The Streamlit app cannot: its uvicorn is built by `streamlit run` before any of our code runs,
and it believes `X-Forwarded-For` from the peers in uvicorn's FORWARDED_ALLOW_IPS (default
127.0.0.1 and ::1). Once it has rewritten the address the real peer is gone, so the app can
only ask whether that server trusts anything TRUSTED_PROXIES does not (`server_trusts_only`);
if it does, a request carrying the header has no address the app may believe.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

# What uvicorn trusts when FORWARDED_ALLOW_IPS is unset (uvicorn.config.Config).
UVICORN_DEFAULT_FORWARDED_ALLOW_IPS = "127.0.0.1,::1"


def _networks(values: Iterable[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network] | None:
    """The entries as networks; None when one is not an address or network (`*`, a host name)."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            return None
    return networks


def server_trusts_only(forwarded_allow_ips: str | None, trusted_proxies: Iterable[str]) -> bool:
    """Whether a uvicorn started with FORWARDED_ALLOW_IPS=`forwarded_allow_ips` (None: unset)
    believes X-Forwarded-For only from peers inside `trusted_proxies`.

    Then an address it took from the header was vouched for by a proxy we trust too; otherwise
    the header may have been written by the client itself.
    """
    raw = UVICORN_DEFAULT_FORWARDED_ALLOW_IPS if forwarded_allow_ips is None else forwarded_allow_ips
    server = _networks(part for part in raw.split(",") if part.strip())
    ours = _networks(trusted_proxies)
    if server is None or ours is None:
        return False
    return all(any(net.version == mine.version and net.subnet_of(mine) for mine in ours)  # type: ignore[arg-type]
               for net in server)
