"""Bulk reclassification (docs/concepts.md, Reclassification): a preview states the filter in words with a count per
scope and is
recorded; a confirmation must name the same filter and outcome, acts only on keys stuck at the preview and still
stuck, in batches that skip locked rows, and is one audit entry its per-key rows point to."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from idemdash.core.formatting import duration
from idemdash.core.statuses import BulkOutcome
from idemdash.dashboard import contract
from idemdash.dashboard.auth import current_user
from idemdash.dashboard.contract import ActionError
from idemdash.dashboard.schemas.actions import BulkBody
from idemdash.dashboard.targets import get_target
from idemdash.queries import reclassify_bulk
from idemdash.queries.health import database_now

PREVIEW_MAX_AGE = timedelta(minutes=15)
BULK_BATCH = 200
BULK_FILTER_FIELDS = ("scope", "claimed_by", "min_attempts", "overdue", "suggested")


@dataclass(frozen=True)
class BulkRequest:
    flt: reclassify_bulk.BulkFilter
    to: BulkOutcome
    reason: str
    as_of: datetime | None
    all_scopes: bool = False
    previewed: int | None = None  # the count the confirmed preview showed, as the form or the API carries it
    hold_seconds: float = 86400.0  # needs_review: how long each key is held
    preview: bool = False


def bulk_request(body: BulkBody) -> BulkRequest:
    """The request as the queries take it (the body's model checked every field)."""
    raw = body.filter
    flt = reclassify_bulk.BulkFilter(
        scope=raw.scope,
        claimed_by=raw.claimed_by,
        min_attempts=raw.min_attempts,
        min_overdue_seconds=raw.overdue,
        suggested=raw.suggested,
        hotspot_min_attempts=get_target().settings.hotspot_min_attempts,
    )
    return BulkRequest(
        flt,
        body.to,
        body.reason or "",
        body.as_of,
        body.all_scopes,
        body.previewed,
        body.hold_for if body.hold_for is not None else 86400.0,
        body.preview,
    )


def form_request(form: Mapping[str, str], *, preview: bool) -> BulkBody:
    """The stuck list's bulk box as the API's body. Its filter fields come from the list's own filter form
    (hx-include="#filters"); without JavaScript the form carries the ones it was rendered with as default_<name>.
    Empty fields are absent."""
    filters = {k: form[k] if k in form else form.get(f"default_{k}", "") for k in BULK_FILTER_FIELDS}
    data: dict[str, Any] = {
        "filter": {k: v for k, v in filters.items() if v.strip()},
        "to": form.get("to", ""),
        "preview": preview,
        "all_scopes": form.get("all_scopes", "") in ("1", "true", "on"),
    }
    for name in ("reason", "hold_for") + (() if preview else ("as_of", "previewed")):
        if form.get(name, "").strip():
            data[name] = form[name]
    return contract.form(BulkBody, data)


def filter_in_words(flt: Mapping[str, Any]) -> str:
    """A bulk filter (``BulkFilter.to_json()``) as a sentence: what the operator previews and confirms."""
    parts = [f"in scope {flt['scope']!r}" if flt.get("scope") is not None else "in every scope"]
    if flt.get("claimed_by") is not None:
        parts.append(f"claimed by {flt['claimed_by']!r}")
    if flt.get("min_attempts") is not None:
        parts.append(f"with at least {flt['min_attempts']} attempts")
    if flt.get("overdue_seconds") is not None:
        parts.append(f"whose lease ended at least {duration(flt['overdue_seconds'])} ago")
    if flt.get("suggested") is not None:
        parts.append(f"whose suggested outcome is {flt['suggested']}")
    return "stuck keys " + ", ".join(parts) + " (exact matches)"


def bulk_preview(req: BulkRequest) -> dict:
    """Count and sample what the action would change, and record the preview for its confirmation."""
    db = get_target()
    lease = get_target().settings.default_lease_seconds
    with db.write() as conn:
        as_of = database_now(conn)
        count = reclassify_bulk.count_bulk_candidates(conn, db.tables, req.flt, as_of, to=req.to, lease_seconds=lease)
        # both outcomes leave out keys whose effect committed (an outbox row): say how many
        committed = (
            reclassify_bulk.count_bulk_candidates(
                conn, db.tables, req.flt, as_of, to=req.to, lease_seconds=lease, guarded=False
            )
            - count
        )
        by_scope = reclassify_bulk.count_bulk_candidates_by_scope(
            conn, db.tables, req.flt, as_of, to=req.to, lease_seconds=lease
        )
        sample = reclassify_bulk.list_bulk_sample(conn, db.tables, req.flt, as_of, to=req.to, lease_seconds=lease)
        reclassify_bulk.insert_bulk_preview(
            conn, req.flt, req.to, as_of, candidates=count, by_scope=by_scope, actor=current_user().name
        )
    return {
        "as_of": as_of,
        "to": req.to,
        "count": count,
        "left_out_committed": committed,
        "cap": get_target().settings.bulk_max_keys,
        "filter": req.flt.to_json(),
        "filter_text": filter_in_words(req.flt.to_json()),
        "all_scopes": req.flt.scope is None,
        "by_scope": [{"scope": s.scope, "keys": s.keys} for s in by_scope],
        "sample": [s.__dict__ for s in sample],
    }


def bulk_apply(req: BulkRequest) -> dict:
    """Change what the preview at ``req.as_of`` showed, if the request names the same filter and outcome: keys
    that match as the preview judged them (stuck at ``as_of`` and still stuck, each key's suggested outcome as of
    ``as_of``), and never more of them than the preview counted."""
    db = get_target()
    config = get_target().settings
    lease, cap = config.default_lease_seconds, config.bulk_max_keys
    actor = current_user().name
    assert req.as_of is not None
    bulk_id = uuid.uuid4()
    with db.write() as conn:
        now = database_now(conn)
        if now - req.as_of > PREVIEW_MAX_AGE:
            raise ActionError(
                409, "the preview is more than 15 minutes old: preview again and confirm what you see now"
            )
        preview = reclassify_bulk.get_bulk_preview(conn, req.flt, req.to, req.as_of)
        if preview is None:
            raise ActionError(
                409,
                f"no preview was taken at {req.as_of.isoformat()}: preview first, then confirm "
                "with the as_of it returns. Nothing was changed.",
            )
        if not preview.matches:
            raise ActionError(
                409,
                f"this confirmation is for {filter_in_words(req.flt.to_json())} → {req.to}, but "
                f"the preview at {req.as_of.isoformat()} showed {filter_in_words(preview.filter)} "
                f"→ {preview.to_status} (were the filters changed after the preview?). Nothing "
                "was changed: preview again and confirm what it shows.",
            )
        if req.previewed is not None and req.previewed != preview.candidates:
            raise ActionError(
                409,
                f"this confirmation says its preview showed {req.previewed} keys, but the preview "
                f"at {req.as_of.isoformat()} counted {preview.candidates}. Nothing was changed: "
                "preview again and confirm what it shows.",
            )
        if req.flt.scope is None and not req.all_scopes:
            raise ActionError(
                400,
                "this would change stuck keys in every scope: name one scope in the filter, or "
                'confirm that you mean all of them ("all_scopes": true; on the page, tick '
                '"every scope"). Nothing was changed.',
            )
        before = reclassify_bulk.count_bulk_candidates(
            conn, db.tables, req.flt, req.as_of, to=req.to, lease_seconds=lease
        )
        parent_id = reclassify_bulk.insert_bulk_audit(
            conn, req.flt, req.to, req.as_of, reason=req.reason, actor=actor, bulk_id=bulk_id, preview=preview, cap=cap
        )
        # never more than the preview counted: keys that match only since (an outbox row purged meanwhile, …) do
        # not add to what the operator saw
        most = min(cap, preview.candidates)
        changed = n = _bulk_batch(conn, req, parent_id, min(BULK_BATCH, most)) if most else 0
    while n and changed < most:
        with db.write() as conn:
            n = _bulk_batch(conn, req, parent_id, min(BULK_BATCH, most - changed))
        changed += n
    with db.read(primary=True) as conn:
        remaining = reclassify_bulk.count_bulk_candidates(
            conn, db.tables, req.flt, req.as_of, to=req.to, lease_seconds=lease
        )
    return {
        "bulk_id": str(bulk_id),
        "audit_id": parent_id,
        "as_of": req.as_of,
        "to": req.to,
        "filter": req.flt.to_json(),
        "filter_text": filter_in_words(req.flt.to_json()),
        "previewed": preview.candidates,
        "changed": changed,
        "skipped": max(before - changed, 0),
        "still_eligible": remaining,
        "cap": cap,
        "capped": changed >= cap and remaining > 0,
    }


def _bulk_batch(conn, req: BulkRequest, parent_id: int, size: int) -> int:
    assert req.as_of is not None  # bulk_apply's requests carry the preview's time
    config = get_target().settings
    return reclassify_bulk.reclassify_bulk_batch(
        conn,
        get_target().tables,
        req.flt,
        req.as_of,
        to=req.to,
        reason=req.reason,
        actor=current_user().name,
        lease_seconds=config.default_lease_seconds,
        replay_horizon_seconds=config.replay_horizon,
        batch_size=size,
        hold_seconds=req.hold_seconds,
        parent_id=parent_id,
    )
