"""What a worker's connection budget (queries/pool_budget.py) answers when it cannot give a connection in time."""

from __future__ import annotations

MAX_CONNECTIONS = "IDEMDASH_FLEET_MAX_CONNECTIONS"


class BudgetExhausted(Exception):
    """Every open pool is in use and opening another would pass IDEMDASH_FLEET_MAX_CONNECTIONS."""

    def __init__(self, database: str, budget: int, in_use: int, waited: float) -> None:
        self.database, self.budget, self.in_use, self.waited = database, budget, in_use, waited
        super().__init__(
            f"this worker holds its budget of {budget} connections ({MAX_CONNECTIONS}): the pools of {in_use} "
            f"databases are all in use and none was released within {waited:g} s, so database {database}'s pool "
            f"cannot open now. Try again in a moment; if it happens often, raise {MAX_CONNECTIONS} (each of W "
            f"workers may hold that many: keep W times it under the servers' max_connections)"
        )


class NoConnectionFree(Exception):
    """A background read found every connection slot of the worker's budget taken, and none freed before its
    deadline."""

    def __init__(self, slots: int, waited: float) -> None:
        self.slots, self.waited = slots, waited
        super().__init__(
            f"not asked: the {slots} connections this worker keeps for reads across databases ({MAX_CONNECTIONS}, "
            f"shared by the all-databases refresh, /metrics and searches) were all in use for {waited:.1f} s. "
            f"Try again in a moment; if it happens often, raise IDEMDASH_FLEET_REFRESH_THREADS and {MAX_CONNECTIONS}"
        )
