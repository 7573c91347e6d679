"""Query-string parsing shared by pages and their JSON twins. Bad input is a 400 that says what to send."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from flask import abort, request

from idemdash.core.settings import parse_duration


def text(name: str, max_length: int = 2000) -> str | None:
    """An optional free-text parameter; empty means absent."""
    value = request.args.get(name, "")
    if value == "":
        return None
    if len(value) > max_length:
        abort(400, f"{name} is longer than {max_length} characters")
    if "\x00" in value:
        abort(400, f"{name} contains a NUL character")
    return value


def choice(name: str, choices: tuple[str, ...], default: str) -> str:
    value = request.args.get(name, "") or default
    if value not in choices:
        abort(400, f"{name} must be one of {', '.join(choices)} (got {value!r})")
    return value


def integer(name: str, *, minimum: int, maximum: int, default: int | None = None) -> int | None:
    raw = request.args.get(name, "").strip()
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        abort(400, f"{name} must be a whole number between {minimum} and {maximum} (got {raw!r})")
    if not minimum <= value <= maximum:
        abort(400, f"{name} must be between {minimum} and {maximum} (got {value})")
    return value


def duration(name: str, *, maximum_seconds: float = 366 * 86400) -> float | None:
    """A duration query parameter in seconds; empty means absent."""
    raw = request.args.get(name, "").strip()
    if raw == "":
        return None
    try:
        seconds = parse_duration(raw)
    except ValueError:
        abort(400, f"{name} must be a duration such as 90s, 15m, 2h or 1d (got {raw!r})")
    if seconds > maximum_seconds:
        abort(400, f"{name} must be at most {int(maximum_seconds // 86400)} days")
    return seconds


def cursor() -> str | None:
    value = request.args.get("cursor", "")
    if value and (len(value) > 8192 or not re.fullmatch(r"[A-Za-z0-9_-]+", value)):
        abort(400, "cursor is not valid: use the next_cursor value from the previous page")
    return value or None


def moment(name: str) -> datetime | None:
    """A point in time: ISO 8601 (a time without a zone is UTC), or a duration meaning that long ago (``24h``)."""
    raw = request.args.get(name, "").strip()
    if raw == "":
        return None
    try:
        seconds = parse_duration(raw)
    except ValueError:
        seconds = None
    if seconds is not None:
        if seconds > 100 * 366 * 86400:
            abort(400, f"{name} must be at most 100 years ago (got {raw!r})")
        return datetime.now(timezone.utc) - timedelta(seconds=seconds)
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        abort(400, f"{name} must be a time such as 2026-11-21 04:30 or 2026-11-21T04:30:00+01:00 (UTC unless it "
                   f"names a zone), or how long ago, such as 90m, 24h or 7d (got {raw!r})")
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
