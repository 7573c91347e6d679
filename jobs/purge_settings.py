"""A purge run's settings, read once from the target's settings and checked before touching the database."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from idemdash.core.settings import BY_NAME, ConfigError, Settings

# Which setting holds each table's retention (keys carry their own expires_at).
RETENTION_SETTING = {"keys": None, "inbox": "INBOX_RETENTION_DAYS", "outbox": "OUTBOX_RETENTION_DAYS"}


@dataclass(frozen=True)
class PurgeSettings:
    batch_size: int
    statement_timeout_ms: int
    lock_timeout_ms: int
    pause_ms: int
    duty_cycle: float  # 0 < share <= 1 of the time batches may take
    time_budget_seconds: float
    retention_days: int | None  # None for keys
    inbox_retention_days: int  # every table's cutoff is read at once (partitions of any table need theirs)
    outbox_retention_days: int
    replay_horizon_seconds: int
    history_retention_days: int
    latency_budget: float = 0.0  # allowed probe p99 / its idle baseline; 0: the duty cycle alone

    @classmethod
    def from_config(cls, config: Settings, table: str) -> PurgeSettings:
        retention = RETENTION_SETTING[table]
        duty = _positive(config.purge_duty_cycle, "PURGE_DUTY_CYCLE")
        if duty > 100:
            raise ConfigError(f"{BY_NAME['PURGE_DUTY_CYCLE'].env}: expected a percentage from 1 to 100, got {duty!r}")
        return cls(
            batch_size=_positive(config.purge_batch_size, "PURGE_BATCH_SIZE"),
            statement_timeout_ms=_positive(config.purge_statement_timeout_ms, "PURGE_STATEMENT_TIMEOUT_MS"),
            lock_timeout_ms=_positive(config.purge_lock_timeout_ms, "PURGE_LOCK_TIMEOUT_MS"),
            pause_ms=config.purge_pause_ms,
            duty_cycle=duty / 100,
            time_budget_seconds=_positive(config.purge_time_budget_seconds, "PURGE_TIME_BUDGET_SECONDS"),
            retention_days=_positive(config.value(retention), retention) if retention else None,
            inbox_retention_days=_positive(config.inbox_retention_days, "INBOX_RETENTION_DAYS"),
            outbox_retention_days=_positive(config.outbox_retention_days, "OUTBOX_RETENTION_DAYS"),
            replay_horizon_seconds=_positive(config.replay_horizon, "REPLAY_HORIZON"),
            history_retention_days=_positive(config.purge_history_retention_days, "PURGE_HISTORY_RETENTION_DAYS"),
            latency_budget=config.purge_latency_budget,
        )

    def predicate(self) -> dict[str, int]:
        """The parameters of the table's eligibility condition: its retention, or for keys the replay horizon."""
        if self.retention_days is None:
            return {"replay_horizon_seconds": self.replay_horizon_seconds}
        return {"retention_days": self.retention_days}


def _positive(found: Any, name: str) -> Any:
    """``found``, the value of setting ``name``, when it is a positive number (an override in code is not parsed)."""
    if not isinstance(found, (int, float)) or isinstance(found, bool) or found <= 0:
        raise ConfigError(f"{BY_NAME[name].env}: expected a positive number, got {found!r}")
    return found
