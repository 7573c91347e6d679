"""The parsers of settings that are times: durations (``90s``, ``24h``), purge schedules (a crontab line, ``every
<duration>``, ``off``) and time zones (an IANA name or ``local``); each turns an environment variable's text into a
value, or raises saying what it wants."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import timezone
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from apscheduler.triggers.cron import CronTrigger

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
