"""A home-grown table described in IDEMDASH_CONFIG instead of a library's module: ``profile = "custom"`` and a
``[databases.<name>.shape.<role>]`` table per role (keys, inbox, outbox) naming the table, its identity, state and
time columns and which state values mean what. It becomes a profile like the built-in ones (named
``custom:<database>``), whose states are the generic conditions of queries/custom_states.sql, so every page, count,
list, purge and metric reads it the same way. Every mistake in a shape is one line of the ConfigError; where its
tables are found, ``custom_fit.py`` says which columns do not fit it (queries/catalog.py).

    [databases.payments.shape.outbox]
    table = "events_out"
    identity = ["id"]
    state = "status"
    time = "created_at"             # when a row was written: lists and "stuck" are by it
    time_unit = "timestamptz"       # or "utc timestamp" (a timestamp written from a UTC clock), "epoch ms"
    pending = ["NEW", "RETRY"]
    in_progress = ["SENDING"]
    done = ["SENT"]
    failed = ["DEAD"]
    stuck_after = "15m"             # in progress longer than this by `time`; or lease = "locked_until"
    done_time = "sent_at"           # when a row was done: with it, done rows older than the retention are purged
    payload = "body"
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from idemdash.core.profiles.shape import (
    ANY_TIMESTAMP,
    DONE,
    EPOCH_MS,
    EXACT,
    FAILED,
    IN_PROGRESS,
    INTEGER,
    PENDING,
    PURGEABLE,
    STUCK,
    TEXT,
    TIMESTAMPTZ,
    TS,
    TSTZ,
    UTC_TIMESTAMP,
    UUID,
    Column,
    Profile,
    State,
    Table,
    Time,
)
from idemdash.core.time_parsers import positive_duration

NAME = "custom"
ROLES = ("keys", "inbox", "outbox")
UNITS = {"timestamptz": TIMESTAMPTZ, "utc timestamp": UTC_TIMESTAMP, "epoch ms": EPOCH_MS}
NUMBERS = INTEGER + ("numeric",)
# the catalog types a time column of each unit may have: a unit read off a column of another type ages every row by
# the zone's offset (a timestamp read as timestamptz) or purges them all at once (seconds read as milliseconds)
UNIT_TYPES = {TIMESTAMPTZ: TSTZ, UTC_TIMESTAMP: TS, EPOCH_MS: NUMBERS}
# identity columns: rows are told apart by them and found again from their JSON values, cast back to the type
IDENTITY_TYPES = TEXT + ("character",) + UUID + NUMBERS + ANY_TIMESTAMP + ("date",)
MEANING_KEYS = {"pending": PENDING, "in_progress": IN_PROGRESS, "done": DONE, "failed": FAILED}
KEYS = {
    "table",
    "identity",
    "state",
    "time",
    "time_unit",
    "stuck_after",
    "lease",
    "done_time",
    "payload",
    *MEANING_KEYS,
}


class ShapeError(ValueError):
    """The mistakes in a custom shape, one line each."""


def custom_profile(database: str, shape: Mapping[str, Any]) -> Profile:
    """The profile a database's ``shape`` table describes; ShapeError listing every mistake in it."""
    mistakes: list[str] = []
    tables, states = [], []
    library = shape.get("library", f"custom tables of {database}")
    if not isinstance(library, str):
        mistakes.append("shape.library: expected text")
    for role, spec in shape.items():
        if role == "library":
            continue
        if role not in ROLES:
            mistakes.append(f"shape.{role}: unknown role; a shape describes {', '.join(ROLES)} tables")
            continue
        if not isinstance(spec, Mapping):
            mistakes.append(f"shape.{role}: expected a table ([databases.{database}.shape.{role}])")
            continue
        table, role_states = _table(role, spec, mistakes)
        if table is not None:
            tables.append(table)
            states.extend(role_states)
    if not tables and not mistakes:
        mistakes.append(f"shape: describes no table; add [databases.{database}.shape.outbox] (or keys, inbox)")
    if mistakes:
        raise ShapeError("\n".join(mistakes))
    return Profile(
        name=f"{NAME}:{database}",
        library=str(library),
        default_schema="public",
        tables=tuple(tables),
        states=tuple(states),
        cleanup="Whatever the application does itself: idemdash purges only rows "
        "in a done state whose done_time is older than the retention.",
        sources=(),
    )


