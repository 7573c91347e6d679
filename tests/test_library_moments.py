"""A library's stored times read as moments by their column's unit (pages show them as how long ago): timestamptz
text as PostgreSQL's JSON writes it (a trimmed fraction, any offset), a timestamp holding UTC, one holding the
library's local time in its zone (CAP), epoch milliseconds (Eventuate, DBOS); anything else is shown as stored."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from idemdash.core.formatting import library_moment
from idemdash.core.profiles.shape import EPOCH_MS, LOCAL_TIMESTAMP, TIMESTAMPTZ, UTC_TIMESTAMP

NOON_UTC = datetime(2026, 11, 27, 12, 0, 0, 120000, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("value", "unit", "zone", "expected"),
    [
        ("2026-11-27T12:00:00.12+00:00", TIMESTAMPTZ, "UTC", NOON_UTC),
        ("2026-11-27T21:00:00.12+09:00", TIMESTAMPTZ, "UTC", NOON_UTC),
        ("2026-11-27T12:00:00.12", UTC_TIMESTAMP, "Asia/Tokyo", NOON_UTC),
        ("2026-11-27T21:00:00.12", LOCAL_TIMESTAMP, "Asia/Tokyo", NOON_UTC),
        (int(NOON_UTC.timestamp() * 1000), EPOCH_MS, "UTC", NOON_UTC),
    ],
)
def test_each_unit_reads_the_same_moment(value, unit, zone, expected):
    moment = library_moment(value, unit, zone)
    assert moment == expected and moment.tzinfo is not None


@pytest.mark.parametrize(
    ("value", "unit"),
    [
        ("2026-11-27T12:00:00", TIMESTAMPTZ),  # a timestamptz always has its offset: this is not one
        ("not a time", UTC_TIMESTAMP),
        (True, EPOCH_MS),
        ({"a": 1}, TIMESTAMPTZ),
        ("2026-11-27", "seconds"),
    ],
)
def test_what_is_not_a_time_of_its_unit_is_shown_as_stored(value, unit):
    assert library_moment(value, unit, "UTC") is None


def test_a_local_timestamp_keeps_its_zone():
    moment = library_moment("2026-07-01T09:30:00", LOCAL_TIMESTAMP, "Europe/Berlin")
    assert moment == datetime(2026, 7, 1, 9, 30, tzinfo=ZoneInfo("Europe/Berlin"))
    assert moment.utcoffset().total_seconds() == 7200
