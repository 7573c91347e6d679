"""idemdash.rollup: the rows the rollup job stored (queries/rollups.py), how old each is, and the job's lock and clock.

A stored value is a list of plain JSON objects, one per row of its rollup's row type (times as ISO 8601); the
registry in queries/rollups.py decodes them back into those types.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

import psycopg
from psycopg.types.json import Jsonb

from idemdash.queries import statement
from idemdash.queries.transactions import select_all


def encode_rows(rows: Sequence[Any]) -> list[dict[str, Any]]:
    return [{f.name: _plain(getattr(row, f.name)) for f in dataclasses.fields(row)} for row in rows]


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"a rollup row holds a {type(value).__name__}: store plain values")


@dataclass(frozen=True)
class StoredRollup:
    name: str
    variant: str
    computed_at: datetime
    duration_ms: float
    payload: Any
    age_seconds: float


@dataclass(frozen=True)
class RollupAge:
    name: str
    variant: str
    computed_at: datetime
    duration_ms: float
    age_seconds: float


def list_rollups(conn: psycopg.Connection, wanted: Sequence[tuple[str, str]]) -> list[StoredRollup]:
    return select_all(
        conn,
        statement("list_rollups"),
        {"names": [n for n, _ in wanted], "variants": [v for _, v in wanted]},
        StoredRollup,
    )


def list_rollup_ages(conn: psycopg.Connection) -> list[RollupAge]:
    return select_all(conn, statement("list_rollup_ages"), None, RollupAge)


def try_rollup_lock(conn: psycopg.Connection) -> bool:
    row = conn.execute(statement("try_rollup_lock")).fetchone()
    return bool(row and row[0])


def release_rollup_lock(conn: psycopg.Connection) -> None:
    conn.execute(statement("release_rollup_lock"))


def get_clock(conn: psycopg.Connection) -> datetime:
    row = conn.execute(statement("get_clock")).fetchone()
    assert row is not None
    return cast(datetime, row[0])


def upsert_rollup(
    conn: psycopg.Connection, name: str, variant: str, computed_at: datetime, duration_ms: float, rows: Sequence[Any]
) -> None:
    conn.execute(
        statement("upsert_rollup"),
        {
            "name": name,
            "variant": variant,
            "computed_at": computed_at,
            "duration_ms": duration_ms,
            "payload": Jsonb(encode_rows(rows)),
        },
    )
