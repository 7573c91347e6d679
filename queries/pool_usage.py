"""What a worker's connection budget (queries/pool_budget.py) deals in: a database whose pools it opens and closes
(``Pooled``, queries.target.Target), and what the worker holds now (``Usage``, for /health and /metrics)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class Pooled(Protocol):
    """What the budget needs of a database (queries.target.Target)."""

    name: str

    @property
    def pool_reservation(self) -> int: ...

    def pool_is_open(self) -> bool: ...

    def open_pool(self) -> Any: ...

    def take_pools(self) -> list[Any]: ...

    def pool_connections(self) -> int: ...


@dataclass(frozen=True)
class Usage:
    """What one worker holds now, for /health and /metrics."""

    lazy: bool  # pools open on demand within the budget (several databases)
    budget: int | None  # None: one database, no budget applies
    idle_seconds: float | None  # None: pools stay open
    open_pools: int  # databases whose pool is open
    pool_connections: int  # connections those pools hold now (in use or idle)
    background_connections: int  # connections the background reads opened of their own, now
    reserved: int  # what the open pools and the background reads may grow to

    @property
    def held(self) -> int:
        return self.pool_connections + self.background_connections
