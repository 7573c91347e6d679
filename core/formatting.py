"""How durations, times and JSON read on pages, in the CLI and in log lines."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any


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


def utc(moment: datetime, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    """An absolute time in UTC, with its zone: pages show every time in UTC (a browser may switch to local)."""
    return moment.astimezone(timezone.utc).strftime(fmt) + " UTC"


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def plural(count: int, noun: str, plural_noun: str | None = None) -> str:
    """``1 attempt``, ``3 attempts``, ``1,234 batches``: the count with its noun in the right number."""
    word = noun if count == 1 else (plural_noun or (noun + "es" if noun.endswith(("s", "ch", "sh", "x")) else noun + "s"))
    return f"{count:,} {word}"
