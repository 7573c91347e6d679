"""Types the models share: text without NUL, durations, moments, cursors, and the error body."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, WithJsonSchema

from idemdash.core.time_parsers import MAX_DURATION_LENGTH, parse_duration

# what every text field refuses: a NUL cannot be stored in a PostgreSQL text column
NO_NUL = r"^[^\x00]*$"
# a duration as the server reads it (core/parsers.py): a number of seconds, or with a unit s, sec, m, min, h, d, in
# at most MAX_DURATION_LENGTH characters (the spaces between the number and its unit belong to the unit, so that no
# two '\s*' stand side by side: a pattern that backtracks quadratically on long spaces in a validator's hands)
DURATION_PATTERN = r"^\s*[0-9]+(\.[0-9]+)?(\s*([sS]|[sS][eE][cC]|[mM]|[mM][iI][nN]|[hH]|[dD]))?\s*$"
# a duration past this is the same as this for every filter that takes one (nothing is older)
FOREVER = 100 * 366 * 86400.0


# what a person's text must hold besides: something other than spaces (it is stored with those trimmed)
BLANK = " \t\n\r"
SAYS_SOMETHING = r"^[^\x00]*[^ \t\n\r\x00][^\x00]*$"


def _text(max_length: int, pattern: str = NO_NUL) -> Any:
    return Annotated[str, Field(min_length=1, max_length=max_length, pattern=pattern)]


def _trimmed(value: str) -> str:
    return value.strip(BLANK)


Name = _text(200)  # a scope, a worker, an actor, an event type, a consumer
Key = _text(100_000)  # an idempotency key
# why: for the audit log and the next person on call (trimmed; spaces alone are not a reason)
Reason = Annotated[str, Field(min_length=1, max_length=2000, pattern=SAYS_SOMETHING), AfterValidator(_trimmed)]
NoteText = Annotated[str, Field(min_length=1, max_length=4000, pattern=SAYS_SOMETHING), AfterValidator(_trimmed)]
SearchText = _text(2000)


def _duration_text(value: str) -> float | None:
    """Seconds of a duration string, or None when it is not one (the length is checked before any pattern)."""
    if len(value) > MAX_DURATION_LENGTH:
        return None
    try:
        return parse_duration(value)
    except ValueError:
        return None


def _seconds(value: Any) -> float:
    seconds: float | None
    if isinstance(value, bool):
        raise ValueError("must be a duration such as 90s, 15m, 2h or 1d")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _duration_text(value)
    else:
        seconds = None
    if seconds is None:
        raise ValueError(f"must be a duration such as 90s, 15m, 2h or 1d (at most {MAX_DURATION_LENGTH} characters)")
    if math.isnan(seconds) or seconds < 0:
        raise ValueError("must be a duration such as 90s, 15m, 2h or 1d")
    return min(seconds, FOREVER)


# a duration in the query string: "90s", "15m", "2h", "1d" (a bare number is seconds); read as seconds
Duration = Annotated[
    float,
    BeforeValidator(_seconds),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": DURATION_PATTERN,
            "maxLength": MAX_DURATION_LENGTH,
            "examples": ["90s", "15m", "2h", "1d"],
            "description": "A duration: a number of seconds, or with a unit s, m, h or d (90s, 15m, 2h, 1d).",
        }
    ),
]
# in a JSON body a duration may also be a number of seconds
BodyDuration = Annotated[
    float,
    BeforeValidator(_seconds),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": DURATION_PATTERN, "maxLength": MAX_DURATION_LENGTH},
                {"type": "number", "minimum": 0},
            ],
            "examples": ["30m", "4h", 3600],
            "description": "A duration: seconds as a number, or a string such as 90s, 15m, 2h or 1d.",
        }
    ),
]


def _moment(value: Any) -> datetime:
    """A time (ISO 8601; UTC unless it names a zone), or a duration meaning that long ago."""
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    if not isinstance(value, str):
        raise ValueError("must be a time such as 2026-11-21T04:30:00Z, or how long ago, such as 90m, 24h or 7d")
    if _duration_text(value) is not None:
        return datetime.now(timezone.utc) - timedelta(seconds=_seconds(value))
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(
            "must be a time such as 2026-11-21T04:30:00Z or 2026-11-21 04:30 (UTC unless it names a "
            "zone), or how long ago, such as 90m, 24h or 7d"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


# a point in time in the query string: ISO 8601 (UTC unless it names a zone) or how long ago (24h)
Moment = Annotated[
    datetime,
    BeforeValidator(_moment),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date-time"},
                {"type": "string", "pattern": DURATION_PATTERN, "maxLength": MAX_DURATION_LENGTH},
            ],
            "examples": ["2026-11-21T04:30:00Z", "24h"],
            "description": "A time (ISO 8601; UTC unless it names a zone), or how long ago: 90m, 24h, 7d.",
        }
    ),
]


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("must include a time zone, e.g. 2026-11-21T04:30:00+00:00")
    return value


# a time in a JSON body: RFC 3339, with its zone
Timestamp = Annotated[datetime, AfterValidator(_aware), WithJsonSchema({"type": "string", "format": "date-time"})]

CURSOR_FORMAT = "idemdash-cursor"


CURSOR_TEXT = Field(max_length=8192, pattern=r"^[A-Za-z0-9_-]+$")


def cursor_of(listing: str) -> WithJsonSchema:
    """How a list's cursor is documented: the next_cursor (or prev_cursor) of another page of the same list, passed
    back unchanged. Its format names the list (``idemdash-cursor-keys``): a cursor of another list is refused.
    A list's cursor type is ``Annotated[str, CURSOR_TEXT, cursor_of("keys")]``."""
    return WithJsonSchema(
        {
            "type": "string",
            "format": f"{CURSOR_FORMAT}-{listing}",
            "minLength": 1,
            "maxLength": 8192,
            "description": f"Opaque: the next_cursor (or prev_cursor) of another page of this list "
            f"({listing}), unchanged (never empty: the first page has none).",
        }
    )


