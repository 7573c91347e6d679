"""The rows that several answers' examples share, as the API writes them: a stuck key, an outbox row that keeps
failing, a purge run. Each answer model puts its one example in its own ``json_schema_extra``; the document
(dashboard/openapi.py) carries it, and tests/test_openapi.py validates each against its schema.

Taken from real answers of the app on tests/world.py's seeded data, trimmed to a row or two per list; the path
examples of dashboard/openapi.py (PATH_EXAMPLES) name the same key and outbox row."""

from __future__ import annotations

from typing import Any

AS_OF = "2026-11-24T21:47:48.351559+00:00"
ACTOR = "alice"
OUTBOX_ID = "6b0e4c55-0d1f-4c43-9d8a-2f2a4a8d1e01"
REQUEST_HASH = "3f1a2b9c07d84e6f9a5b0c1d2e3f40516273849a5b6c7d8e9f00112233445566"

# a processing key whose lease ran out five minutes ago (a KeyItem)
KEY: dict[str, Any] = {
    "scope": "create_order",
    "key": "cart/0/checkout-0000",
    "status": "processing",
    "request_hash": REQUEST_HASH,
    "claimed_by": "worker-0",
    "claimed_at": "2026-11-24T20:47:48.141880+00:00",
    "locked_until": "2026-11-24T21:42:48.141880+00:00",
    "overdue_seconds": 300.209679,
    "attempt_count": 1,
    "created_at": "2026-11-24T20:47:48.141880+00:00",
    "updated_at": "2026-11-24T20:47:48.141880+00:00",
    "expires_at": "2026-11-25T20:47:48.141880+00:00",
    "hold": None,
}
# the same key with every column (a KeyDetail)
KEY_DETAIL: dict[str, Any] = {
    **KEY,
    "response_body": None,
    "result_ref_type": None,
    "result_ref_id": None,
    "failure_code": None,
    "failure_message": None,
    "stuck": True,
}
# another stuck key, marked safe to retry by an operator (a KeyDetail)
RETRYABLE_KEY: dict[str, Any] = {
    **KEY_DETAIL,
    "scope": "capture_payment",
    "key": "cart/1/checkout-0001",
    "status": "failed_retryable",
    "claimed_by": "worker-1",
    "claimed_at": "2026-11-24T20:47:48.147136+00:00",
    "locked_until": None,
    "overdue_seconds": None,
    "attempt_count": 2,
    "created_at": "2026-11-24T20:47:48.147136+00:00",
    "updated_at": "2026-11-24T21:47:48.577950+00:00",
    "expires_at": "2026-11-25T20:47:48.147136+00:00",
    "failure_code": "idemdash_safe_to_retry",
    "failure_message": "INC-7: the payment provider confirmed no charge",
    "stuck": False,
}

# a pending outbox row the relay keeps failing on (a queries.outbox.OutboxRow)
OUTBOX_ROW: dict[str, Any] = {
    "outbox_id": OUTBOX_ID,
    "event_type": "invoice.sent",
    "aggregate_type": "order",
    "aggregate_id": "47e5f0d8-b0e7-4332-b6cc-a1aa6fcfebc3",
    "idempotency_scope": "create_order",
    "idempotency_key": "cart/0/checkout-0000",
    "status": "pending",
    "attempt_count": 14,
    "created_at": "2026-11-24T18:47:48.135812+00:00",
    "published_at": None,
    "age_seconds": 10800.215747,
    "payload": {
        "order_id": "47e5f0d8-b0e7-4332-b6cc-a1aa6fcfebc3",
        "invoice": "INV-2026-000117",
        "total_cents": 4200,
        "currency": "EUR",
    },
}

# a finished run of the keys purge (a PurgeRun, and the overview's LastPurge)
PURGE_RUN: dict[str, Any] = {
    "run_id": 1,
    "table_name": "keys",
    "started_at": "2026-11-24T20:47:48.201660+00:00",
    "finished_at": "2026-11-24T20:48:48.201660+00:00",
    "batches": 3,
    "rows_deleted": 12000,
    "dry_run": False,
    "outcome": "succeeded",
    "error": None,
    "started_by": "scheduler",
    "duration_seconds": 60.0,
    "method": "due_index",
    "partitions_dropped": 0,
    "cancel_requested_by": None,
    "latency_budget": 1.5,
    "probe_baseline_ms": 1.1,
    "probe_p99_ms": 1.6,
    "probes": 5890,
    "backoffs": 14,
    "final_batch_size": 500,
    "final_duty_cycle": 50.0,
    "app_backends": 2,
    "lock_backoffs": 0,
}
# a run of the outbox purge in progress
RUNNING_PURGE: dict[str, Any] = {
    **PURGE_RUN,
    "run_id": 3,
    "table_name": "outbox",
    "started_at": "2026-11-24T21:47:48.205841+00:00",
    "finished_at": None,
    "batches": 4,
    "rows_deleted": 4000,
    "outcome": "running",
    "duration_seconds": 0.147008,
    **dict.fromkeys(
        PACING := (
            "latency_budget",
            "probe_baseline_ms",
            "probe_p99_ms",
            "probes",
            "backoffs",
            "final_batch_size",
            "final_duty_cycle",
            "app_backends",
            "lock_backoffs",
        )
    ),
}


def without_pacing(run: dict[str, Any]) -> dict[str, Any]:
    """A run as the overview lists it: without what its pacer measured (/purges has that)."""
    return {k: v for k, v in run.items() if k not in PACING}
