"""What an action's request body (JSON, or a form) may hold, each field checked with a message that says what to
send; ``ActionError`` carries the status an action answers with (400 bad input, 404, 409 state changed)."""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from flask import Response, jsonify

from idemdash.core.settings import parse_duration

MAX_REASON = 2000
MAX_HOLD = timedelta(days=30)


class ActionError(Exception):
    def __init__(self, status: int, message: str, key: Any = None, *, fields: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.key = key
        self.fields = fields  # a 400 from a request model: each field and what to send

    def json(self, current: str = "key") -> tuple[Response, int]:
        """The JSON API's answer: ``{"error"}`` with the status, and the row as it is now under ``current``."""
        body: dict[str, Any] = {"error": self.message}
        if self.fields:
            body["fields"] = self.fields
        if self.key is not None:
            body[current] = self.key
        return jsonify(body), self.status


def text(data: Mapping[str, Any], name: str, *, required: bool = False, max_length: int = 2000) -> str | None:
    value = data.get(name)
    if value is None or value == "":
        if required:
            raise ActionError(400, f"{name} is required")
        return None
    if not isinstance(value, str):
        raise ActionError(400, f"{name} must be a string")
    if len(value) > max_length or "\x00" in value:
        raise ActionError(400, f"{name} must be at most {max_length} characters, without NUL")
    return value


def reason(data: Mapping[str, Any]) -> str:
    reason = (text(data, "reason", max_length=MAX_REASON) or "").strip()
    if not reason:
        raise ActionError(400, "a reason is required: say why, for the audit log and the next person on call")
    return reason


def whole_number(data: Mapping[str, Any], name: str) -> int | None:
    value = data.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ActionError(400, f"{name} must be a whole number")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ActionError(400, f"{name} must be a whole number") from None
    if not 1 <= number <= 2_000_000_000:
        raise ActionError(400, f"{name} must be between 1 and 2000000000")
    return number


def moment(data: Mapping[str, Any], name: str) -> datetime | None:
    value = data.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ActionError(400, f"{name} must be an ISO 8601 time with a zone")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ActionError(400, f"{name} must be an ISO 8601 time with a zone, e.g. 2026-11-21T04:30:00+00:00") from None
    if moment.tzinfo is None:
        raise ActionError(400, f"{name} must include a time zone")
    return moment


def hold_seconds(data: Mapping[str, Any]) -> float:
    value = data.get("hold_for")
    if value is None or value == "":
        return 86400.0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = parse_duration(value)
        except ValueError:
            raise ActionError(400, "hold_for must be seconds or a duration such as 30m, 4h or 2d") from None
    else:
        raise ActionError(400, "hold_for must be seconds or a duration such as 30m, 4h or 2d")
    if not 60 <= seconds <= MAX_HOLD.total_seconds():
        raise ActionError(400, "hold_for must be between 1 minute and 30 days")
    return seconds
