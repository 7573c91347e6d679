"""Every setting idemdash reads, declared once with its default and meaning (the jobs' own in
``core/setting_jobs.py``).

Settings come from environment variables named ``IDEMDASH_<NAME>``. The README's
configuration table is checked against this list by the tests, so a new setting
without documentation fails CI.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from idemdash.core import parsers
from idemdash.core.parsers import parse_duration as parse_duration  # part of this module's interface
from idemdash.core.parsers import split_list as split_list
from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.core.profiles import PROFILES, profile, setting_defaults
from idemdash.core.profiles.custom import NAME as CUSTOM
from idemdash.core.setting import PREFIX as PREFIX  # part of this module's interface
from idemdash.core.setting import Setting as Setting
from idemdash.core.setting_jobs import JOB_SETTINGS

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "DATABASE_URL",
        "",
        str,
        "libpq connection string or URL of the database that holds the application tables. Required (except "
        "for `idemdash demo`); with `IDEMDASH_CONFIG`, each database's `url` instead.",
        per_database=True,
    ),
    Setting(
        "READ_DATABASE_URL",
        "",
        str,
        "Optional: a hot standby of that database. Pages, JSON reads and /metrics read there while it is at "
        "most `IDEMDASH_READ_MAX_LAG_SECONDS` behind; actions, purges, snapshots, rollups and the audit log "
        "always write to the primary; the header says where a page read from. With `IDEMDASH_CONFIG`, each "
        "database's `read_url`.",
        per_database=True,
    ),
    Setting(
        "READ_MAX_LAG_SECONDS",
        30,
        parsers.positive_int,
        "How far a standby may lag behind its primary before reads fall back to the primary (the header says so).",
        per_database=True,
    ),
    Setting(
        "CONFIG",
        "",
        str,
        "A TOML file, or a directory whose `*.toml` files are read in name order, declaring several databases: "
        "`[fleets.<name>]` for many at once (a server and a pattern of database names, or a URL template and a "
        "list of names; each member named `<fleet>/<database>`), and `[databases.<name>]` each with `url`, "
        "optional `read_url`, `app_schema`, table names, `environment` and its own retention and purge settings "
        "(these environment variables are the defaults). Every page is then also under `/db/<name>/…` and every "
        "JSON route under `/api/v1/db/<name>/…`; the plain URLs mean the first database. Empty: one database, "
        "from `IDEMDASH_DATABASE_URL`. See docs/databases.md.",
    ),
    Setting(
        "APP_SCHEMA",
        "app",
        parsers.identifier,
        "Schema of the application's idempotency, inbox and outbox tables.",
        per_database=True,
    ),
    Setting(
        "KEYS_TABLE",
        "idempotency_request",
        parsers.identifier,
        "Name of the idempotency-key table inside the application schema.",
        per_database=True,
    ),
    Setting(
        "INBOX_TABLE",
        "processed_message",
        parsers.identifier,
        "Name of the processed-message (inbox) table.",
        per_database=True,
    ),
    Setting(
        "OUTBOX_TABLE", "outbox_event", parsers.identifier, "Name of the transactional outbox table.", per_database=True
    ),
    Setting(
        "PROFILE",
        DEFAULT_PROFILE,
        parsers.choice(*PROFILES, CUSTOM),
        "Whose tables the database holds: `reference` (idemdash's own shape, these settings' defaults), a "
        f"library's ({', '.join(f'`{name}`' for name in PROFILES if name != DEFAULT_PROFILE)}; `idemdash detect` "
        "finds them), or `custom`, a shape described in `IDEMDASH_CONFIG`. Any but `reference` is read through its "
        "own states, written to only by the library's own actions `IDEMDASH_LIBRARY_ACTIONS` enables, and takes "
        "the library's schema and table names where none are set. See docs/profiles.md.",
        per_database=True,
    ),
    Setting(
        "LIBRARY_ACTIONS",
        "",
        parsers.action_names,
        "The writes a library documents and does itself that operators may do here, by name, comma separated "
        "(in `IDEMDASH_CONFIG` a list or a string): with profile `wolverine`, `release-dead-node` and "
        "`replay-dead-letter`. Each is a compare-and-set with a reason and an audit row; the other library "
        "profiles document none. Empty: the library's tables are only read. See docs/profiles.md.",
        per_database=True,
    ),
    Setting(
        "ARCHIVE_TABLE",
        "event_publication_archive",
        parsers.identifier,
        "Spring Modulith's archive table (profile `spring-modulith`).",
        per_database=True,
    ),
    Setting(
        "OUTBOX_STATE_TABLE",
        "OutboxState",
        parsers.identifier,
        "MassTransit's outbox state table (profile `masstransit`; its snake_case name is found too).",
        per_database=True,
    ),
    Setting(
        "DEAD_LETTERS_TABLE",
        "wolverine_dead_letters",
        parsers.identifier,
        "Wolverine's dead-letter table (profile `wolverine`).",
        per_database=True,
    ),
    Setting(
        "NODES_TABLE",
        "wolverine_nodes",
        parsers.identifier,
        "Wolverine's node table (profile `wolverine`).",
        per_database=True,
    ),
    Setting(
        "SECRET_KEY",
        "",
        str,
        "Flask secret key (signs the session cookie that carries the CSRF token); the same value for every worker "
        "and replica. Unset: "
        "`idemdash serve` makes one for all its workers (sessions end when it restarts), a gunicorn started by "
        "hand refuses to start, and a single process uses a random key of its own.",
    ),
    Setting(
        "AUTH",
        "none",
        parsers.choice("none", "basic", "proxy"),
        "Who may use the dashboard: `none` (everyone is an operator; the demo and localhost only), "
        "`basic` (HTTP Basic with `IDEMDASH_USERS_FILE`) or `proxy` (user and groups headers from an "
        "SSO proxy at `IDEMDASH_PROXY_TRUSTED`). See docs/security.md.",
    ),
    Setting(
        "USERS_FILE",
        "",
        str,
        "With `IDEMDASH_AUTH=basic`: the file of users, one `name:role:hash` a line (role `viewer` or "
        "`operator`; hash from `idemdash hash-password`). Read at startup; a missing or malformed file stops the "
        "start with the line at fault.",
    ),
    Setting(
        "PROXY_USER_HEADER",
        "X-Forwarded-User",
        parsers.header_name,
        "With `IDEMDASH_AUTH=proxy`: the header carrying the signed-in user's name (recorded in the audit log). "
        "Sent more than once: 400 (under `idemdash serve`).",
    ),
    Setting(
        "PROXY_GROUPS_HEADER",
        "X-Forwarded-Groups",
        parsers.header_name,
        "With `IDEMDASH_AUTH=proxy`: the header carrying the user's groups, comma separated, in one header "
        "(sent more than once: 400 under `idemdash serve`, since a proxy that adds its header to the client's "
        "would let the client add a group).",
    ),
    Setting(
        "PROXY_TRUSTED",
        "127.0.0.1,::1",
        parsers.networks,
        "Addresses or CIDR networks of the proxy, comma separated. User, groups and `X-Forwarded-Proto` "
        "headers are believed only from these; other clients get 401 in proxy mode.",
    ),
    Setting(
        "OPERATOR_GROUPS",
        "idemdash-operators",
        parsers.names,
        "With `IDEMDASH_AUTH=proxy`: groups (comma separated, exact names) whose members are operators; "
        "everyone else is a viewer.",
    ),
    Setting(
        "ALLOW_UNAUTHENTICATED",
        False,
        parsers.boolean,
        "`1` lets `IDEMDASH_AUTH=none` answer requests for any `Host` and from any address (otherwise: localhost "
        "only, which also stops DNS rebinding), and lets `idemdash serve` and `idemdash demo --host` listen on a "
        "non-loopback address. Only when something in front already restricts who can connect.",
    ),
    Setting(
        "SESSION_COOKIE_SECURE",
        False,
        parsers.boolean,
        "`1` always marks the session cookie (it holds the CSRF token) `Secure`. Otherwise it is `Secure` "
        "when the request came over HTTPS (directly, or per `X-Forwarded-Proto` from a trusted proxy).",
    ),
    Setting(
        "READ_ONLY",
        False,
        parsers.boolean,
        "`1` hides and refuses every state-changing action (reclassify, purge), for every user, on every database "
        "(a database's `read_only = false` does not lift it).",
        per_database=True,
    ),
    Setting(
        "BULK_MAX_KEYS",
        1000,
        parsers.positive_int,
        "Most keys one bulk reclassification changes; the operator repeats the call for more.",
        per_database=True,
    ),
    Setting(
        "ENVIRONMENT",
        "",
        parsers.environment,
        "Which environment this is, shown as a coloured band in every page's header and at the start of its "
        "title, so nobody mistakes production for staging: a name, optionally `name:colour` (red, orange, "
        "yellow, green, blue, purple, grey; e.g. `production`, `staging:orange`, `eu-prod:red`). Without a "
        "colour: red for production/prod/live, orange for staging/preprod/uat, green for development/test/demo, "
        "blue otherwise. Empty: no band (the demo shows a green `demo`).",
        per_database=True,
    ),
    Setting(
        "RUNBOOK_URL",
        "",
        str,
        "Runbook link template with `{scope}`, `{key}`, `{status}`, `{database}` (the database's name in "
        "`IDEMDASH_CONFIG`, `default` without it) and `{runbook}` (URL-encoded "
        "when filled in; `{runbook}` is `stuck-keys` or `outbox-backlog`). With `{runbook}` it serves both "
        "runbooks; without, only the stuck-key one. Empty: the built-in runbooks.",
    ),
    Setting(
        "TRACE_URL",
        "",
        str,
        "Trace link template with `{trace_id}` (URL-encoded when filled in): where an outbox row carries a W3C "
        "`traceparent`, the journey links its trace there (Jaeger `https://jaeger.example/trace/{trace_id}`, "
        "Tempo, Honeycomb). Empty: the trace id is shown without a link.",
    ),
    Setting(
        "HOTSPOT_MIN_ATTEMPTS",
        5,
        parsers.positive_int,
        "`attempt_count` from which a key counts as a retry hotspot.",
        per_database=True,
    ),
    Setting(
        "INBOX_RETENTION_DAYS",
        30,
        parsers.positive_int,
        "How long inbox rows are kept; the inbox page compares each consumer's oldest row with it.",
        per_database=True,
    ),
    Setting(
        "DEFAULT_LEASE_SECONDS",
        300,
        parsers.positive_int,
        "Lease assumed for a `processing` key whose `locked_until` is NULL: it is stuck once "
        "`claimed_at` is older than this.",
        per_database=True,
    ),
    Setting(
        "LIBRARY_TIMEZONE",
        "UTC",
        parsers.zone,
        "The zone a library writes its `timestamp without time zone` columns in (an IANA name such as "
        "`Europe/Berlin`, or `local`: the "
        "zone of the machine idemdash runs on); each is compared with now in that zone, whatever the database "
        "server's or session's zone. Its default is the profile's: `local` for `cap` (DotNetCore.CAP writes "
        "`DateTime.Now`, so set it to the zone of the hosts running CAP when it differs), `UTC` otherwise.",
        per_database=True,
    ),
    Setting(
        "STATEMENT_TIMEOUT_MS",
        3000,
        parsers.positive_int,
        "Statement timeout for page and API reads (READ ONLY transactions).",
        per_database=True,
    ),
    Setting(
        "LOCK_TIMEOUT_MS", 500, parsers.positive_int, "Lock timeout for the dashboard's own writes.", per_database=True
    ),
    Setting("POOL_MIN_SIZE", 1, parsers.positive_int, "Connections the pool keeps open.", per_database=True),
    Setting("POOL_MAX_SIZE", 5, parsers.positive_int, "Most connections one web worker opens.", per_database=True),
    Setting(
        "METRICS_CACHE_SECONDS",
        15,
        parsers.positive_int,
        "How long /metrics reuses the numbers it read, so frequent scrapes do not load the database.",
    ),
    Setting(
        "METRICS_PER_DATABASE",
        "auto",
        parsers.choice("auto", "all", "alerts"),
        "Which database-labelled series /metrics serves for each database: `all`, or `alerts` (only those the "
        "alert rules use: `idemdash_database_up`, `idemdash_stuck`, `idemdash_outbox_lag_seconds`, "
        "the purges' `idemdash_purge_last_run_failed` and `idemdash_purge_last_success_timestamp_seconds`, "
        "`idemdash_snapshot_last_timestamp_seconds`; the request histogram's `database` is then `all`); `auto`: "
        "`all` up to 20 databases, `alerts` beyond. See docs/alerts.md for how many series N databases produce.",
    ),
    Setting(
        "FLEET_REFRESH_SECONDS",
        15,
        parsers.positive_int,
        "How often each web worker asks every database, in the background, for `/databases` (which never "
        "waits): a page shows the last answers and how old each is; each ask connects within 2 s (or the URL's "
        "`connect_timeout`), and a database that failed is asked less and less often. See docs/databases.md.",
    ),
    Setting(
        "FLEET_DISCOVER_SECONDS",
        300,
        parsers.positive_int,
        "How often the web workers and the scheduler ask each `[fleets.<name>]` server of IDEMDASH_CONFIG which "
        "databases match its pattern: one created since joins (its pages, jobs and metrics appear), one dropped "
        "leaves (its pages answer 404 naming it). A server that does not answer keeps its fleet's members.",
    ),
    Setting(
        "FLEET_REFRESH_THREADS",
        8,
        parsers.positive_int,
        "Threads, and so connections at most, each web worker asks the databases with for `/databases`, however "
        "many there are; each ask connects, reads and closes. Its search of every database has as many, one pool "
        "shared by all the searches at once, and the searches, the refresh and /metrics together open no more "
        "than min(this, databases) + 1 connections of their own.",
    ),
    Setting(
        "POOL_TIMEOUT_SECONDS",
        3,
        parsers.positive_int,
        "How long a request waits for a database connection before the page answers 503 (database unreachable).",
        per_database=True,
    ),
    Setting(
        "POOL_CONNECT_TIMEOUT_SECONDS",
        2,
        parsers.positive_int,
        "How long each of the pool's connection attempts may take (libpq's `connect_timeout`, 2 at least; the "
        "URL's own `connect_timeout` wins): a host that accepts and never answers fails with its cause. Keep it "
        "below `IDEMDASH_POOL_TIMEOUT_SECONDS`, so the 503 names that cause.",
        per_database=True,
    ),
    Setting(
        "FLEET_MAX_CONNECTIONS",
        50,
        parsers.positive_int,
        "With several databases: most connections one web worker holds, its pools (each reserving "
        "`IDEMDASH_POOL_MAX_SIZE`, twice with a `read_url`) and background reads (the refresh's threads and one "
        "for /metrics) together. Opening a pool past it closes the least recently used idle pool; when none is "
        "idle a request waits `IDEMDASH_POOL_TIMEOUT_SECONDS`, then answers 503 naming this setting. See "
        "docs/databases.md.",
    ),
    Setting(
        "FLEET_IDLE_SECONDS",
        300,
        parsers.positive_int,
        "With several databases: a database's pool opens when a request first uses it and closes after this "
        "long unused. With one database its pool opens at start and stays open.",
    ),
    Setting(
        "FLEET_JOB_CONCURRENCY",
        4,
        parsers.positive_int,
        "Most scheduled jobs (purges, snapshots, rollups, ...) one scheduler process runs at once, over all its "
        "databases; the others wait their turn, late rather than missed. A purge holds two or three connections "
        "to its database while it runs. See docs/operations.md, Several schedulers.",
    ),
    Setting(
        "FLEET_JOB_SPREAD_SECONDS",
        300,
        parsers.non_negative_int,
        "With several databases: each database's purges start up to this long after their schedule (at most "
        "half the schedule's period) and its snapshots up to this long after the scheduler starts, by a fixed "
        "offset from its name, so hundreds of databases do not all start at once; the same in every scheduler "
        "process. `0`: none.",
    ),
    Setting(
        "RUN_JOBS",
        False,
        parsers.boolean,
        "`1` runs the scheduled jobs inside the web process (single-process setups; the demo "
        "does this). Otherwise run `idemdash scheduler` separately.",
    ),
    Setting(
        "BIND",
        "127.0.0.1:8000",
        parsers.bind,
        "Address `idemdash serve` listens on: `HOST:PORT`, `[IPv6]:PORT`, `unix:PATH` or `fd://N` (anything else "
        "is refused with the forms it accepts).",
    ),
    Setting("WORKERS", 2, parsers.positive_int, "gunicorn worker processes for `idemdash serve`."),
    *JOB_SETTINGS,
)

BY_NAME = {s.name: s for s in SETTINGS}
PER_DATABASE = frozenset(s.name for s in SETTINGS if s.per_database)


def setting(config: Mapping[str, Any], name: str) -> Any:
    """The setting's value in ``config`` (what ``load`` returned, or part of it), else its default: the one place a
    default is read from."""
    return config.get(name, BY_NAME[name].default)


class ConfigError(ValueError):
    pass


def load(environ: Mapping[str, str] | None = None, **overrides: Any) -> dict[str, Any]:
    """Read every setting from ``environ`` (default: os.environ).

    ``overrides`` use the bare setting names (``DATABASE_URL=...``) and win over
    the environment; they are how tests and the demo configure the app.
    """
    environ = os.environ if environ is None else environ
    given_overrides = set(overrides)
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.name in overrides:
            values[setting.name] = overrides.pop(setting.name)
            continue
        raw = environ.get(setting.env)
        if raw is None and setting.legacy is not None and PREFIX + setting.legacy[0] in environ:
            raw = setting.legacy[1](environ[PREFIX + setting.legacy[0]])
        if raw is None:
            values[setting.name] = setting.default
            continue
        try:
            values[setting.name] = setting.parse(raw)
        except ValueError as exc:
            raise ConfigError(f"{setting.env}: {exc}") from None
    if overrides:
        raise ConfigError(f"unknown settings: {', '.join(sorted(overrides))}")
    given = {s.name for s in SETTINGS if s.env in environ} | set(given_overrides)
    values = with_profile_defaults(values, given)
    if mistakes := library_action_mistakes(values):
        raise ConfigError("\n".join(f"IDEMDASH_LIBRARY_ACTIONS: {line}" for line in mistakes))
    return values


def with_profile_defaults(values: dict[str, Any], given: set[str]) -> dict[str, Any]:
    """``values`` with a library profile's own schema and table names wherever ``given`` (the names the
    configuration set) has none: a Spring Modulith database is ``public.event_publication`` unless told otherwise."""
    if setting(values, "PROFILE") == CUSTOM:
        raise ConfigError(
            "IDEMDASH_PROFILE=custom needs the tables' shape: describe it in a [databases.<name>.shape] "
            "table of IDEMDASH_CONFIG (docs/profiles.md, Custom shapes)"
        )
    if setting(values, "PROFILE") != DEFAULT_PROFILE:
        values.update({name: value for name, value in setting_defaults(values["PROFILE"]).items() if name not in given})
    return values


def library_actions(values: Mapping[str, Any]) -> tuple[str, ...]:
    """The library actions a database enables (its LIBRARY_ACTIONS), by name."""
    return tuple(split_list(setting(values, "LIBRARY_ACTIONS")))


def library_action_mistakes(values: Mapping[str, Any]) -> list[str]:
    """One line for each name in LIBRARY_ACTIONS that the database's profile does not document: empty when all
    are known."""
    chosen = profile(setting(values, "PROFILE"))
    known = [a.name for a in chosen.actions]
    offered = (
        f"its actions are {', '.join(known)}"
        if known
        else f"{chosen.library} documents no action idemdash may do in its place"
    )
    return [
        f"{name!r} is not an action of profile {chosen.name!r} ({offered})"
        for name in library_actions(values)
        if name not in known
    ]
