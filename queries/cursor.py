"""Opaque keyset-pagination cursors: the sort values of the last row shown.

A cursor is base64url(JSON list). Datetimes travel as ISO 8601 strings with
their zone; PostgreSQL parses them back when they are bound as parameters.
Anything that does not decode is the caller's bad input (ValueError → 400).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a keyset-paginated list."""

    items: list[T]
    next_cursor: str | None
    prev_cursor: str | None = None  # the page before this one, where a list can go back


def encode(values: list[Any]) -> str:
    def plain(v: Any) -> Any:
        return (
            v.isoformat() if isinstance(v, datetime) else v if v is None or isinstance(v, (str, int, float)) else str(v)
        )

    raw = json.dumps([plain(v) for v in values], separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str, arity: int) -> list[Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw.decode())
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ValueError("cursor is not valid: use the next_cursor value from the previous page") from None
    if (
        not isinstance(values, list)
        or len(values) != arity
        or not all(v is None or isinstance(v, (str, int, float)) for v in values)
    ):
        raise ValueError("cursor is not valid: use the next_cursor value from the previous page")
    return values


def parse_time(value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError("cursor is not valid: use the next_cursor value from the previous page") from None
    if moment.tzinfo is None:
        raise ValueError("cursor is not valid: use the next_cursor value from the previous page")
    return moment
