"""One read asked of many databases at once, within a deadline, on the worker's bounded fan-out pool (the journey,
the learned routes): the pattern of dashboard/fleet_search.py for any read.

Each ask runs on ``PoolBudget.fan_out`` (IDEMDASH_FLEET_REFRESH_THREADS threads, shared by every request) on the
database's short connection path (``Target.read_once``: an idle pooled connection, else one of its own within the
background slots of IDEMDASH_FLEET_MAX_CONNECTIONS). Whatever has not answered by the deadline is named, with why;
a database whose last background ask failed (dashboard/all_databases.py) is not asked at all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import psycopg

from idemdash.queries.pool_budget import NoConnectionFree, PoolBudget
from idemdash.queries.target import Target

T = TypeVar("T")
STATEMENT_TIMEOUT_MS = 1500
CONNECT_TIMEOUT_SECONDS = 2  # libpq's least; the deadline ends the wait sooner
SLOT_MARGIN_SECONDS = 0.05


@dataclass
class Asked(Generic[T]):
    answers: dict[str, T]  # in the configured order
    not_answered: dict[str, str]  # database: why


class _NotReached(Exception):
    pass


def _run(target: Target, read: Callable[[Target, psycopg.Connection], T], name: str, deadline: float) -> T:
    if time.monotonic() >= deadline:
        raise _NotReached()
    with target.read_once(name, STATEMENT_TIMEOUT_MS, CONNECT_TIMEOUT_SECONDS, slot_deadline=deadline) as conn:
        return read(target, conn)


def ask_all(
    targets: Mapping[str, Target],
    read: Callable[[Target, psycopg.Connection], T],
    *,
    keeper: PoolBudget,
    ends: float,
    application_name: str,
    skip: Mapping[str, str] | None = None,
) -> Asked[T]:
    """``read(target, conn)`` in every database of ``targets`` at once, waiting until ``ends`` (a monotonic time)."""
    skip = skip or {}
    not_answered = {name: why for name, why in skip.items() if name in targets}
    asked: dict[Future, str] = {
        keeper.fan_out(_run, target, read, application_name, ends - SLOT_MARGIN_SECONDS): name
        for name, target in targets.items()
        if name not in not_answered
    }
    pending = set(asked)
    while pending and (left := ends - time.monotonic()) > 0:
        _, pending = wait(pending, timeout=left, return_when=FIRST_COMPLETED)
    for future in pending:  # not started: it never will; started: it ends at its own connect deadline
        future.cancel()
    answers: dict[str, Any] = {}
    for future, name in asked.items():
        if future.cancelled() or (future.done() and isinstance(future.exception(), _NotReached)):
            not_answered[name] = (
                "not reached in time: this worker's threads and connections for reads across "
                "databases (IDEMDASH_FLEET_REFRESH_THREADS, IDEMDASH_FLEET_MAX_CONNECTIONS) were "
                "busy"
            )
        elif not future.done():
            not_answered[name] = "no answer in time (a host that hangs, or a slow one)"
        elif isinstance(exc := future.exception(), NoConnectionFree):
            not_answered[name] = str(exc)
        elif exc is not None:
            not_answered[name] = targets[name].cause_of(exc).message
        else:
            answers[name] = future.result()
    order = list(targets)
    return Asked(
        {n: answers[n] for n in order if n in answers}, {n: not_answered[n] for n in order if n in not_answered}
    )


def known_down(rows: Mapping[str, Any]) -> dict[str, str]:
    """The databases whose last background ask failed (``DatabaseRow``s by name): not asked again now."""
    return {
        name: f"its last background ask failed: {row.problem}"
        for name, row in rows.items()
        if not row.pending and not row.reachable and not row.asking
    }