Limit = Annotated[int, Field(ge=1, le=500, description="Rows per page.")]


def _whole(value: Any) -> Any:
    # JSON Schema counts 457.0 as an integer: a body's whole number may be written so
    return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 2**63 else value


# whole numbers in a JSON body (read strictly: a string or a boolean is not one, 457.0 is); the bounds come before
# the conversion, or the document would carry them as pydantic's own words (ge, le) instead of minimum, maximum
AttemptCount = Annotated[int, Field(ge=1, le=2_000_000_000), BeforeValidator(_whole)]
OutboxAttemptCount = Annotated[int, Field(ge=0, le=2_000_000_000), BeforeValidator(_whole)]
Count = Annotated[int, Field(ge=0, le=2**62), BeforeValidator(_whole)]
# a whole number a query string or body carries as an id or a count
PositiveInt = Annotated[int, Field(ge=1, le=2**62)]
# the JSON encoding of a UUID, a Decimal and a timedelta (seconds), as every answer writes them
UuidText = Annotated[
    Any, PlainSerializer(lambda v: None if v is None else str(v)), WithJsonSchema({"type": "string", "format": "uuid"})
]


class Query(BaseModel):
    """A query string: unknown parameters belong to other operations and are not this model's."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class Body(BaseModel):
    """A JSON body: every field documented, anything else refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Answer(BaseModel):
    """An answer: built from the server's rows, written as they are."""

    model_config = ConfigDict(from_attributes=True, frozen=True)


class FieldError(Answer):
    field: str = Field(description="The parameter or body field, dotted for nested ones (filter.overdue).")
    message: str


def _error_example(schema: dict[str, Any], model: type) -> None:
    if model is Error:  # not its subclasses: a 409's body has fields of its own
        schema["examples"] = [
            {
                "error": "min_attempts must be at least 1 (got 0)",
                "fields": [{"field": "min_attempts", "message": "must be at least 1 (got 0)"}],
            }
        ]


class Error(Answer):
    """Every error answer: what went wrong and what to do."""

    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        extra="allow",
        json_schema_extra=lambda schema, model: _error_example(schema, model),
    )
    error: str = Field(description="What went wrong and what to do, in one message.")
    fields: list[FieldError] | None = Field(None, description="A 400 from a request's model: each field in error.")


Window = Literal["1h", "24h", "7d"]

# a field's pattern, said as what to send (dashboard/contract.py words validation errors with it)
PATTERN_MESSAGES = {
    NO_NUL: "must not contain a NUL character",
    SAYS_SOMETHING: "is required: it must say something (not only spaces), without NUL characters",
    r"^[A-Za-z0-9_-]+$": "is not valid: use the next_cursor value from the previous page",
}

MAX_HOLD_SECONDS = 30 * 86400
HOLD_FORMAT = "idemdash-hold"


def _hold(value: Any) -> float:
    seconds = _seconds(value)
    if not 60 <= seconds <= MAX_HOLD_SECONDS:
        raise ValueError("must be between 1 minute and 30 days")
    return seconds


# how long a key stays held for review: 1 minute to 30 days, as seconds or a duration string
HoldFor = Annotated[
    float,
    BeforeValidator(_hold),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": HOLD_FORMAT, "pattern": DURATION_PATTERN},
                {"type": "number", "minimum": 60, "maximum": MAX_HOLD_SECONDS},
            ],
            "examples": ["4h", "2d", 3600],
            "description": "How long the key is held: 1 minute to 30 days, as seconds or a duration such as 30m, 4h, "
            "2d (a string in the idemdash-hold format: the same duration syntax, at most 64 characters, "
            "between 60 s and 30 d).",
        }
    ),
]


class Precomputed(Answer):
    """A section of an answer that the scheduler's rollup job computed (dashboard/rollups.py), not read now."""

    computed_at: datetime = Field(description="When the rollup job computed it.")
    computed_ms: float = Field(description="How long computing it took, in milliseconds.")


def require_to_confirm(body: Any) -> None:
    """A bulk body (keys' or outbox rows'): a confirmation, unlike a preview, names the preview's as_of and a reason."""
    if not body.preview:
        missing = [name for name in ("reason", "as_of") if getattr(body, name) is None]
        if missing:
            raise ValueError(
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} required to confirm: "
                'preview first ("preview": true), then confirm with the as_of it returns and a reason'
            )
