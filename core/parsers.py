"""The parsers of settings: each turns an environment variable's text into a value, or raises saying what it wants.
Those of times (durations, schedules, time zones) are in ``core/time_parsers.py``."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable


def boolean(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected a boolean (1/0, true/false), got {raw!r}")


def identifier(raw: str) -> str:
    # Identifiers are quoted with psycopg.sql.Identifier anyway; this only
    # rejects values that are certainly typos (empty, whitespace, too long).
    if not raw or raw != raw.strip() or len(raw) > 63:
        raise ValueError(f"expected a PostgreSQL identifier of 1-63 characters, got {raw!r}")
    if "%" in raw:
        raise ValueError(f"identifiers containing '%' are not supported, got {raw!r}")
    return raw


def _whole_number(raw: str, expected: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"expected {expected}, got {raw!r}") from None


def positive_int(raw: str) -> int:
    value = _whole_number(raw, "a positive integer")
    if value <= 0:
        raise ValueError(f"expected a positive integer, got {raw!r}")
    return value


def choice(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {raw!r}")
        return value

    return parse


def networks(raw: str) -> str:
    """Comma-separated addresses or CIDR networks; kept as text, parsed again where used."""
    for part in raw.split(","):
        if part.strip():
            try:
                ipaddress.ip_network(part.strip(), strict=False)
            except ValueError:
                raise ValueError(
                    f"expected addresses or CIDR networks separated by commas, got {part.strip()!r}"
                ) from None
    return raw.strip()


_TOKEN = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")


def header_name(raw: str) -> str:
    value = raw.strip()
    if not _TOKEN.match(value):
        raise ValueError(f"expected an HTTP header name such as X-Forwarded-User, got {raw!r}")
    return value


def names(raw: str) -> str:
    """A non-empty comma-separated list of names (group names)."""
    if not any(part.strip() for part in raw.split(",")):
        raise ValueError(f"expected one or more names separated by commas, got {raw!r}")
    return raw.strip()


def action_names(raw: str) -> str:
    """A comma-separated list of action names (lower case, digits and '-'), possibly empty: each once, as
    ``a,b``."""
    names = tuple(dict.fromkeys(part.strip().lower() for part in raw.split(",") if part.strip()))
    for name in names:
        if not re.fullmatch(r"[a-z][a-z0-9-]{0,62}", name):
            raise ValueError(f"expected action names separated by commas (such as release-dead-node), got {name!r}")
    return ",".join(names)


def split_list(raw: str) -> list[str]:
    return [part.strip() for part in raw.split(",") if part.strip()]


def non_negative_int(raw: str) -> int:
    value = _whole_number(raw, "0 or a positive integer")
    if value < 0:
        raise ValueError(f"expected 0 or a positive integer, got {raw!r}")
    return value


# IDEMDASH_ENVIRONMENT's colours: classes in idemdash.css (the Content-Security-Policy allows no inline style)
COLOURS = ("red", "orange", "yellow", "green", "blue", "purple", "grey")
_DEFAULT_COLOUR = (
    ({"production", "prod", "live"}, "red"),
    ({"staging", "stage", "preprod", "pre-production", "uat", "acceptance"}, "orange"),
    ({"development", "dev", "local", "test", "testing", "demo", "sandbox"}, "green"),
)
_ENV_NAME = re.compile(r"^[\w][\w .+/-]{0,39}$")


def environment(raw: str) -> str:
    """'' (none), or 'name:colour': the colour given, else red for production, orange for staging, green for
    development and test, blue otherwise."""
    value = raw.strip()
    if not value:
        return ""
    name, _, colour = value.partition(":")
    name, colour = name.strip(), colour.strip().lower()
    if not _ENV_NAME.match(name):
        raise ValueError(
            f"expected a name of 1-40 letters, digits, spaces or . + / - (then optionally :colour), got {raw!r}"
        )
    if colour and colour not in COLOURS:
        raise ValueError(f"expected a colour out of {', '.join(COLOURS)} after the ':', got {colour!r}")
    if not colour:
        colour = next((c for names, c in _DEFAULT_COLOUR if name.lower() in names), "blue")
    return f"{name}:{colour}"


def split_environment(value: str) -> tuple[str, str] | None:
    """(name, colour) of IDEMDASH_ENVIRONMENT (parsed or as given, e.g. in a test's settings), or None when unset."""
    value = environment(value)
    if not value:
        return None
    name, _, colour = value.rpartition(":")
    return name, colour


_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*\.?$")


def bind(raw: str) -> str:
    """Where gunicorn listens: HOST:PORT, [IPv6]:PORT, unix:PATH or fd://N."""
    value = raw.strip()
    expected = f"expected HOST:PORT (127.0.0.1:8000, 0.0.0.0:8000, [::1]:8000), unix:PATH or fd://N, got {raw!r}"
    if value.startswith("unix:"):
        if len(value) == len("unix:"):
            raise ValueError(expected)
        return value
    if value.startswith("fd://"):
        if not value[len("fd://") :].isdigit():
            raise ValueError(expected)
        return value
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        if not rest.startswith(":"):
            raise ValueError(expected)
        port = rest[1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{host!r} is not an IPv6 address; {expected}") from None
    else:
        host, sep, port = value.rpartition(":")
        if not sep or ":" in host:
            raise ValueError(expected)
        if host and not _HOSTNAME.match(host):
            raise ValueError(f"{host!r} is not a host name or address; {expected}")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"the port must be a number from 1 to 65535; {expected}")
    return value


def latency_budget(raw: str) -> float:
    """How much slower than idle a purge may make an application commit: a multiple from 1.1 (a trailing ``x`` is
    allowed), or ``off`` (0.0: the fixed duty cycle alone paces the purge)."""
    text = raw.strip().lower().removesuffix("x").strip()
    if text in ("off", "0", "none"):
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected a multiple of the idle commit time such as 1.5, or off, got {raw!r}") from None
    if not 1.1 <= value <= 100:
        raise ValueError(f"expected a multiple from 1.1 to 100 (or off), got {raw!r}")
    return value


def percent(raw: str) -> int:
    """A whole percentage from 1 to 100 (a trailing ``%`` is allowed)."""
    text = raw.strip().removesuffix("%").strip()
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"expected a percentage from 1 to 100, got {raw!r}") from None
    if not 1 <= value <= 100:
        raise ValueError(f"expected a percentage from 1 to 100, got {raw!r}")
    return value
