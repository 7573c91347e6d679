"""Reclassifying stuck keys (docs/concepts.md, Reclassification). Every safety rule is in the SQL.

One key: lock it with NOWAIT (an application transaction holding it makes
the action fail at once instead of waiting), then one UPDATE whose WHERE
says "still stuck now (or held for review by idemdash) and unchanged since
the operator looked", with the audit row inserted by the same statement.

``safe_to_retry`` and ``abandoned`` change only a key with no outbox row (its effect did not commit), in the
same UPDATE; ``abandoned`` may override that for one key, explicitly and audited as such.

``already_succeeded`` and ``abandoned`` push ``expires_at`` out to at least
now plus the replay horizon in the same UPDATE, so no purge deletes the
decision while a client's retry may still come.

Bulk: queries/reclassify_bulk.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from idemdash.core.statuses import Outcome
from idemdash.queries import Tables, statement
from idemdash.queries.transactions import select_one

# Outcomes an outbox row contradicts: the effect committed, so a retry must not run it again (safe_to_retry)
# and the client must not be told the request failed (abandoned).
EVIDENCE_GUARDED: tuple[Outcome, ...] = ("safe_to_retry", "abandoned")


@dataclass(frozen=True)
class LockedKey:
    scope: str
    key: str
    status: str
    attempt_count: int
    locked_until: datetime | None
    claimed_by: str | None
    claimed_at: datetime | None


@dataclass(frozen=True)
class Reclassification:
    to: str
    reason: str
    actor: str
    evidence: list[str]
    expected_attempt_count: int | None = None
    expected_locked_until: datetime | None = None
    check_locked_until: bool = False
    result_ref_type: str | None = None
    result_ref_id: str | None = None
    response_body: Any = None
    hold_seconds: float = 86400.0
    override_evidence: bool = False  # abandoned although an outbox row exists (a known false positive)


@dataclass(frozen=True)
class ChangeResult:
    changed: bool
    audit_id: int | None


def lock_key_for_action(conn: psycopg.Connection, tables: Tables, scope: str, key: str) -> LockedKey | None:
    """Raises psycopg.errors.LockNotAvailable when another transaction holds the row."""
    return select_one(conn, statement("lock_key_for_action", tables), {"scope": scope, "key": key}, LockedKey)


def reclassify_key(
    conn: psycopg.Connection,
    tables: Tables,
    locked: LockedKey,
    change: Reclassification,
    *,
    lease_seconds: int,
    replay_horizon_seconds: int,
) -> ChangeResult:
    """Change the locked key if the database agrees it is still eligible; the audit row commits with it."""
    query = statement(
        "reclassify_key",
        tables,
        set_clause=statement(f"fragment_set_{change.to}"),
        effect_guard=effect_guard(tables, change.to, override=change.override_evidence),
    )
    params = {
        "scope": locked.scope,
        "key": locked.key,
        "lease_seconds": lease_seconds,
        "expected_attempt_count": change.expected_attempt_count,
        "check_locked_until": change.check_locked_until,
        "expected_locked_until": change.expected_locked_until,
        "actor": change.actor,
        "action": f"reclassify:{change.to}",
        "from_status": locked.status,
        "reason": change.reason,
        "evidence": Jsonb(change.evidence),
        "detail": Jsonb(
            {
                "attempt_count": locked.attempt_count,
                "claimed_by": locked.claimed_by,
                "locked_until": locked.locked_until.isoformat() if locked.locked_until else None,
                "hold_seconds": change.hold_seconds if change.to == "needs_review" else None,
                "result_ref_type": change.result_ref_type,
                "result_ref_id": change.result_ref_id,
                "override_evidence": change.override_evidence,
            }
        ),
        "result_ref_type": change.result_ref_type,
        "result_ref_id": change.result_ref_id,
        "response_body": Jsonb(change.response_body),
        "hold_seconds": change.hold_seconds,
        "replay_horizon_seconds": replay_horizon_seconds,
    }
    row = conn.execute(query, params).fetchone()
    assert row is not None
    audit_id, changed = row
    return ChangeResult(bool(changed), audit_id)


def effect_guard(tables: Tables, to: str, *, override: bool = False) -> sql.Composable:
    """safe_to_retry and abandoned change only keys with no outbox row (no committed effect), checked when the
    row changes; an explicit override lets abandoned through (never safe_to_retry: that would run it twice)."""
    guarded = to in EVIDENCE_GUARDED and not (override and to == "abandoned")
    return statement("fragment_no_committed_effect", tables) if guarded else statement("fragment_true")
