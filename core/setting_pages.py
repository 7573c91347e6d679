"""The settings of what the pages show and allow: the freeze, the bulk cap, the environment band, the runbook and
trace links, and the thresholds (hotspots, retention, the default lease, a library's time zone)."""

from __future__ import annotations

from dataclasses import dataclass

from idemdash.core import parsers, time_parsers
from idemdash.core.setting import declare


@dataclass(frozen=True)
class PageSettings:
    read_only: bool = declare(
        False,
        parsers.boolean,
        "`1` hides and refuses every state-changing action (reclassify, purge), for every user, on every database "
        "(a database's `read_only = false` does not lift it).",
        per_database=True,
    )
    bulk_max_keys: int = declare(
        1000,
        parsers.positive_int,
        "Most keys one bulk reclassification changes; the operator repeats the call for more.",
        per_database=True,
    )
    environment: str = declare(
        "",
        parsers.environment,
        "Which environment this is, shown as a coloured band in every page's header and at the start of its "
        "title, so nobody mistakes production for staging: a name, optionally `name:colour` (red, orange, "
        "yellow, green, blue, purple, grey; e.g. `production`, `staging:orange`, `eu-prod:red`). Without a "
        "colour: red for production/prod/live, orange for staging/preprod/uat, green for development/test/demo, "
        "blue otherwise. Empty: no band (the demo shows a green `demo`).",
        per_database=True,
    )
    runbook_url: str = declare(
        "",
        str,
        "Runbook link template with `{scope}`, `{key}`, `{status}`, `{database}` (the database's name in "
        "`IDEMDASH_CONFIG`, `default` without it) and `{runbook}` (URL-encoded "
        "when filled in; `{runbook}` is `stuck-keys` or `outbox-backlog`). With `{runbook}` it serves both "
        "runbooks; without, only the stuck-key one. Empty: the built-in runbooks.",
    )
    trace_url: str = declare(
        "",
        str,
        "Trace link template with `{trace_id}` (URL-encoded when filled in): where an outbox row carries a W3C "
        "`traceparent`, the journey links its trace there (Jaeger `https://jaeger.example/trace/{trace_id}`, "
        "Tempo, Honeycomb). Empty: the trace id is shown without a link.",
    )
    hotspot_min_attempts: int = declare(
        5,
        parsers.positive_int,
        "`attempt_count` from which a key counts as a retry hotspot.",
        per_database=True,
    )
    inbox_retention_days: int = declare(
        30,
        parsers.positive_int,
        "How long inbox rows are kept; the inbox page compares each consumer's oldest row with it.",
        per_database=True,
    )
    default_lease_seconds: int = declare(
        300,
        parsers.positive_int,
        "Lease assumed for a `processing` key whose `locked_until` is NULL: it is stuck once "
        "`claimed_at` is older than this.",
        per_database=True,
    )
    library_timezone: str = declare(
        "UTC",
        time_parsers.zone,
        "The zone a library writes its `timestamp without time zone` columns in (an IANA name such as "
        "`Europe/Berlin`, or `local`: the "
        "zone of the machine idemdash runs on); each is compared with now in that zone, whatever the database "
        "server's or session's zone. Its default is the profile's: `local` for `cap` (DotNetCore.CAP writes "
        "`DateTime.Now`, so set it to the zone of the hosts running CAP when it differs), `UTC` otherwise.",
        per_database=True,
    )
