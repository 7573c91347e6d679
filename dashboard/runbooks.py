"""`/runbook`, the index of the built-in runbooks, each with when to open it, and the runbooks themselves
(`/runbook/stuck-keys`, `/runbook/outbox-backlog`): alerts link to them. On a database whose tables record no
operator's decisions, each runbook's steps are read off the profile's role tables and what they record
(dashboard/profile_runbooks.py), never off its name."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint

from idemdash.core.triage import OUTCOMES
from idemdash.dashboard import contract, profile_reads, profile_runbooks
from idemdash.dashboard.schemas import key_page as schema
from idemdash.dashboard.targets import app_settings, get_target
from idemdash.dashboard.web import render
from idemdash.queries import outbox
from idemdash.queries.runbook import inspection_sql, outbox_inspection_sql

bp = Blueprint("runbooks", __name__)


@dataclass(frozen=True)
class Runbook:
    name: str  # what IDEMDASH_RUNBOOK_URL's {runbook} is filled with
    endpoint: str
    title: str
    when: str  # the alert or the symptom that sends someone here
    covers: str


RUNBOOKS = (
    Runbook(
        "stuck-keys",
        "runbooks.stuck_keys",
        "Stuck idempotency keys",
        'The alert says keys are stuck in processing, or clients report "still processing" for a request '
        "that never finishes.",
        "What a stuck key means, how to tell from its evidence whether its work happened, and how to reclassify "
        "it (already succeeded, safe to retry, abandoned, needs review), one key or many; the SQL to look by "
        "hand.",
    ),
    Runbook(
        "outbox-backlog",
        "runbooks.outbox_backlog",
        "Outbox backlog growing",
        "The alert says the outbox backlog or its lag is growing: events are written but not published.",
        "Is the publisher running, one event type or all, poison rows, a publisher stuck in a transaction, "
        "or load; what never to do; the SQL to look by hand.",
    ),
)


@bp.get("/runbook")
def index():
    runbooks = RUNBOOKS if profile_reads.rich("keys") else profile_runbooks.index()
    return render("runbooks.html", None, runbooks=runbooks, own_url=app_settings().runbook_url)


@bp.get("/runbook/stuck-keys")
def stuck_keys():
    shown = contract.query(schema.RunbookQuery)
    if not profile_reads.rich("keys"):
        return render("runbook_profile.html", None, runbook=profile_runbooks.stuck())
    return render(
        "runbook_stuck.html",
        None,
        scope=shown.scope,
        key=shown.key,
        outcomes=OUTCOMES,
        inspection=inspection_sql(get_target().tables, shown.scope, shown.key),
    )


@bp.get("/runbook/outbox-backlog")
def outbox_backlog():
    if not profile_reads.rich("outbox"):
        return render("runbook_profile.html", None, runbook=profile_runbooks.backlog())
    return render(
        "runbook_outbox.html",
        None,
        inspection=outbox_inspection_sql(get_target().tables),
        poison_min=outbox.POISON_MIN_ATTEMPTS,
    )
