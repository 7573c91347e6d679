"""Retention checks: rows are kept at least as long as a retry or redelivery may still come (docs/concepts.md,
Retention shorter than the replay horizon)."""

from __future__ import annotations

import math

import psycopg

from idemdash.checks.finding import OK, WARN, Check
from idemdash.core.formatting import duration
from idemdash.core.settings import Settings
from idemdash.queries import Tables, health, health_fixes

# Most recent keys the key-retention check looks at. Recent keys sit on a heap page each (at 100M keys 10,000 of them
# read 9,204 pages: 4.6 ms of /health's 12.5); a scope with fewer keys than one in 2,000 may be missed, as one in
# 10,000 was before.
KEY_SAMPLE = 2_000
MAX_SCOPE_FINDINGS = 20  # scopes listed one by one before the rest are summed up
# expires_at computed from a slightly earlier now() than created_at is not a misconfiguration
RETENTION_SLACK_SECONDS = 60


def check_retention_settings(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """(c) The inbox and outbox purges keep rows at least as long as a retry or redelivery may still come."""
    horizon = config.replay_horizon
    findings = []
    retained = [
        (
            "inbox",
            "INBOX_RETENTION_DAYS",
            config.inbox_retention_days,
            "a message redelivered after its inbox row was purged is processed a second time",
        ),
        (
            "outbox",
            "OUTBOX_RETENTION_DAYS",
            config.outbox_retention_days,
            "a command retried after its published outbox row was purged can insert and publish the same event again",
        ),
    ]
    for role, setting, days, harm in retained:
        if days * 86400 < horizon:
            findings.append(
                Check(
                    f"retention.{role}",
                    WARN,
                    f"{role.capitalize()} retention ({days} d) is shorter than the replay horizon "
                    f"({duration(horizon)})",
                    f"Rows are purged after {days} d but retries and redeliveries may come for {duration(horizon)} "
                    f'(IDEMDASH_REPLAY_HORIZON): {harm} ("retention shorter than replay horizon"). '
                    f"Keep rows at least as long as the horizon, or lower the horizon if it is really shorter.",
                    fix=f"IDEMDASH_{setting}={math.ceil(horizon / 86400)}",
                )
            )
        else:
            findings.append(
                Check(
                    f"retention.{role}",
                    OK,
                    f"{role.capitalize()} retention ({days} d) covers the replay horizon ({duration(horizon)})",
                    f"IDEMDASH_{setting}={days}, IDEMDASH_REPLAY_HORIZON={horizon}s.",
                )
            )
    return findings


def check_key_retention(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """(c) Each scope's keys live (expires_at - created_at) at least the replay horizon."""
    horizon = config.replay_horizon
    scopes = health.list_key_retention_by_scope(conn, tables, sample=KEY_SAMPLE)
    short = [s for s in scopes if s.min_retention_seconds < horizon - RETENTION_SLACK_SECONDS]
    findings = []
    for scope in short[:MAX_SCOPE_FINDINGS]:
        findings.append(
            Check(
                f"retention.keys.{scope.scope}",
                WARN,
                f"Keys in scope {scope.scope!r} expire after {duration(scope.min_retention_seconds)}, less than the "
                f"replay horizon ({duration(horizon)})",
                f"Shortest expires_at - created_at among this scope's {scope.sampled} key(s) in the {KEY_SAMPLE:,} "
                "most "
                "recently created. Once such a key is purged, a client retry with the same key runs the command a "
                "second "
                "time. Have the application set expires_at at least the horizon after created_at (the reference claim "
                "function's p_retention); the SQL below extends the keys already written (batch it on a big table).",
                fix_sql=health_fixes.fix_extend_key_retention(tables, scope.scope, horizon),
            )
        )
    if len(short) > MAX_SCOPE_FINDINGS:
        rest = short[MAX_SCOPE_FINDINGS:]
        findings.append(
            Check(
                "retention.keys.more",
                WARN,
                f"{len(rest)} more scopes expire keys before the horizon",
                "Scopes: " + ", ".join(repr(s.scope) for s in rest[:50]) + ("…" if len(rest) > 50 else ""),
            )
        )
    if not short:
        sampled = sum(s.sampled for s in scopes)
        findings.append(
            Check(
                "retention.keys",
                OK,
                f"Keys live at least the replay horizon ({duration(horizon)})",
                f"Checked {sampled:,} recent key(s) in {len(scopes)} scope(s)."
                if sampled
                else "No keys yet; checked again once there are some.",
            )
        )
    return findings
