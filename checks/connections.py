"""What the web worker that answers holds now: its databases' pools and its background reads' own connections,
against its budget (queries/pool_budget.py). Not a database's finding: the worker's, shown on each /health."""

from __future__ import annotations

from idemdash.checks.finding import OK, WARN, Check
from idemdash.queries.budget_errors import MAX_CONNECTIONS
from idemdash.queries.pool_usage import Usage

# from this share of the budget held at once, say so: requests start to close each other's pools
NEAR_BUDGET = 0.9


def check_connections(usage: Usage, databases: int) -> Check:
    held = (
        f"This worker holds {usage.held} connections now: {usage.pool_connections} in the pools of "
        f"{usage.open_pools} of {databases} databases, {usage.background_connections} of the background reads "
        "(the all-databases refresh, /metrics)."
    )
    if usage.budget is None:
        return Check(
            "connections",
            OK,
            "Connections this worker holds",
            f"{held} With one database its pool opens at start and stays open; no budget applies.",
        )
    rest = (
        f" Its budget is {usage.budget} ({MAX_CONNECTIONS}); open pools and background reads may grow to "
        f"{usage.reserved}. A pool closes after {usage.idle_seconds:g} s unused (IDEMDASH_FLEET_IDLE_SECONDS); "
        f"W workers hold at most W × {usage.budget}."
    )
    if usage.reserved >= NEAR_BUDGET * usage.budget:
        return Check(
            "connections",
            WARN,
            "Connections this worker holds: near its budget",
            held
            + rest
            + " Opening another database's pool now closes the least recently used idle one, and waits when "
            "every open pool is busy.",
            fix=f"raise {MAX_CONNECTIONS} (within the servers' max_connections)",
        )
    return Check("connections", OK, "Connections this worker holds", held + rest)
