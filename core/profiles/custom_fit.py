"""Whether the tables a custom shape (``core/profiles/custom.py``) points at fit it: each column there, of a type
its key and time_unit can read (``misfits``), and an epoch-milliseconds column's values plausible as milliseconds
(``implausible_epoch``). queries/catalog.py asks both of the tables it finds."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone

from idemdash.core.profiles.custom import UNIT_TYPES, UNITS
from idemdash.core.profiles.shape import Table

# an epoch time column's newest values read in its unit must fall between these (else the unit is not the column's)
EARLIEST_PLAUSIBLE = datetime(1990, 1, 1, tzinfo=timezone.utc)
LATEST_PLAUSIBLE_YEARS = 100


def _key_of(table: Table, column: str) -> str:
    """The shape's key that names ``column`` (identity, time, done_time, ...)."""
    keys = {
        "identity": table.identity,
        "state": (table.state,),
        "lease": (table.lease,),
        "payload": (table.payload,),
        **{("time" if t.meaning == "written" else "done_time"): (t.column,) for t in table.times},
    }
    return next((key for key, names in keys.items() if column in names), "table")


def misfits(table: Table, columns: Mapping[str, str]) -> list[str]:
    """Why a custom shape's table (its columns in the database: name -> catalog type) does not fit what the shape
    says: each column missing or of a type its key or its time_unit cannot read, one line each."""
    unit_of = {t.column: t.unit for t in table.times}
    spelled = {unit: name for name, unit in UNITS.items()}
    found = []
    for column in table.columns:
        where = f"shape.{table.role}.{_key_of(table, column.name)}"
        actual = columns.get(column.name)
        if actual is None:
            found.append(f"{where}: {table.name} has no column {column.name!r}")
        elif column.types and actual not in column.types:
            unit = unit_of.get(column.name)
            if unit is None:
                found.append(f"{where}: {table.name}.{column.name} is {actual}, expected {' or '.join(column.types)}")
                continue
            fits = [name for name, u in UNITS.items() if actual in UNIT_TYPES[u]]
            found.append(
                f'{where}: {table.name}.{column.name} is {actual}, but time_unit = "{spelled[unit]}" reads '
                f"{' or '.join(UNIT_TYPES[unit])}"
                + (
                    f': set time_unit = "{fits[0]}" if that is how it is written'
                    if fits
                    else ": point it at a timestamp or epoch-milliseconds column"
                )
            )
    return found


def implausible_epoch(table: Table, column: str, newest: float, now: datetime) -> str | None:
    """Why an epoch-milliseconds column whose newest value (of a sample) is ``newest`` cannot hold milliseconds
    (read so, it is before 1990 or over 100 years ahead: seconds, or microseconds); None when it can."""
    try:
        moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=newest)
    except OverflowError:
        moment = datetime.max.replace(tzinfo=timezone.utc)
    latest = now + timedelta(days=366 * LATEST_PLAUSIBLE_YEARS)
    if EARLIEST_PLAUSIBLE <= moment <= latest:
        return None
    early = moment < EARLIEST_PLAUSIBLE
    when = "before 1990" if early else f"over {LATEST_PLAUSIBLE_YEARS} years ahead"
    return (
        f"shape.{table.role}.{_key_of(table, column)}: {table.name}.{column}'s newest values ({newest:,.0f}) read "
        f"as epoch milliseconds are {moment:%Y-%m-%d}, {when}: the column holds "
        f'{"seconds" if early else "a finer unit (microseconds?)"}, which time_unit = "epoch ms" would misread '
        f"(every done row purged at once, or none); store milliseconds, or point it at another column"
    )
