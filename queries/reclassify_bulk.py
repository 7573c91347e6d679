"""Reclassifying stuck keys in bulk (docs/concepts.md, Reclassification). Every safety rule is in the SQL.

A preview is recorded (filter, outcome, counts at ``as_of``); the confirmation is checked against it, writes one
audit entry for the whole action, then changes batches that lock candidates with SKIP LOCKED, each key audited
under that entry; a candidate must have been stuck already at the preview's ``as_of`` and still be stuck now. The
outcomes an outbox row contradicts are guarded as for one key (queries/reclassify.py, ``effect_guard``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from idemdash.core.statuses import BULK_OUTCOMES, BulkOutcome, KeyStatus
from idemdash.queries import Tables, statement
from idemdash.queries.reclassify import effect_guard
from idemdash.queries.transactions import select_all, select_one

BULK_TO_STATUS: dict[BulkOutcome, KeyStatus] = {
    "safe_to_retry": "failed_retryable",
    "abandoned": "failed_final",
    "needs_review": "processing",
}


@dataclass(frozen=True)
class BulkFilter:
    scope: str | None = None
    claimed_by: str | None = None
    min_attempts: int | None = None
    min_overdue_seconds: float | None = None
    suggested: str | None = None  # the suggested outcome of the keys (queries/keys.sql, suggested_outcome)
    # the attempts that make a stuck key's suggestion needs_review (IDEMDASH_HOTSPOT_MIN_ATTEMPTS): what the
    # suggested groups mean, not a filter of its own
    hotspot_min_attempts: int | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The filter as recorded with a preview and in the audit log, and compared at confirmation."""
        recorded: dict[str, Any] = {
            "scope": self.scope,
            "claimed_by": self.claimed_by,
            "min_attempts": self.min_attempts,
            "overdue_seconds": self.min_overdue_seconds,
        }
        if self.suggested is not None:  # absent otherwise: previews recorded before it existed still compare equal
            recorded["suggested"] = self.suggested
        return recorded


@dataclass(frozen=True)
class BulkScopeCount:
    scope: str
    keys: int


@dataclass(frozen=True)
class RecordedPreview:
    preview_id: int
    filter: dict[str, Any]
    to_status: str
    candidates: int
    by_scope: list[dict[str, Any]]
    matches: bool  # same filter and outcome as the confirmation asked about


@dataclass(frozen=True)
class _PreviewId:
    preview_id: int


@dataclass(frozen=True)
class _AuditId:
    audit_id: int


@dataclass(frozen=True)
class BulkSampleRow:
    scope: str
    key: str
    claimed_by: str | None
    attempt_count: int
    locked_until: datetime | None


@dataclass(frozen=True)
class _Count:
    candidates: int


@dataclass(frozen=True)
class _Batch:
    changed: int
    audited: int


def _bulk_params(tables: Tables, flt: BulkFilter, as_of: datetime, lease_seconds: int) -> dict[str, Any]:
    return {
        "scope": flt.scope,
        "claimed_by": flt.claimed_by,
        "min_attempts": flt.min_attempts,
        "min_overdue": flt.min_overdue_seconds,
        "as_of": as_of,
        "lease_seconds": lease_seconds,
        "suggested": flt.suggested,
        "hotspot_min_attempts": flt.hotspot_min_attempts,
    }


# a bulk action judges each key's suggested outcome at its preview's time, not at the confirmation's: a key whose
# replay window ended in between is not moved from safe_to_retry to abandoned behind the operator's back
_SUGGESTED_AT_PREVIEW = sql.SQL("%(as_of)s::timestamptz")


def _bulk_filter(tables: Tables, to: str, *, guarded: bool = True) -> sql.Composable:
    return statement(
        "fragment_bulk_filter",
        tables,
        effect_guard=effect_guard(tables, to, override=not guarded),
        suggested_at=_SUGGESTED_AT_PREVIEW,
    )


def count_bulk_candidates(
    conn: psycopg.Connection,
    tables: Tables,
    flt: BulkFilter,
    as_of: datetime,
    *,
    to: str,
    lease_seconds: int,
    guarded: bool = True,
) -> int:
    """How many keys the bulk action would change; ``guarded=False`` counts those with an outbox row too."""
    query = statement("count_bulk_candidates", tables, bulk_filter=_bulk_filter(tables, to, guarded=guarded))
    row = select_one(conn, query, _bulk_params(tables, flt, as_of, lease_seconds), _Count)
    return row.candidates if row else 0


