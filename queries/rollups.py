"""Stored rollups (``idemdash.rollup``): a query function's result, computed by the scheduler, read by pages.

A value is a tree of the query modules' frozen dataclasses; it is stored as JSON with each dataclass tagged by
its class (only ``queries.*`` dataclasses are accepted back) and datetimes tagged, so what a page reads back is
the same value the query function returns.
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Sequence

import psycopg
from psycopg.types.json import Jsonb

from queries import statement
from queries.db import select_all

_CLASS, _TIME, _DICT = "__class__", "__time__", "__dict__"


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


def encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        return {_CLASS: f"{cls.__module__}:{cls.__qualname__}",
                **{f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, datetime):
        return {_TIME: value.isoformat()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        # wrapped, so a stored JSON value that happens to hold a '__class__' key stays data
        return {_DICT: {str(k): encode(v) for k, v in value.items()}}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot store a {type(value).__name__} in a rollup")


def decode(data: Any) -> Any:
    if isinstance(data, list):
        return [decode(v) for v in data]
    if isinstance(data, dict):
        if _DICT in data:
            return {k: decode(v) for k, v in data[_DICT].items()}
        if _TIME in data:
            return datetime.fromisoformat(data[_TIME])
        if _CLASS in data:
            module, _, qualname = data[_CLASS].partition(":")
            if not module.startswith("queries."):
                raise ValueError(f"rollup names a class outside queries/: {data[_CLASS]!r}")
            cls = importlib.import_module(module)
            for part in qualname.split("."):
                cls = getattr(cls, part)
            if not dataclasses.is_dataclass(cls):
                raise ValueError(f"rollup names a class that is not a dataclass: {data[_CLASS]!r}")
            return cls(**{k: decode(v) for k, v in data.items() if k != _CLASS})
        raise ValueError(f"not a stored rollup value: {sorted(data)!r}")
    return data


def list_rollups(conn: psycopg.Connection, wanted: Sequence[tuple[str, str]]) -> list[StoredRollup]:
    return select_all(conn, statement("list_rollups"),
                      {"names": [n for n, _ in wanted], "variants": [v for _, v in wanted]}, StoredRollup)


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
    return row[0]


def upsert_rollup(conn: psycopg.Connection, name: str, variant: str, computed_at: datetime, duration_ms: float,
                  value: Any) -> None:
    conn.execute(statement("upsert_rollup"), {"name": name, "variant": variant, "computed_at": computed_at,
                                              "duration_ms": duration_ms, "payload": Jsonb(encode(value))})
