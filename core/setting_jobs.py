"""The settings of the jobs: retention, the purges (batches, pacing, schedules), partitions and snapshots."""

from __future__ import annotations

from dataclasses import dataclass

from idemdash.core import parsers, time_parsers
from idemdash.core.setting import declare


@dataclass(frozen=True)
class JobSettings:
    outbox_retention_days: int = declare(
        7,
        parsers.positive_int,
        "How long published outbox rows are kept, counted from `published_at`; pending rows (and any status "
        "other than `published`) are never purged.",
        per_database=True,
    )
    purge_batch_size: int = declare(
        1000,
        parsers.positive_int,
        "Rows one purge batch deletes (one short transaction each). Halved for the rest of a run after a "
        "batch times out, down to 100.",
        per_database=True,
    )
    purge_statement_timeout_ms: int = declare(
        2000,
        parsers.positive_int,
        "`statement_timeout` of every purge batch (`SET LOCAL`); a batch that hits it is rolled back and the "
        "batch size halves.",
        per_database=True,
    )
    purge_lock_timeout_ms: int = declare(
        500,
        parsers.positive_int,
        "`lock_timeout` of every purge batch (`SET LOCAL`), so a purge never queues behind a table lock for long.",
        per_database=True,
    )
    purge_pause_ms: int = declare(
        5,
        parsers.non_negative_int,
        "Pause between purge batches, jittered between half and one and a half times this; `0`: none.",
        per_database=True,
    )
    purge_time_budget_seconds: int = declare(
        300,
        parsers.positive_int,
        "A purge run stops after this long with outcome `budget_exhausted`; the next run carries on.",
        per_database=True,
    )
    purge_duty_cycle: int = declare(
        50,
        parsers.percent,
        "Most of the database's time one purge run may take, in percent: after a batch of t seconds the run "
        "pauses at least t × (100 − p) / p (at 50, as long as the batch took), and longer after a batch slower "
        "than usual (lock waits, I/O). `100`: only `IDEMDASH_PURGE_PAUSE_MS`. See docs/operations.md, Pacing.",
        per_database=True,
    )
    purge_latency_budget: float = declare(
        1.5,
        parsers.latency_budget,
        "How much a purge may slow the application: a run looks at the application's sessions "
        "(pg_stat_activity) while it works, and when their waits for the WAL during its batches grow past this "
        "multiple of their waits between batches, or one waits for a lock the purge holds, it pauses longer "
        "(the duty cycle halves, to a quarter of the configured one) and then halves its batch (a lock wait: the "
        "batch first), growing them back when the waits recover (`IDEMDASH_PURGE_BATCH_SIZE` and "
        "`IDEMDASH_PURGE_DUTY_CYCLE` are its upper bounds). With nobody else using the database it never slows "
        "down. `off`: the fixed duty cycle alone.",
        per_database=True,
    )
    purge_history_retention_days: int = declare(
        90,
        parsers.positive_int,
        "How long idemdash keeps its own purge-run history (`idemdash.purge_run` and the partitions each run "
        "dropped); each run forgets older runs of its table, keeping the latest successful purge and dry run.",
        per_database=True,
    )
    purge_keys_schedule: str = declare(
        "*/15 * * * *",
        time_parsers.schedule,
        "When `idemdash scheduler` purges expired terminal idempotency keys: a crontab line (minute hour day "
        "month weekday) in UTC, `every <duration>` (`every 90s`, `every 6h`: at whole multiples of it since "
        "2000-01-01 UTC, the same fire times in every scheduler), or `off`. Weekdays as names (`mon-fri`): a "
        "number is refused, because APScheduler counts them from Monday = 0 and crontab from Sunday.",
        per_database=True,
    )
    purge_inbox_schedule: str = declare(
        "7 * * * *",
        time_parsers.schedule,
        "When the scheduler purges inbox rows older than `IDEMDASH_INBOX_RETENTION_DAYS` (crontab, UTC, "
        "`every <duration>`, or `off`).",
        per_database=True,
    )
    purge_outbox_schedule: str = declare(
        "37 * * * *",
        time_parsers.schedule,
        "When the scheduler purges published outbox rows older than `IDEMDASH_OUTBOX_RETENTION_DAYS` "
        "(crontab, UTC, `every <duration>`, or `off`).",
        per_database=True,
    )
    partitions_schedule: str = declare(
        "23 * * * *",
        time_parsers.crontab,
        "When the scheduler creates upcoming partitions of the reference schema's partitioned inbox and outbox "
        "(`idemdash init-app-schema --partitioned`): a crontab line in UTC, or `off`. Other tables are left "
        "alone.",
        per_database=True,
    )
    partitions_ahead_days: int = declare(
        7,
        parsers.positive_int,
        "How many days of partitions that job keeps ready ahead of now, so that no insert ever finds no "
        "partition for its row.",
        per_database=True,
    )
    replay_horizon: int = declare(
        86400,
        time_parsers.positive_duration,
        "The longest time a client or a queue may still retry or redeliver (client retry window, broker "
        "redelivery, manual replays), as a duration (`24h`, `2d`, `90m`, or seconds). An operator's "
        "`already_succeeded` or `abandoned` keeps the key at least this long (its `expires_at` is pushed out), "
        "and no purge deletes a key within this long of an operator's decision on it. `/health` warns when the "
        "inbox, outbox or key retention is shorter. The older `IDEMDASH_REPLAY_HORIZON_HOURS` is still read when "
        "this is unset.",
        legacy=("REPLAY_HORIZON_HOURS", lambda raw: raw.strip() + "h"),
        per_database=True,
    )
    snapshot_interval_seconds: int = declare(
        60,
        parsers.positive_int,
        "How often the scheduler records the overview's headline numbers into `idemdash.metric_snapshot` "
        "(the overview's trend lines).",
        per_database=True,
    )
    snapshot_retention_days: int = declare(
        30,
        parsers.positive_int,
        "How long metric snapshots are kept; the snapshot job drops older ones in small batches.",
        per_database=True,
    )
