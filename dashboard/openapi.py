"""`GET /api/v1/openapi.json`: the JSON API described as OpenAPI 3.1 (docs/api.md is the contract)."""
from __future__ import annotations

from typing import Any

from flask import Blueprint, jsonify

bp = Blueprint("openapi", __name__)


def _q(name: str, description: str, schema: dict | None = None) -> dict:
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": schema or {"type": "string"}}


def _path(name: str, description: str) -> dict:
    return {"name": name, "in": "path", "required": True, "description": description, "schema": {"type": "string"}}


CURSOR = _q("cursor", "Opaque: the next_cursor of the previous page.")
LIMIT = _q("limit", "Rows per page.", {"type": "integer", "minimum": 1, "maximum": 500, "default": 50})
ERRORS = {code: {"$ref": f"#/components/responses/{name}"}
          for code, name in (("400", "BadInput"), ("503", "Unavailable"))}
ACTION_ERRORS = {code: {"$ref": f"#/components/responses/{name}"}
                 for code, name in (("400", "BadInput"), ("403", "Forbidden"), ("404", "NotFound"),
                                    ("409", "Conflict"), ("415", "NotJson"),
                                    ("503", "Unavailable"))}


def _get(summary: str, parameters: list[dict], extra: dict | None = None) -> dict:
    return {"get": {"summary": summary, "parameters": parameters,
                    "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}},
                                  **ERRORS, **(extra or {})}}}


def _post(summary: str, body: dict, ok: str = "200") -> dict:
    return {"post": {"summary": summary,
                     "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
                     "responses": {ok: {"description": "Done", "content": {"application/json": {"schema": {"type": "object"}}}},
                                   **ACTION_ERRORS}}}


KEY_FILTERS = [
    _q("scope", "Only this scope."),
    _q("claimed_by", "Only keys last claimed by this worker."),
    _q("min_attempts", "attempt_count at least this.", {"type": "integer", "minimum": 1}),
    _q("overdue", "Lease ended at least this long ago: 90s, 10m, 2h, 1d (stuck/processing only)."),
]

SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "idemdash JSON API", "version": "1",
             "description": "Every page's JSON twin, and the operator actions. Times are ISO 8601 with a zone. "
                            "Lists are {items, next_cursor}. Errors are {error} with a 4xx/503 status."},
    "paths": {
        "/api/v1/overview": _get("Headline numbers", [
            _q("range", "Time range of the trends (default 24h).", {"type": "string", "enum": ["1h", "6h", "24h", "7d"]})]),
        "/api/v1/keys": _get("Key list, with prev_cursor and the count of every state (exact up to count_cap)", [
            _q("status", "Which keys.", {"type": "string", "enum": ["stuck", "needs_review", "processing", "succeeded",
                                                                     "failed_retryable", "failed_final"]}),
            *KEY_FILTERS,
            _q("order", "asc or desc by the list's sort column: lease end (stuck, needs_review, processing; default "
                        "asc) or last change (default desc).", {"type": "string", "enum": ["asc", "desc"]}),
            _q("cursor", "Opaque: the next_cursor or prev_cursor of another page."), LIMIT]),
        "/api/v1/search": _get("Find a key: exact in every scope (or one), else by prefix; scopes and workers by name", [
            {**_q("q", "The key, or the start of one ('scope/key' and a pasted key URL work too)."), "required": True},
            _q("scope", "Only this scope (prefix search lists up to 50 keys of it).")]),
        "/api/v1/keys/{scope}/{key}": _get("One key with evidence (the key may contain '/')",
                                           [_path("scope", "Idempotency scope."), _path("key", "Idempotency key.")],
                                           {"404": {"$ref": "#/components/responses/NotFound"}}),
        "/api/v1/key": _get("One key, for keys a path cannot carry", [
            {**_q("scope", "Idempotency scope."), "required": True},
            {**_q("key", "Idempotency key."), "required": True}], {"404": {"$ref": "#/components/responses/NotFound"}}),
        "/api/v1/hotspots": _get("Retry hotspots", [_q("min_attempts", "Hotspot threshold.",
                                                       {"type": "integer", "minimum": 1}),
                                                    _q("window", "Keys whose updated_at is within this window "
                                                       "(default 24h; all: every key).",
                                                       {"type": "string", "enum": ["1h", "24h", "7d", "all"]})]),
        "/api/v1/suppression": _get("First-attempt vs retried keys per scope", [
            _q("window", "Time window.", {"type": "string", "enum": ["1h", "24h", "7d"]})]),
        "/api/v1/outbox": _get("Outbox backlog and rows", [
            _q("status", "Row status (default pending)."), _q("event_type", "Only this event type."), CURSOR, LIMIT]),
        "/api/v1/outbox/poison": _get("Likely poison rows: pending, many delivery attempts, oldest first", [
            _q("min_attempts", "At least this many attempts (3 or more).", {"type": "integer", "minimum": 3}),
            CURSOR, LIMIT]),
        "/api/v1/outbox/{outbox_id}": _get("One outbox row with its payload and the key it was written under",
                                           [{**_path("outbox_id", "The row's outbox_id."),
                                             "schema": {"type": "string", "format": "uuid"}}],
                                           {"404": {"$ref": "#/components/responses/NotFound"}}),
        "/api/v1/inbox": _get("Inbox volume per consumer", [_q("consumer", "Consumer name contains.")]),
        "/api/v1/audit": _get("Operator actions, one item per decision (a bulk action's keys: parent=)", [
            _q("scope", "Scope."), _q("key", "Key (its history includes the per-key rows of bulk actions)."),
            _q("actor", "Who."), _q("parent", "The per-key rows of this bulk action (its audit_id).",
                                    {"type": "integer", "minimum": 1}),
            _q("action", "The kind of action.", {"type": "string", "enum": ["reclassify", "reclassify-bulk", "purge",
                                                                             "purge-dry-run", "purge-cancel", "note", "outbox-park",
                                                                             "outbox-release"]}),
            _q("since", "From this time (ISO 8601, UTC unless it names a zone), or this long ago (24h)."),
            _q("until", "Up to this time, or this long ago."), CURSOR, LIMIT]),
        "/api/v1/purges": _get("Purge history, running runs and schedule", [
            _q("table", "Only this table's runs.", {"type": "string", "enum": ["keys", "inbox", "outbox"]}),
            _q("run_id", "Only this run.", {"type": "integer", "minimum": 1}), CURSOR, LIMIT]),
        "/api/v1/databases": _get("Every database this dashboard serves, with its headline numbers (reachable or not)", []),
        "/api/v1/health/schema": _get("Schema, retention and operational checks (the /health findings)", []),
        "/api/v1/keys/reclassify": _post("Reclassify one stuck key", {
            "type": "object", "required": ["scope", "key", "to", "reason"],
            "properties": {"scope": {"type": "string"}, "key": {"type": "string"},
                           "to": {"enum": ["safe_to_retry", "abandoned", "already_succeeded", "needs_review"]},
                           "reason": {"type": "string", "minLength": 1, "maxLength": 2000},
                           "expected_attempt_count": {"type": "integer"},
                           "expected_locked_until": {"type": ["string", "null"], "format": "date-time"},
                           "result_ref_type": {"type": "string"}, "result_ref_id": {"type": "string", "format": "uuid"},
                           "response_body": {}, "hold_for": {"type": ["string", "number"]},
                           "override_evidence": {"type": "boolean"}}}),
        "/api/v1/keys/reclassify-bulk": _post("Preview, then reclassify many stuck keys", {
            "type": "object", "required": ["to"],
            "properties": {"filter": {"type": "object", "properties": {
                               "scope": {"type": "string"}, "claimed_by": {"type": "string"},
                               "min_attempts": {"type": "integer"}, "overdue": {"type": ["string", "number"]}}},
                           "to": {"enum": ["safe_to_retry", "abandoned"]}, "reason": {"type": "string"},
                           "as_of": {"type": "string", "format": "date-time"}, "preview": {"type": "boolean"},
                           "all_scopes": {"type": "boolean"}}}),
        "/api/v1/keys/notes": _post("Write a triage note on a key (shown in its history and in the audit log)", {
            "type": "object", "required": ["scope", "key", "text"],
            "properties": {"scope": {"type": "string"}, "key": {"type": "string"},
                           "text": {"type": "string", "minLength": 1, "maxLength": 4000}}}, "201"),
        **{f"/api/v1/outbox/{action}": _post(summary, {
            "type": "object", "required": ["outbox_id", "reason"],
            "properties": {"outbox_id": {"type": "string", "format": "uuid"},
                           "reason": {"type": "string", "minLength": 1, "maxLength": 2000},
                           "expected_attempt_count": {"type": "integer", "minimum": 0}}})
           for action, summary in (("park", "Park a pending outbox row: the relay leaves it alone until released"),
                                   ("release", "Release a parked outbox row back to pending"))},
        "/api/v1/purges/{run_id}/cancel": {"post": {
            **_post("Cancel a running purge: it stops after its current batch", {
                "type": "object", "properties": {"reason": {"type": "string", "maxLength": 2000}},
                "additionalProperties": False}, "202")["post"],
            "parameters": [{"name": "run_id", "in": "path", "required": True,
                            "schema": {"type": "integer", "minimum": 1}}]}},
        "/api/v1/purges/run": _post("Start a purge run now", {
            "type": "object", "required": ["table", "dry_run"],
            "properties": {"table": {"enum": ["keys", "inbox", "outbox"]}, "dry_run": {"type": "boolean"}}}, "202"),
    },
    "components": {"responses": {
        name: {"description": description, "content": {"application/json": {"schema": {
            "type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}}}}
        for name, description in (("BadInput", "Bad input: the message says what to send"),
                                  ("Forbidden", "Not allowed (viewer, read-only mode, cross-origin)"),
                                  ("NotFound", "No such key or outbox row"),
                                  ("Conflict", "State changed: nothing was overwritten"),
                                  ("NotJson", "The body must be application/json"),
                                  ("Unavailable", "Database unreachable, or a query timed out (the message names the index)"))}},
}


@bp.get("/api/v1/openapi.json")
def spec():
    return jsonify(SPEC)
