"""The settings that say where a database is and what shape its tables have: its URL (and a standby's), the file
of several databases, the application's schema and tables, the profile and a library's own tables."""

from __future__ import annotations

from dataclasses import dataclass

from idemdash.core import parsers
from idemdash.core.profiles import DEFAULT as DEFAULT_PROFILE
from idemdash.core.profiles import PROFILES
from idemdash.core.profiles.custom import NAME as CUSTOM
from idemdash.core.setting import declare


@dataclass(frozen=True)
class DatabaseSettings:
    database_url: str = declare(
        "",
        str,
        "libpq connection string or URL of the database that holds the application tables. Required (except "
        "for `idemdash demo`); with `IDEMDASH_CONFIG`, each database's `url` instead.",
        per_database=True,
    )
    read_database_url: str = declare(
        "",
        str,
        "Optional: a hot standby of that database. Pages, JSON reads and /metrics read there while it is at "
        "most `IDEMDASH_READ_MAX_LAG_SECONDS` behind; actions, purges, snapshots, rollups and the audit log "
        "always write to the primary; the header says where a page read from. With `IDEMDASH_CONFIG`, each "
        "database's `read_url`.",
        per_database=True,
    )
    read_max_lag_seconds: int = declare(
        30,
        parsers.positive_int,
        "How far a standby may lag behind its primary before reads fall back to the primary (the header says so).",
        per_database=True,
    )
    config: str = declare(
        "",
        str,
        "A TOML file, or a directory whose `*.toml` files are read in name order, declaring several databases: "
        "`[fleets.<name>]` for many at once (a server and a pattern of database names, or a URL template and a "
        "list of names; each member named `<fleet>/<database>`), and `[databases.<name>]` each with `url`, "
        "optional `read_url`, `app_schema`, table names, `environment` and its own retention and purge settings "
        "(these environment variables are the defaults). Every page is then also under `/db/<name>/…` and every "
        "JSON route under `/api/v1/db/<name>/…`; the plain URLs mean the first database. Empty: one database, "
        "from `IDEMDASH_DATABASE_URL`. See docs/databases.md.",
    )
    app_schema: str = declare(
        "app",
        parsers.identifier,
        "Schema of the application's idempotency, inbox and outbox tables.",
        per_database=True,
    )
    keys_table: str = declare(
        "idempotency_request",
        parsers.identifier,
        "Name of the idempotency-key table inside the application schema.",
        per_database=True,
    )
    inbox_table: str = declare(
        "processed_message",
        parsers.identifier,
        "Name of the processed-message (inbox) table.",
        per_database=True,
    )
    outbox_table: str = declare(
        "outbox_event",
        parsers.identifier,
        "Name of the transactional outbox table.",
        per_database=True,
    )
    profile: str = declare(
        DEFAULT_PROFILE,
        parsers.choice(*PROFILES, CUSTOM),
        "Whose tables the database holds: `reference` (idemdash's own shape, these settings' defaults), a "
        f"library's ({', '.join(f'`{name}`' for name in PROFILES if name != DEFAULT_PROFILE)}; `idemdash detect` "
        "finds them), or `custom`, a shape described in `IDEMDASH_CONFIG`. Any but `reference` is read through its "
        "own states, written to only by the library's own actions `IDEMDASH_LIBRARY_ACTIONS` enables, and takes "
        "the library's schema and table names where none are set. See docs/profiles.md.",
        per_database=True,
    )
    library_actions: str = declare(
        "",
        parsers.action_names,
        "The writes a library documents and does itself that operators may do here, by name, comma separated "
        "(in `IDEMDASH_CONFIG` a list or a string): with profile `wolverine`, `release-dead-node` and "
        "`replay-dead-letter`. Each is a compare-and-set with a reason and an audit row; the other library "
        "profiles document none. Empty: the library's tables are only read. See docs/profiles.md.",
        per_database=True,
    )
    archive_table: str = declare(
        "event_publication_archive",
        parsers.identifier,
        "Spring Modulith's archive table (profile `spring-modulith`).",
        per_database=True,
    )
    outbox_state_table: str = declare(
        "OutboxState",
        parsers.identifier,
        "MassTransit's outbox state table (profile `masstransit`; its snake_case name is found too).",
        per_database=True,
    )
    dead_letters_table: str = declare(
        "wolverine_dead_letters",
        parsers.identifier,
        "Wolverine's dead-letter table (profile `wolverine`).",
        per_database=True,
    )
    nodes_table: str = declare(
        "wolverine_nodes",
        parsers.identifier,
        "Wolverine's node table (profile `wolverine`).",
        per_database=True,
    )
