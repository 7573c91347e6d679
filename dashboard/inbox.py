"""/inbox and its JSON twin: volume per consumer, and each consumer's oldest row against the retention."""

from __future__ import annotations

from dataclasses import asdict, replace
from datetime import datetime, timezone

from flask import Blueprint

from idemdash.dashboard import contract, one_model, panels, profile_inbox, rollups
from idemdash.dashboard.schemas import inbox as schema
from idemdash.dashboard.schemas.profile_pages import ProfileInbox
from idemdash.dashboard.targets import get_target
from idemdash.dashboard.web import render
from idemdash.queries import inbox

bp = Blueprint("inbox", __name__)

OVERDUE: schema.Retention = "purge overdue"
WITHIN: schema.Retention = "within retention"


def _definitions(retention_days: int) -> dict[str, str]:
    return {
        "rows_1h": "inbox rows whose processed_at is within the last hour",
        "rows_24h": "inbox rows whose processed_at is within the last 24 hours",
        "rows_7d": "inbox rows whose processed_at is within the last 7 days",
        "oldest_processed_at": "the earliest processed_at still in the table (not yet purged)",
        "newest_processed_at": "the latest processed_at: when the consumer last recorded a message",
        "retention": f"'{OVERDUE}' when the oldest row is older than the retention ({retention_days} days, "
        f"IDEMDASH_INBOX_RETENTION_DAYS): the inbox purge has not removed it; '{WITHIN}' otherwise",
        "consumers": f"consumers by name, at most {inbox.CONSUMERS_SHOWN}; totals count every consumer",
    }


def _inbox() -> dict:
    consumer = contract.query(schema.InboxQuery).consumer
    retention_days = get_target().settings.inbox_retention_days
    tables = get_target().tables
    # every consumer's 7-day window: precomputed at scale, see dashboard/rollups.py
    consumers, totals = rollups.load(("inbox_consumers", ""), ("inbox_totals", ""))
    if consumer is not None:
        every = consumers.value if consumers.ok and consumers.computed_at is not None else None
        if every is not None and not every.truncated:
            # the precomputed list has every consumer: filter it as the query would (name contains, any case)
            needle = consumer.lower()
            consumers = replace(
                consumers,
                value=inbox.ConsumerList(
                    [c for c in every.items if needle in c.consumer_name.lower()], truncated=False
                ),
            )
        else:
            consumers = panels.load(
                inbox.list_inbox_consumers,
                tables,
                retention_days=retention_days,
                consumer=consumer,
                limit=inbox.CONSUMERS_SHOWN,
                index="index_inbox_consumer",
            )
    return {
        "as_of": datetime.now(timezone.utc),
        "consumer": consumer,
        "retention_days": retention_days,
        "consumers_shown": inbox.CONSUMERS_SHOWN,
        "consumers": consumers,
        "totals": totals,
        "overdue_label": OVERDUE,
        "within_label": WITHIN,
    }


def _retention(overdue: bool) -> schema.Retention:
    return OVERDUE if overdue else WITHIN


@bp.get("/inbox")
def page():
    if not one_model.rich(get_target().settings, "inbox"):  # another library's inbox: through its profile
        return render("profile_inbox.html", "inbox_panel", report=profile_inbox.answer())
    return render("inbox.html", "inbox_panel", **_inbox())


@bp.get("/api/v1/inbox")
@contract.operation(
    "Inbox volume per consumer (1 h, 24 h, 7 d) and each consumer's oldest row against the retention",
    query=schema.InboxQuery,
    ok=schema.Inbox,
    also=(ProfileInbox,),
)
def api() -> schema.Inbox | ProfileInbox:
    if not one_model.rich(get_target().settings, "inbox"):
        return profile_inbox.answer()
    data = _inbox()
    consumers = panels.require(data["consumers"])
    totals = panels.require(data["totals"])
    return schema.Inbox.model_validate(
        {
            "retention_days": data["retention_days"],
            "as_of": data["as_of"],
            "consumer": data["consumer"],
            "consumers": [asdict(c) | {"retention": _retention(c.purge_overdue)} for c in consumers.items],
            "consumers_truncated": consumers.truncated,
            "totals": asdict(totals)
            | {
                "retention": _retention(totals.purge_overdue),
                "consumers_shown": len(consumers.items),
                "consumers_purge_overdue": sum(c.purge_overdue for c in consumers.items),
            },
            "definitions": _definitions(data["retention_days"]),
            "precomputed": rollups.precomputed(consumers=data["consumers"], totals=data["totals"]),
        }
    )
