"""How durations, times and JSON read on pages, in the CLI and in log lines."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from idemdash.core.profiles.shape import EPOCH_MS, LOCAL_TIMESTAMP, TIMESTAMPTZ, UTC_TIMESTAMP


def duration(seconds: float | int | timedelta | None) -> str:
    """A short human duration: 45 s, 3 min 20 s, 2 h 5 min, 3 d 4 h."""
    if seconds is None:
        return "-"
    if isinstance(seconds, timedelta):
        seconds = seconds.total_seconds()
    total = int(abs(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        text = f"{days} d {hours} h" if hours else f"{days} d"
    elif hours:
        text = f"{hours} h {minutes} min" if minutes else f"{hours} h"
    elif minutes:
        text = f"{minutes} min {secs} s" if secs else f"{minutes} min"
    else:
        text = f"{secs} s"
    return ("-" if seconds < 0 else "") + text


def ago(moment: datetime | None) -> str:
    if moment is None:
        return "never"
    delta = (datetime.now(moment.tzinfo) - moment).total_seconds()
    if delta < 0:
        return "in " + duration(-delta)
    return duration(delta) + " ago"


UTC_FORMAT = "%Y-%m-%d %H:%M:%S"


def utc(moment: datetime, fmt: str = UTC_FORMAT) -> str:
    """An absolute time in UTC, with its zone: pages show every time in UTC (a browser may switch to local)."""
    moment = moment.astimezone(timezone.utc)
    if fmt == UTC_FORMAT and moment.year >= 1000:
        # strftime's text in half its time (a list writes one for every time of every row): 2026-11-28 09:12:01
        return moment.isoformat(" ", "seconds")[:19] + " UTC"
    return moment.strftime(fmt) + " UTC"


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def plural(count: int, noun: str, plural_noun: str | None = None) -> str:
    """``1 attempt``, ``3 attempts``, ``1,234 batches``: the count with its noun in the right number."""
    word = (
        noun if count == 1 else (plural_noun or (noun + "es" if noun.endswith(("s", "ch", "sh", "x")) else noun + "s"))
    )
    return f"{count:,} {word}"


_FRACTION = re.compile(r"\.(\d{1,6})(?=[+-]\d\d:\d\d$|Z$|$)")


def library_moment(value: Any, unit: str, zone: str) -> datetime | None:
    """A time a library stored, as an aware datetime, read by its column's ``unit`` (``core.profiles.shape``: a
    timestamptz, a timestamp holding UTC or the library's local time in ``zone``, epoch milliseconds) from the value
    a row's JSON holds; None when it is none of these (shown as stored)."""
    try:
        if unit == EPOCH_MS:
            readable = isinstance(value, (int, str)) and not isinstance(value, bool)
            return datetime.fromtimestamp(int(value) / 1000, timezone.utc) if readable else None
        if not isinstance(value, str):
            return None
        # PostgreSQL's JSON trims trailing zeros of the fraction, which Python 3.10's fromisoformat does not read
        moment = datetime.fromisoformat(_FRACTION.sub(lambda m: "." + m.group(1).ljust(6, "0"), value))
    except (ValueError, OverflowError, OSError):
        return None
    if unit == TIMESTAMPTZ:
        return moment if moment.tzinfo else None
    if moment.tzinfo is not None:
        return moment
    if unit == UTC_TIMESTAMP:
        return moment.replace(tzinfo=timezone.utc)
    if unit == LOCAL_TIMESTAMP:
        return moment.replace(tzinfo=ZoneInfo(zone))
    return None
