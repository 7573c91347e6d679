"""The all-databases page's order and filters: what needs attention first, and which databases to show.

Each row's ``attention`` lists why it needs a look, worst first (the order of ``REASONS``):

- ``unreachable``: its last ask failed (down, refused, hung, or a setting to fix);
- ``stuck_keys``: keys in processing whose lease ran out;
- ``outbox_lag``: its oldest pending outbox row is older than ``OUTBOX_LAG_ATTENTION_SECONDS`` (the alert's
  threshold in docs/alerts.md);
- ``purge_failed``: its newest purge run failed.

Replication lag is not among them: the background refresh reads each primary only and does not know its standby's lag
(each database's own pages say it). Rows are sorted by their worst reason, then within it by how bad (more stuck
keys, older outbox row, more failed asks first), then rows with no reason (not answered yet, or fine) by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from idemdash.dashboard.all_databases import DatabaseRow

REASONS = ("unreachable", "stuck_keys", "outbox_lag", "purge_failed")
# the outbox-lag alert's threshold (docs/alerts.md, IdemdashOutboxLagging)
OUTBOX_LAG_ATTENTION_SECONDS = 600.0
# ?fleet= value for the databases of plain [databases.<name>] tables (a fleet's name never holds it)
NO_FLEET = "-"


def attention(row: DatabaseRow) -> list[str]:
    """Why ``row`` needs attention, worst first; empty when it is fine or has not answered yet."""
    if row.pending:
        return []
    if not row.reachable:
        return ["unreachable"]
    summary = row.summary
    if summary is None:
        return []
    reasons = []
    if summary.stuck:
        reasons.append("stuck_keys")
    if summary.outbox_lag_seconds is not None and summary.outbox_lag_seconds >= OUTBOX_LAG_ATTENTION_SECONDS:
        reasons.append("outbox_lag")
    if summary.last_purge is not None and summary.last_purge.outcome == "failed":
        reasons.append("purge_failed")
    return reasons


def _sort_key(row: DatabaseRow) -> tuple:
    reasons = attention(row)
    rank = REASONS.index(reasons[0]) if reasons else len(REASONS)
    summary = row.summary
    stuck = (summary.stuck or 0) if summary is not None else 0
    lag = (summary.outbox_lag_seconds or 0.0) if summary is not None else 0.0
    return rank, -row.failures, -stuck, -lag, row.name


def worst_first(rows: Iterable[DatabaseRow]) -> list[DatabaseRow]:
    return sorted(rows, key=_sort_key)


def fleet_of(name: str) -> str:
    """The fleet a database belongs to (``orders`` for ``orders/orders_eu``), ``NO_FLEET`` for a plain entry."""
    fleet, slash, _ = name.partition("/")
    return fleet if slash else NO_FLEET


@dataclass(frozen=True)
class Filters:
    fleet: str | None = None
    environment: str | None = None
    attention: bool = False

    @property
    def any(self) -> bool:
        return self.fleet is not None or self.environment is not None or self.attention


class BadFilter(LookupError):
    """A filter value that names nothing (a 404): the message says which values there are."""


def check(filters: Filters, fleets: Sequence[str], environments: Sequence[str]) -> None:
    """Raise BadFilter when ``fleet`` or ``environment`` names none of those configured."""
    if filters.fleet is not None and filters.fleet != NO_FLEET and filters.fleet not in fleets:
        known = ", ".join(fleets) or "none are configured"
        raise BadFilter(
            f"fleet={filters.fleet!r}: no [fleets.{filters.fleet}] in IDEMDASH_CONFIG; give one of the "
            f"fleets ({known}) or '{NO_FLEET}' for the databases of [databases.<name>] tables"
        )
    if filters.environment is not None and filters.environment not in environments:
        known = ", ".join(environments) or "none is set"
        raise BadFilter(
            f"environment={filters.environment!r}: no database has this environment; the environments "
            f"are {known} (the environment key of each [databases.<name>] or [fleets.<name>] table, or "
            "IDEMDASH_ENVIRONMENT)"
        )


def environment_of(row: DatabaseRow) -> str | None:
    return row.environment[0] if row.environment else None


def select(rows: Iterable[DatabaseRow], filters: Filters) -> list[DatabaseRow]:
    """The rows the filters keep, worst first."""
    kept = [
        row
        for row in rows
        if (filters.fleet is None or fleet_of(row.name) == filters.fleet)
        and (filters.environment is None or environment_of(row) == filters.environment)
        and (not filters.attention or attention(row))
    ]
    return worst_first(kept)