def list_bulk_sample(
    conn: psycopg.Connection,
    tables: Tables,
    flt: BulkFilter,
    as_of: datetime,
    *,
    to: str,
    lease_seconds: int,
    limit: int = 20,
) -> list[BulkSampleRow]:
    query = statement("list_bulk_sample", tables, bulk_filter=_bulk_filter(tables, to))
    return select_all(conn, query, _bulk_params(tables, flt, as_of, lease_seconds) | {"limit": limit}, BulkSampleRow)


def count_bulk_candidates_by_scope(
    conn: psycopg.Connection,
    tables: Tables,
    flt: BulkFilter,
    as_of: datetime,
    *,
    to: str,
    lease_seconds: int,
    limit: int = 50,
) -> list[BulkScopeCount]:
    query = statement("count_bulk_candidates_by_scope", tables, bulk_filter=_bulk_filter(tables, to))
    return select_all(conn, query, _bulk_params(tables, flt, as_of, lease_seconds) | {"limit": limit}, BulkScopeCount)


def insert_bulk_preview(
    conn: psycopg.Connection,
    flt: BulkFilter,
    to: str,
    as_of: datetime,
    *,
    candidates: int,
    by_scope: list[BulkScopeCount],
    actor: str,
) -> int:
    row = select_one(
        conn,
        statement("insert_bulk_preview"),
        {
            "as_of": as_of,
            "filter": Jsonb(flt.to_json()),
            "to": to,
            "candidates": candidates,
            "by_scope": Jsonb([{"scope": s.scope, "keys": s.keys} for s in by_scope]),
            "actor": actor,
        },
        _PreviewId,
    )
    assert row is not None
    return row.preview_id


def get_bulk_preview(conn: psycopg.Connection, flt: BulkFilter, to: str, as_of: datetime) -> RecordedPreview | None:
    """The preview recorded at ``as_of`` (preferring one with this filter and outcome); None if there is none."""
    return select_one(
        conn, statement("get_bulk_preview"), {"as_of": as_of, "filter": Jsonb(flt.to_json()), "to": to}, RecordedPreview
    )


def insert_bulk_audit(
    conn: psycopg.Connection,
    flt: BulkFilter,
    to: BulkOutcome,
    as_of: datetime,
    *,
    reason: str,
    actor: str,
    bulk_id: uuid.UUID,
    preview: RecordedPreview,
    cap: int,
) -> int:
    """The bulk action's one audit entry; call in the transaction of its first batch."""
    row = select_one(
        conn,
        statement("insert_bulk_audit"),
        {
            "actor": actor,
            "action": f"reclassify-bulk:{to}",
            "scope": flt.scope,
            "to_status": BULK_TO_STATUS[to],
            "reason": reason,
            "evidence": Jsonb(
                [
                    f"every key changed was stuck at the preview ({as_of.isoformat()}) and still stuck "
                    "when it was changed"
                ]
            ),
            "detail": Jsonb(
                {
                    "bulk_id": str(bulk_id),
                    "as_of": as_of.isoformat(),
                    "filter": flt.to_json(),
                    "previewed": preview.candidates,
                    "previewed_by_scope": preview.by_scope,
                    "cap": cap,
                }
            ),
        },
        _AuditId,
    )
    assert row is not None
    return row.audit_id


def reclassify_bulk_batch(
    conn: psycopg.Connection,
    tables: Tables,
    flt: BulkFilter,
    as_of: datetime,
    *,
    to: str,
    reason: str,
    actor: str,
    lease_seconds: int,
    replay_horizon_seconds: int,
    batch_size: int,
    parent_id: int,
    hold_seconds: float = 86400.0,
) -> int:
    """One batch in the caller's transaction; returns how many keys changed (0: none left that it could lock).
    ``hold_seconds``: how long needs_review holds each key."""
    if to not in BULK_OUTCOMES:
        raise ValueError(f"bulk reclassification is only {' or '.join(BULK_OUTCOMES)}")
    query = statement(
        "reclassify_bulk_batch",
        tables,
        bulk_filter=_bulk_filter(tables, to),
        set_clause=statement(f"fragment_set_{to}"),
    )
    params = _bulk_params(tables, flt, as_of, lease_seconds) | {
        "batch_size": batch_size,
        "actor": actor,
        "action": f"reclassify-bulk:{to}",
        "reason": reason,
        "replay_horizon_seconds": replay_horizon_seconds,
        "parent_id": parent_id,
        "hold_seconds": hold_seconds,
    }
    row = select_one(conn, query, params, _Batch)
    assert row is not None and row.changed == row.audited
    return row.changed
