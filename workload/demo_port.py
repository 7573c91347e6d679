"""The address the demo listens on: a taken one is refused before anything starts (PostgreSQL, backfill,
scheduler), with a port that was free when checked."""

from __future__ import annotations

import socket

import click

# how far above a taken port the demo looks for a free one to suggest
PORT_SEARCH = 50


def _bindable(host: str, port: int) -> OSError | None:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the web server will
            probe.bind(address)
    except OSError as exc:
        return exc
    return None


def free_port_near(host: str, port: int) -> int | None:
    """The first port above ``port`` that this machine lets us bind right now (checked by binding it)."""
    for candidate in range(port + 1, min(port + PORT_SEARCH, 65535) + 1):
        if _bindable(host, candidate) is None:
            return candidate
    return None


def check_port(host: str, port: int) -> None:
    """Refuse a taken address before starting anything (PostgreSQL, backfill, scheduler), not after, and suggest a
    port that was free when checked."""
    problem = _bindable(host, port)
    if problem is None:
        return
    free = free_port_near(host, port)
    advice = (
        f"pick another port: idemdash demo --port {free} (free just now)"
        if free is not None
        else f"pick a free port with --port (none of {port + 1}-{port + PORT_SEARCH} is)"
    )
    raise click.ClickException(
        f"cannot listen on {host}:{port} ({problem.strerror or problem}): another program (an idemdash demo still "
        f"running?) uses it. Stop it, or {advice}"
    )
