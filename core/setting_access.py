"""The settings that say who may use the dashboard: the session's key, the sign-in mode, the proxy's headers and
addresses, which groups operate, and who may connect at all."""

from __future__ import annotations

from dataclasses import dataclass

from idemdash.core import parsers
from idemdash.core.setting import declare


@dataclass(frozen=True)
class AccessSettings:
    secret_key: str = declare(
        "",
        str,
        "Flask secret key (signs the session cookie that carries the CSRF token); the same value for every worker "
        "and replica. Unset: "
        "`idemdash serve` makes one for all its workers (sessions end when it restarts), a gunicorn started by "
        "hand refuses to start, and a single process uses a random key of its own.",
    )
    auth: str = declare(
        "none",
        parsers.choice("none", "basic", "proxy"),
        "Who may use the dashboard: `none` (everyone is an operator; the demo and localhost only), "
        "`basic` (HTTP Basic with `IDEMDASH_USERS_FILE`) or `proxy` (user and groups headers from an "
        "SSO proxy at `IDEMDASH_PROXY_TRUSTED`). See docs/security.md.",
    )
    users_file: str = declare(
        "",
        str,
        "With `IDEMDASH_AUTH=basic`: the file of users, one `name:role:hash` a line (role `viewer` or "
        "`operator`; hash from `idemdash hash-password`). Read at startup; a missing or malformed file stops the "
        "start with the line at fault.",
    )
    proxy_user_header: str = declare(
        "X-Forwarded-User",
        parsers.header_name,
        "With `IDEMDASH_AUTH=proxy`: the header carrying the signed-in user's name (recorded in the audit log). "
        "Sent more than once: 400 (under `idemdash serve`).",
    )
    proxy_groups_header: str = declare(
        "X-Forwarded-Groups",
        parsers.header_name,
        "With `IDEMDASH_AUTH=proxy`: the header carrying the user's groups, comma separated, in one header "
        "(sent more than once: 400 under `idemdash serve`, since a proxy that adds its header to the client's "
        "would let the client add a group).",
    )
    proxy_trusted: str = declare(
        "127.0.0.1,::1",
        parsers.networks,
        "Addresses or CIDR networks of the proxy, comma separated. User, groups and `X-Forwarded-Proto` "
        "headers are believed only from these; other clients get 401 in proxy mode.",
    )
    operator_groups: str = declare(
        "idemdash-operators",
        parsers.names,
        "With `IDEMDASH_AUTH=proxy`: groups (comma separated, exact names) whose members are operators; "
        "everyone else is a viewer.",
    )
    allow_unauthenticated: bool = declare(
        False,
        parsers.boolean,
        "`1` lets `IDEMDASH_AUTH=none` answer requests for any `Host` and from any address (otherwise: localhost "
        "only, which also stops DNS rebinding), and lets `idemdash serve` and `idemdash demo --host` listen on a "
        "non-loopback address. Only when something in front already restricts who can connect.",
    )
    session_cookie_secure: bool = declare(
        False,
        parsers.boolean,
        "`1` always marks the session cookie (it holds the CSRF token) `Secure`. Otherwise it is `Secure` "
        "when the request came over HTTPS (directly, or per `X-Forwarded-Proto` from a trusted proxy).",
    )
