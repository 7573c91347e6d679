"""History written fast: days of keys, outbox rows and inbox rows with set-based inserts (the demo's first start,
``idemdash simulate --backfill``)."""

from __future__ import annotations

import secrets
from collections import Counter
from dataclasses import asdict
from datetime import timedelta

import psycopg

from idemdash.queries import Tables
from idemdash.queries.workload.simulate import backfill_inbox, backfill_keys_and_outbox


def backfill(
    conn: psycopg.Connection, tables: Tables, days: int, keys_per_day: int = 3000, inbox_per_day: int | None = None
) -> dict[str, int]:
    """Write ``days`` of history with set-based inserts, one day per transaction; returns what was written.

    Each run uses a fresh random token in its keys and message ids, so running it again adds more history
    instead of colliding. The newest slice ends 15 minutes ago so the stuck keys' leases have run out.
    """
    if days < 1:
        raise ValueError("days must be at least 1")
    inbox_rows = keys_per_day if inbox_per_day is None else inbox_per_day
    token = secrets.token_hex(4)
    totals: Counter[str] = Counter()
    for day in range(days):
        newest = timedelta(days=day) if day else timedelta(minutes=15)
        oldest = timedelta(days=day + 1)
        with conn.transaction():
            counts = backfill_keys_and_outbox(conn, tables, f"{token}-{day}", keys_per_day, oldest, newest)
            totals.update(asdict(counts))
            totals["inbox"] += backfill_inbox(conn, tables, f"{token}-{day}", inbox_rows, oldest, newest)
    return dict(totals)
