"""The settings of the processes: timeouts and pools, /metrics, several databases (the background refresh, the
connection budget, the jobs' concurrency and spread), and how `idemdash serve` listens."""

from __future__ import annotations

from dataclasses import dataclass

from idemdash.core import parsers
from idemdash.core.setting import declare


@dataclass(frozen=True)
class ProcessSettings:
    statement_timeout_ms: int = declare(
        3000,
        parsers.positive_int,
        "Statement timeout for page and API reads (READ ONLY transactions).",
        per_database=True,
    )
    lock_timeout_ms: int = declare(
        500,
        parsers.positive_int,
        "Lock timeout for the dashboard's own writes.",
        per_database=True,
    )
    pool_min_size: int = declare(
        1,
        parsers.positive_int,
        "Connections the pool keeps open.",
        per_database=True,
    )
    pool_max_size: int = declare(
        5,
        parsers.positive_int,
        "Most connections one web worker opens.",
        per_database=True,
    )
    metrics_cache_seconds: int = declare(
        15,
        parsers.positive_int,
        "How long /metrics reuses the numbers it read, so frequent scrapes do not load the database.",
    )
    metrics_per_database: str = declare(
        "auto",
        parsers.choice("auto", "all", "alerts"),
        "Which database-labelled series /metrics serves for each database: `all`, or `alerts` (only those the "
        "alert rules use: `idemdash_database_up`, `idemdash_stuck`, `idemdash_outbox_lag_seconds`, "
        "the purges' `idemdash_purge_last_run_failed` and `idemdash_purge_last_success_timestamp_seconds`, "
        "`idemdash_snapshot_last_timestamp_seconds`; the request histogram's `database` is then `all`); `auto`: "
        "`all` up to 20 databases, `alerts` beyond. See docs/alerts.md for how many series N databases produce.",
    )
    fleet_refresh_seconds: int = declare(
        15,
        parsers.positive_int,
        "How often each web worker asks every database, in the background, for `/databases` (which never "
        "waits): a page shows the last answers and how old each is; each ask connects within 2 s (or the URL's "
        "`connect_timeout`), and a database that failed is asked less and less often. See docs/databases.md.",
    )
    fleet_discover_seconds: int = declare(
        300,
        parsers.positive_int,
        "How often the web workers and the scheduler ask each `[fleets.<name>]` server of IDEMDASH_CONFIG which "
        "databases match its pattern: one created since joins (its pages, jobs and metrics appear), one dropped "
        "leaves (its pages answer 404 naming it). A server that does not answer keeps its fleet's members.",
    )
    fleet_refresh_threads: int = declare(
        8,
        parsers.positive_int,
        "Threads, and so connections at most, each web worker asks the databases with for `/databases`, however "
        "many there are; each ask connects, reads and closes. Its search of every database has as many, one pool "
        "shared by all the searches at once, and the searches, the refresh and /metrics together open no more "
        "than min(this, databases) + 1 connections of their own.",
    )
    pool_timeout_seconds: int = declare(
        3,
        parsers.positive_int,
        "How long a request waits for a database connection before the page answers 503 (database unreachable).",
        per_database=True,
    )
    pool_connect_timeout_seconds: int = declare(
        2,
        parsers.positive_int,
        "How long each of the pool's connection attempts may take (libpq's `connect_timeout`, 2 at least; the "
        "URL's own `connect_timeout` wins): a host that accepts and never answers fails with its cause. Keep it "
        "below `IDEMDASH_POOL_TIMEOUT_SECONDS`, so the 503 names that cause.",
        per_database=True,
    )
    fleet_max_connections: int = declare(
        50,
        parsers.positive_int,
        "With several databases: most connections one web worker holds, its pools (each reserving "
        "`IDEMDASH_POOL_MAX_SIZE`, twice with a `read_url`) and background reads (the refresh's threads and one "
        "for /metrics) together. Opening a pool past it closes the least recently used idle pool; when none is "
        "idle a request waits `IDEMDASH_POOL_TIMEOUT_SECONDS`, then answers 503 naming this setting. See "
        "docs/databases.md.",
    )
    fleet_idle_seconds: int = declare(
        300,
        parsers.positive_int,
        "With several databases: a database's pool opens when a request first uses it and closes after this "
        "long unused. With one database its pool opens at start and stays open.",
    )
    fleet_job_concurrency: int = declare(
        4,
        parsers.positive_int,
        "Most scheduled jobs (purges, snapshots, rollups, ...) one scheduler process runs at once, over all its "
        "databases; the others wait their turn, late rather than missed. A purge holds two or three connections "
        "to its database while it runs. See docs/operations.md, Several schedulers.",
    )
    fleet_job_spread_seconds: int = declare(
        300,
        parsers.non_negative_int,
        "With several databases: each database's purges start up to this long after their schedule (at most "
        "half the schedule's period) and its snapshots up to this long after the scheduler starts, by a fixed "
        "offset from its name, so hundreds of databases do not all start at once; the same in every scheduler "
        "process. `0`: none.",
    )
    run_jobs: bool = declare(
        False,
        parsers.boolean,
        "`1` runs the scheduled jobs inside the web process (single-process setups; the demo "
        "does this). Otherwise run `idemdash scheduler` separately.",
    )
    bind: str = declare(
        "127.0.0.1:8000",
        parsers.bind,
        "Address `idemdash serve` listens on: `HOST:PORT`, `[IPv6]:PORT`, `unix:PATH` or `fd://N` (anything else "
        "is refused with the forms it accepts).",
    )
    workers: int = declare(
        2,
        parsers.positive_int,
        "gunicorn worker processes for `idemdash serve`.",
    )
