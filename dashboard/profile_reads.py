"""What a page asks of the database's profile (core/profiles/dimensions.py): which of its role tables record a
dimension, and a read over the tables ``find_configured`` finds. A page that reads the reference tables' own columns
(their ``decisions``) keeps its own statements; every other profile is read here, on one code path, never by its
name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from flask import url_for

from idemdash.core.profiles import profile
from idemdash.core.profiles.detect import Found
from idemdash.core.profiles.dimensions import no_table, not_recorded, records, role_table
from idemdash.core.profiles.shape import Profile, Table
from idemdash.dashboard import panels
from idemdash.dashboard.targets import get_target
from idemdash.queries.catalog import ShapeNotFound, find_configured

T = TypeVar("T")


def chosen() -> Profile:
    """The profile of the database this request is about."""
    return profile(get_target().settings.profile)


def rich(role: str) -> bool:
    """Whether ``role``'s table records an operator's decisions (the reference tables): its page reads its own
    columns, as it always has."""
    return records(role_table(chosen(), role), "decisions")


@dataclass(frozen=True)
class Read(Generic[T]):
    """A read over the found tables: its value, or why the tables were not found."""

    found: Found | None
    problem: str | None
    value: T | None


def load(fn: Callable[..., T], *args: Any, **kwargs: Any) -> panels.Panel[Read[T]]:
    """``fn(conn, found, *args, **kwargs)`` in one read transaction (a degraded panel on a timeout), over the tables
    the database's profile finds; where it finds none, the panel's value says why."""
    settings = get_target().settings

    def read(conn: Any) -> Read[T]:
        try:
            found = find_configured(conn, settings)
        except ShapeNotFound as exc:
            return Read(None, str(exc), None)
        return Read(found, None, fn(conn, found, *args, **kwargs))

    return panels.load(read)


@dataclass(frozen=True)
class Dimension:
    """Whether a table records a dimension, its column(s), and the words shown in its place where it does not."""

    recorded: bool
    columns: list[str]
    note: str | None


def dimension(table: Table | None, name: str, role: str) -> Dimension:
    if table is None:
        return Dimension(False, [], no_table(chosen(), role))
    if not records(table, name):
        return Dimension(False, [], not_recorded(chosen(), name, role))
    columns = list(table.groups) if name == "group" else [str(getattr(table, name))]
    return Dimension(True, columns, None)


def row_url(role: str, identity: str, api: bool = False) -> str:
    return url_for("table_rows.row_api" if api else "table_rows.row_page", role=role, id=identity)


def state_url(role: str, meaning: str) -> str:
    return url_for("table_rows.rows_page", role=role, state=meaning)