def _table(role: str, spec: Mapping[str, Any], mistakes: list[str]) -> tuple[Table | None, list[State]]:
    where = f"shape.{role}"
    before = len(mistakes)
    for key in sorted(set(spec) - KEYS):
        mistakes.append(f"{where}.{key}: unknown key; a shape table may set {', '.join(sorted(KEYS))}")
    name = _text(spec, "table", where, mistakes, required=True)
    state = _text(spec, "state", where, mistakes, required=True)
    time = _text(spec, "time", where, mistakes, required=True)
    lease = _text(spec, "lease", where, mistakes)
    done_time = _text(spec, "done_time", where, mistakes)
    payload = _text(spec, "payload", where, mistakes)
    identity = spec.get("identity")
    if not (isinstance(identity, list) and identity and all(_is_name(c) for c in identity)):
        mistakes.append(
            f'{where}.identity: expected a list of the columns that tell rows apart, such as ["id"], got {identity!r}'
        )
    unit = UNITS.get(str(spec.get("time_unit", "timestamptz")))
    if unit is None:
        mistakes.append(f"{where}.time_unit: expected one of {', '.join(UNITS)}, got {spec.get('time_unit')!r}")
    values = {}
    for key, meaning in MEANING_KEYS.items():
        given = spec.get(key)
        if given is None:
            continue
        if not (isinstance(given, list) and given and all(isinstance(v, str) for v in given)):
            mistakes.append(f'{where}.{key}: expected a list of state values, such as ["SENT"]')
            continue
        values[meaning] = given
    if not values:
        mistakes.append(f"{where}: name the state values of at least one of {', '.join(MEANING_KEYS)}")
    stuck_after = None
    if "stuck_after" in spec:
        try:
            stuck_after = positive_duration(str(spec["stuck_after"]))
        except ValueError as exc:
            mistakes.append(f"{where}.stuck_after: {exc}")
    if (stuck_after is not None or lease) and IN_PROGRESS not in values:
        mistakes.append(f"{where}: stuck_after and lease say when in-progress rows are stuck; name in_progress values")
    if len(mistakes) > before:
        return None, []
    assert name and state and time and unit and isinstance(identity, list)
    columns = {"state": state, "time": time}
    types: dict[str, tuple[str, ...]] = {c: IDENTITY_TYPES for c in identity}  # each column's accepted types
    for column, accepted in (
        (state, ()),
        (time, UNIT_TYPES[unit]),
        (lease, ANY_TIMESTAMP),
        (done_time, UNIT_TYPES[unit]),
        (payload, ()),
    ):
        if column:
            types.setdefault(column, accepted)
    table = Table(
        role,
        name,
        f"{role}_table",
        tuple(Column(c, t) for c, t in types.items()),
        identity=tuple(identity),
        state=state,
        lease=lease,
        payload=payload,
        times=tuple(Time(c, m, unit, done=m == "done") for c, m in ((time, "written"), (done_time, "done")) if c),
        match=EXACT,
    )
    states = [
        State(
            meaning,
            role,
            "custom_state_values",
            params=(("values", tuple(vals)),),
            columns=tuple(columns.items()),
            order=time,
        )
        for meaning, vals in values.items()
    ]
    if IN_PROGRESS in values and lease:
        states.append(
            State(
                STUCK,
                role,
                "custom_state_lease_ran_out",
                "in progress, its lease run out",
                params=(("values", tuple(values[IN_PROGRESS])),),
                columns=(("state", state), ("lease", lease)),
                order=time,
            )
        )
    elif IN_PROGRESS in values and stuck_after is not None:
        states.append(
            State(
                STUCK,
                role,
                "custom_state_in_progress_since",
                f"in progress for over {stuck_after} s",
                params=(("values", tuple(values[IN_PROGRESS])), ("stale", stuck_after)),
                columns=tuple(columns.items()),
                order=time,
            )
        )
    if DONE in values and done_time:
        block = "custom_state_done_before_epoch_ms" if unit == EPOCH_MS else "custom_state_done_before"
        states.append(
            State(
                PURGEABLE,
                role,
                block,
                "done, and done longer ago than the retention",
                params=(("values", tuple(values[DONE])),),
                columns=(("state", state), ("done_time", done_time)),
                order=done_time,
            )
        )
    return table, states


def _text(spec: Mapping[str, Any], key: str, where: str, mistakes: list[str], *, required: bool = False) -> str | None:
    value = spec.get(key)
    if value is None:
        if required:
            mistakes.append(f"{where}.{key}: required (the column's name)")
        return None
    if not _is_name(value):
        mistakes.append(f"{where}.{key}: expected a column's name, got {value!r}")
        return None
    return cast(str, value)


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and "%" not in value and "\x00" not in value
