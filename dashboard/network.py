"""Where a request comes from and what it asked for: addresses and networks, loopback names, the trusted proxy's
X-Forwarded-Proto, gunicorn binds, and header lines sent more than once."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from flask import current_app, request

from idemdash.core.settings import ConfigError, Settings, split_list

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(raw: str) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(part, strict=False) for part in split_list(raw))


def _address(raw: str | None):
    try:
        address = ipaddress.ip_address((raw or "").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def address_in(raw: str | None, networks: Iterable[Network]) -> bool:
    address = _address(raw)
    return address is not None and any(address.version == n.version and address in n for n in networks)


def from_trusted_proxy() -> bool:
    return address_in(request.remote_addr, current_app.extensions["idemdash_auth"].trusted)


def request_scheme() -> str:
    """http or https as the browser saw it: a trusted proxy's X-Forwarded-Proto counts."""
    forwarded = request.headers.get("X-Forwarded-Proto", "").split(",")[0].strip().lower()
    if forwarded in ("http", "https") and from_trusted_proxy():
        return forwarded
    return request.scheme


def client_address() -> str:
    """Who is asking, for counting failed sign-ins: the TCP peer, or, when the peer is a trusted proxy, the address
    that proxy appended last to X-Forwarded-For (the one it saw; the ones before it are the client's own say)."""
    peer = request.remote_addr or ""
    if from_trusted_proxy():
        forwarded = request.headers.get("X-Forwarded-For", "").split(",")[-1].strip()
        if _address(forwarded) is not None:
            return forwarded
    return peer


def host_of(hostport: str) -> str | None:
    """The host part of 'host:port', '[v6]:port', a bare name or a bare IPv6 address; None for unix: and fd://."""
    hostport = hostport.strip()
    if hostport.startswith(("unix:", "fd://")):
        return None
    if hostport.startswith("["):
        return hostport[1:].partition("]")[0]
    if _address(hostport) is not None:  # a bare IPv6 address has colons but no port
        return hostport
    return hostport.rpartition(":")[0] if ":" in hostport else hostport


def is_loopback_host(host: str) -> bool:
    host = host.strip().strip("[]").lower()
    if host in ("localhost", "localhost."):
        return True
    address = _address(host)
    return address is not None and address.is_loopback


def bind_host(bind: str) -> str | None:
    """The host part of a gunicorn bind ('host:port', '[v6]:port', 'host'); None for unix: and fd://."""
    return host_of(bind)


def is_loopback_request() -> bool:
    """The browser asked for a loopback name and the connection comes from this machine.

    Both, because each alone is not enough: DNS rebinding points a hostile name at 127.0.0.1 (loopback
    peer, foreign Host), and anyone can send ``Host: localhost`` from another machine.
    """
    host = host_of(request.host)
    peer = _address(request.remote_addr)
    return host is not None and is_loopback_host(host) and peer is not None and peer.is_loopback


def check_bind(config: Settings, host: str | None, *, what: str) -> None:
    """Refuse AUTH=none on anything but loopback unless IDEMDASH_ALLOW_UNAUTHENTICATED=1 (ConfigError)."""
    if config.auth != "none" or config.allow_unauthenticated:
        return
    if host is not None and is_loopback_host(host):
        return
    shown = "that socket" if host is None else ("all interfaces" if host in ("", "0.0.0.0", "::") else repr(host))
    raise ConfigError(
        f"refusing to listen on {shown} ({what}) with IDEMDASH_AUTH=none: anyone who can reach it could "
        "reclassify keys as an operator. Set IDEMDASH_AUTH=basic or proxy (see docs/security.md), listen on "
        "127.0.0.1, or set IDEMDASH_ALLOW_UNAUTHENTICATED=1 if something in front already restricts access."
    )


# A WSGI server joins repeated header lines with commas before the app sees them, which for a comma-separated
# list such as the groups header hides that there were several. `idemdash serve` counts the raw lines in
# gunicorn's pre_request hook and names the repeated ones in this header (a client's own copy is dropped first).
REPEATED_HEADERS = "X-Idemdash-Repeated-Headers"


def mark_repeated_headers(worker, req) -> None:
    """gunicorn's ``pre_request`` hook: name the headers this request carries more than once in REPEATED_HEADERS."""
    worker.log.debug("%s %s", req.method, req.path)  # what gunicorn's default hook does
    marker = REPEATED_HEADERS.upper()
    # gunicorn gives names upper case; '_' and '-' reach the WSGI environ as the same key
    names = [name.upper().replace("_", "-") for name, _ in req.headers]
    req.headers = [(name, value) for name, value in req.headers if name.upper().replace("_", "-") != marker]
    repeated = sorted({name for name in names if names.count(name) > 1 and name != marker})
    if repeated:
        req.headers.append((marker, ",".join(repeated)))


def repeated_headers() -> set[str]:
    """Lower-case names of the headers the server saw more than once (known only under `idemdash serve`)."""
    return {name.lower() for name in split_list(request.headers.get(REPEATED_HEADERS, ""))}
