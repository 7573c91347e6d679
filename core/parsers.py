"""The parsers of settings: each turns an environment variable's text into a value, or raises saying what it wants."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from datetime import timezone
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from apscheduler.triggers.cron import CronTrigger


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


MAX_DURATION_LENGTH = 64  # longer is refused before any pattern: two '\s*' side by side once backtracked quadratically
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(?:\s*(s|sec|m|min|h|d))?", re.IGNORECASE)
_UNIT_SECONDS = {None: 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_duration(raw: str) -> float:
    """Seconds from '90', '90s', '15m', '2h' or '1d' (at most 64 characters, spaces stripped); else ValueError."""
    match = _DURATION.fullmatch(raw.strip()) if len(raw) <= MAX_DURATION_LENGTH else None
    if not match:
        raise ValueError(f"not a duration (at most {MAX_DURATION_LENGTH} characters): {raw[:MAX_DURATION_LENGTH]!r}")
    unit = match.group(2).lower() if match.group(2) else None
    return float(match.group(1)) * _UNIT_SECONDS[unit]


def positive_duration(raw: str) -> int:
    try:
        seconds = int(parse_duration(raw))
    except ValueError:
        raise ValueError(f"expected a duration such as 24h, 90m, 2d or a number of seconds, got {raw!r}") from None
    if seconds <= 0:
        raise ValueError(f"expected a duration longer than zero, got {raw!r}")
    return seconds


def non_negative_int(raw: str) -> int:
    value = _whole_number(raw, "0 or a positive integer")
    if value < 0:
        raise ValueError(f"expected 0 or a positive integer, got {raw!r}")
    return value


def crontab(raw: str) -> str:
    """A five-field crontab line (minute hour day month weekday, UTC), or ``off``.

    Weekdays must be names (``mon-fri``, ``sat,sun``): APScheduler 3 numbers them from Monday = 0,
    crontab from Sunday = 0, so a number would silently mean another day.
    """
    value = " ".join(raw.split())
    if value.lower() == "off":
        return "off"
    try:
        fields = value.split(" ")
        if len(fields) == 5 and any(c.isdigit() for c in fields[4]):
            raise ValueError(f"write weekdays as names (mon-fri, sat,sun), not {fields[4]!r}")
        CronTrigger.from_crontab(value, timezone=timezone.utc)  # type: ignore[no-untyped-call]  # APScheduler 3 is untyped
    except ValueError as exc:
        raise ValueError(f"expected a crontab line such as '*/15 * * * *' or 'off', got {raw!r} ({exc})") from None
    return value


def schedule(raw: str) -> str:
    """A purge schedule: a crontab line (``crontab``), ``off``, or ``every <duration>`` (``every 90s``, ``every 6h``):
    fire times at whole multiples of the duration since 2000-01-01 UTC, the same in every scheduler process."""
    value = " ".join(raw.split())
    if value.lower().startswith("every "):
        try:
            seconds = parse_duration(value[6:])
        except ValueError:
            seconds = 0
        if seconds < 1 or seconds != int(seconds):
            raise ValueError(
                f"expected a crontab line, or 'every' and a whole number of seconds of at least 1 "
                f"(every 90s, every 6h), got {raw!r}"
            )
        return f"every {int(seconds)}s"
    return crontab(raw)


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


LOCAL_ZONE = "local"


def zone(raw: str) -> str:
    """An IANA time zone name (``Europe/Berlin``, ``UTC``) or ``local``, the zone of the machine idemdash runs on."""
    value = raw.strip()
    if value.lower() == LOCAL_ZONE:
        return LOCAL_ZONE
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"expected an IANA time zone name (Europe/Berlin, UTC) or 'local', got {raw!r}") from None
    return value


def zone_name(value: str, environ: Mapping[str, str] | None = None) -> str:
    """The IANA name PostgreSQL is given for ``value`` (see ``zone``): ``local`` is this machine's zone, from ``TZ``,
    then /etc/timezone, then the /etc/localtime link; UTC when none names a zone."""
    if value != LOCAL_ZONE:
        return value
    return _local_zone((os.environ if environ is None else environ).get("TZ", ""))


@lru_cache(maxsize=8)
def _local_zone(tz: str) -> str:
    candidates = [tz.lstrip(":")]
    try:
        with open("/etc/timezone", encoding="utf-8") as handle:
            candidates.append(handle.read().strip())
    except OSError:
        pass
    link = os.path.realpath("/etc/localtime")
    if "zoneinfo/" in link:
        candidates.append(link.split("zoneinfo/", 1)[1])
    known = available_timezones()
    return next((c for c in candidates if c in known), "UTC")
