"""Where a target's reads go when it has a hot standby (``read_dsn``): the standby while it answers and is at most
IDEMDASH_READ_MAX_LAG_SECONDS behind its primary, else the primary, with the reason (queries/target.py asks, and
believes the answer for REPLICA_CHECK_SECONDS)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from idemdash.queries import replication

# How long a standby's lag is believed before it is measured again, and how long measuring it may take.
REPLICA_CHECK_SECONDS = 2.0
REPLICA_CHECK_TIMEOUT = 1.0


@dataclass(frozen=True)
class ReplicaStatus:
    """Where reads go now: the standby while it answers and is at most ``max_lag_seconds`` behind."""

    using_standby: bool
    lag_seconds: float | None  # None: not measured (no standby, or it did not answer)
    max_lag_seconds: int
    problem: str | None  # why reads went to the primary


def measure_standby(
    primary_lease: AbstractContextManager[ConnectionPool], standby: ConnectionPool, limit: int
) -> ReplicaStatus:
    """The standby's lag behind the primary (its pool taken through ``primary_lease``), against ``limit`` seconds."""
    try:
        with primary_lease as primary:
            with primary.connection(timeout=REPLICA_CHECK_TIMEOUT) as conn:
                primary_lsn = replication.get_primary_wal_lsn(conn)
            with standby.connection(timeout=REPLICA_CHECK_TIMEOUT) as conn:
                replay = replication.get_standby_replay(conn, primary_lsn)
    except (psycopg.Error, PoolTimeout) as exc:
        return ReplicaStatus(
            False,
            None,
            limit,
            f"the standby or the primary did not answer ({type(exc).__name__}): reading from the primary",
        )
    if not replay.in_recovery:
        return ReplicaStatus(
            False, None, limit, "the read database is not a standby (not in recovery): reading from the primary"
        )
    lag = replay.lag_seconds
    if lag > limit:
        paused = " (its replay is paused)" if replay.paused else ""
        return ReplicaStatus(
            False,
            lag,
            limit,
            f"the standby is {lag:.0f} s behind{paused}, more than "
            f"IDEMDASH_READ_MAX_LAG_SECONDS ({limit} s): reading from the "
            "primary",
        )
    return ReplicaStatus(True, lag, limit, None)
