"""One outbox row (`/outbox/<id>`), the likely poison rows (`/outbox/poison`), and
their JSON twins."""

from __future__ import annotations

import uuid
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

from flask import Blueprint, abort

from idemdash.dashboard import contract, one_model, panels, profile_lists, table_rows
from idemdash.dashboard.links import key_url, runbook_url
from idemdash.dashboard.schemas import outbox as schema
from idemdash.dashboard.schemas.profile_pages import ProfilePoison
from idemdash.dashboard.schemas.table_rows import Row
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import outbox

bp = Blueprint("outbox_rows", __name__)


def _rich() -> bool:
    """Whether the outbox records an operator's decisions (the reference tables): else the profile's reads."""
    return one_model.rich(get_target().settings, "outbox")


def _row(outbox_id: uuid.UUID) -> outbox.OutboxDetail:
    row = panels.require(panels.load(outbox.get_outbox_row, get_target().tables, outbox_id))
    if row is None:
        abort(
            404,
            f"no outbox row {outbox_id}: it may have been published and purged "
            "(published rows are kept IDEMDASH_OUTBOX_RETENTION_DAYS)",
        )
    return row


@bp.get("/outbox/<uuid:outbox_id>")
def detail_page(outbox_id: uuid.UUID, action_error: str | None = None, form: Any = None):
    if not _rich():  # a library's outbox row: its row's page, where one uuid tells it apart
        return table_rows.row_page_for("outbox", profile_lists.outbox_identity(outbox_id))
    return render(
        "outbox_row.html",
        None,
        row=_row(outbox_id),
        poison_min=outbox.POISON_MIN_ATTEMPTS,
        runbook=runbook_url("", "", "outbox_backlog", kind="outbox-backlog"),
        action_error=action_error,
        form=form or {},
        done=contract.query(schema.RowPageQuery).done,
    )


@bp.get("/api/v1/outbox/<uuid:outbox_id>")
@contract.operation(
    "One outbox row, every column, with whether its key still exists and whether it is likely poison",
    ok=schema.OutboxRowPage,
    also=(Row,),
    errors=(*contract.READ_ERRORS, 404),
)
def detail_api(outbox_id: uuid.UUID) -> schema.OutboxRowPage | Row:
    if not _rich():
        return table_rows.row_answer("outbox", profile_lists.outbox_identity(outbox_id))
    row = _row(outbox_id)
    return schema.OutboxRowPage.model_validate(
        asdict(row)
        | {
            "key_url": key_url(row.idempotency_scope, row.idempotency_key),
            "likely_poison": row.status == "pending" and row.attempt_count >= outbox.POISON_MIN_ATTEMPTS,
        }
    )


def _poison():
    args = contract.query(schema.PoisonQuery)
    min_attempts, limit, after = args.min_attempts, args.limit, args.cursor
    try:
        # a malformed cursor raises ValueError from inside the query function: bad input, 400
        panel = panels.load(
            outbox.list_outbox_poison,
            get_target().tables,
            min_attempts=min_attempts,
            after=after,
            limit=limit,
            index="index_outbox_poison",
        )
    except ValueError as exc:
        abort(400, str(exc))
    return min_attempts, limit, after, panel


@bp.get("/outbox/poison")
def poison_page():
    if not _rich():
        return profile_lists.poison_page()
    min_attempts, limit, after, panel = _poison()
    return render(
        "outbox_poison.html",
        "poison_panel",
        min_attempts=min_attempts,
        limit=limit,
        after=after,
        panel=panel,
        poison_min=outbox.POISON_MIN_ATTEMPTS,
        as_of=datetime.now(timezone.utc),
        runbook=runbook_url("", "", "outbox_backlog", kind="outbox-backlog"),
    )


@bp.get("/api/v1/outbox/poison")
@contract.operation(
    "Likely poison rows: pending with at least min_attempts delivery attempts, oldest first",
    query=schema.PoisonQuery,
    ok=schema.PoisonPage,
    also=(ProfilePoison,),
)
def poison_api() -> schema.PoisonPage | ProfilePoison:
    if not _rich():
        return profile_lists.poison_answer()
    min_attempts, limit, after, panel = _poison()
    page = panels.require(panel)
    return schema.PoisonPage(
        items=page.items,
        next_cursor=page.next_cursor,
        min_attempts=min_attempts,
        definitions={
            "items": f"pending outbox rows with attempt_count >= min_attempts (at "
            f"least {outbox.POISON_MIN_ATTEMPTS}), oldest first"
        },
    )
