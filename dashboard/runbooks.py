"""`/runbook`: the index of the built-in runbooks, each with when to open it. The runbooks themselves stay where
they were (`/runbook/stuck-keys` in keys.py, `/runbook/outbox-backlog` in outbox_rows.py): alerts link to them."""
from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, current_app

from idemdash.dashboard.web import render

bp = Blueprint("runbooks", __name__)


@dataclass(frozen=True)
class Runbook:
    name: str          # what IDEMDASH_RUNBOOK_URL's {runbook} is filled with
    endpoint: str
    title: str
    when: str          # the alert or the symptom that sends someone here
    covers: str


RUNBOOKS = (
    Runbook("stuck-keys", "keys.runbook", "Stuck idempotency keys",
            "The alert says keys are stuck in processing, or clients report \"still processing\" for a request "
            "that never finishes.",
            "What a stuck key means, how to tell from its evidence whether its work happened, and how to reclassify "
            "it (already succeeded, safe to retry, abandoned, needs review), one key or many; the SQL to look by "
            "hand."),
    Runbook("outbox-backlog", "outbox_rows.runbook", "Outbox backlog growing",
            "The alert says the outbox backlog or its lag is growing: events are written but not published.",
            "Is the publisher running, one event type or all, poison rows, a publisher stuck in a transaction, "
            "or load; what never to do; the SQL to look by hand."),
)


@bp.get("/runbook")
def index():
    return render("runbooks.html", None, runbooks=RUNBOOKS, own_url=current_app.config["RUNBOOK_URL"])
