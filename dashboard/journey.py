"""One request across services (`/journey?q=`, `GET /api/v1/journey?q=`): from a key, an outbox row's id, a message
id or an aggregate id to every step the tables of every database served record, and the first step that has not
happened, in words.

At most two rounds, each on the worker's bounded fan-out (dashboard/fan_out.py), one statement per table and database
(queries/journey.py): first every database's key and outbox rows for ``q`` and, unless ``q`` names a key, its inbox
rows of ``q`` as a message id (for a key at most PRODUCERS_SHARE of the deadline); then, when the outbox rows found
have other ids (a key's or an aggregate's messages), every database that answered is asked for their inbox rows.
The whole answer waits at most DEADLINE_SECONDS; a database not answered by then is named, with why. Which consumers
should have a message comes from the learned routes (dashboard/journey_reads.py ``RouteBook``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import quote

from flask import Blueprint, current_app
from markupsafe import Markup, escape

from idemdash.core import journey as model
from idemdash.core.routes import Learned, expected
from idemdash.dashboard import contract
from idemdash.dashboard.databases import database_rows
from idemdash.dashboard.fan_out import ask_all, known_down
from idemdash.dashboard.journey_reads import APPLICATION_NAME, RouteBook, consuming, recorded, unfollowed
from idemdash.dashboard.links import key_url
from idemdash.dashboard.schemas import journey as schema
from idemdash.dashboard.targets import all_targets, app_settings
from idemdash.dashboard.web import render
from idemdash.queries.journey import key_pairs
from idemdash.queries.search_text import as_uuid

bp = Blueprint("journey", __name__)

DEADLINE_SECONDS = 3.0
PRODUCERS_SHARE = 0.6


@dataclass
class Followed:
    journey: model.Journey
    answered: list[str]
    not_answered: dict[str, str]
    not_followed: dict[str, str]
    learned: Learned
    seconds: float
    now: datetime


def route_book() -> RouteBook:
    return current_app.extensions.setdefault("idemdash_routes", RouteBook())


def follow(q: str) -> Followed:
    targets = all_targets()
    keeper = current_app.extensions["idemdash_pools"]
    skip = known_down({row.name: row for row in database_rows()})
    not_followed = unfollowed(targets)
    learned = route_book().current(targets, keeper, skip, DEADLINE_SECONDS)
    started = time.monotonic()
    names_a_key = bool(key_pairs(q)) and as_uuid(q) is None
    # a key's messages always need a second round: the first leaves it time; an id's rarely do (an aggregate's)
    share = PRODUCERS_SHARE if names_a_key else 1.0
    first = ask_all(
        targets,
        recorded(q, inbox=not names_a_key),
        keeper=keeper,
        ends=started + DEADLINE_SECONDS * share,
        application_name=APPLICATION_NAME,
        skip={**skip, **not_followed},
    )
    asked = set() if names_a_key else {q.lower(), *(u for u in [as_uuid(q)] if u)}
    ids = list(
        dict.fromkeys(s.message_id for p in first.answers.values() for s in p.sent if s.message_id.lower() not in asked)
    )
    consumed = [(db, c) for db, p in first.answers.items() for c in p.consumed]
    answered, not_answered = list(first.answers), dict(first.not_answered)
    if ids:  # a key's or an aggregate's messages: their inbox rows, in every database that answered
        second = ask_all(
            {name: targets[name] for name in first.answers},
            consuming(ids),
            keeper=keeper,
            ends=started + DEADLINE_SECONDS,
            application_name=APPLICATION_NAME,
        )
        consumed += [(db, c) for db, rows in second.answers.items() for c in rows]
        answered, not_answered = list(second.answers), {**not_answered, **second.not_answered}
    now = datetime.now(timezone.utc)
    journey = model.follow(
        q,
        [(db, k) for db, p in first.answers.items() for k in p.keys],
        [(db, s) for db, p in first.answers.items() for s in p.sent],
        consumed,
        expected(learned.routes),
        now,
        frozenset(not_answered),
    )
    not_answered = {n: w for n, w in not_answered.items() if n not in not_followed}
    return Followed(journey, answered, not_answered, not_followed, learned, time.monotonic() - started, now)


def trace_url(trace_id: str) -> str | None:
    template = app_settings().trace_url
    return template.replace("{trace_id}", quote(trace_id, safe="")) if template else None


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    return None if start is None or end is None else round((end - start).total_seconds(), 3)


def _consumer(database: str, name: str, row: model.Consumed, published: datetime | None) -> schema.ConsumerStep:
    return schema.ConsumerStep(
        database=database,
        consumer=name,
        state=row.state,
        received_at=row.received_at,
        consumed_at=row.consumed_at,
        after_seconds=_seconds(published, row.consumed_at),
    )


def _message(m: model.Message, now: datetime) -> schema.MessageStep:
    s = m.sent
    published = s.published_at or s.created_at
    trace = model.trace_of(s.traceparent)
    return schema.MessageStep(
        database=m.database,
        message_id=s.message_id,
        event_type=s.event_type,
        status=s.status,
        phase=s.phase,
        attempts=s.attempts,
        created_at=s.created_at,
        published_at=s.published_at,
        spent_seconds=_seconds(s.created_at, s.published_at or (now if s.phase != "published" else None)),
        traceparent=s.traceparent,
        trace_url=trace_url(trace[0]) if trace else None,
        consumers=[_consumer(db, c, row, published) for db, c, row in m.consumed],
        missing=[schema.ExpectedConsumer.model_validate(e) for e in m.missing],
        waiting=[schema.ExpectedConsumer.model_validate(e) for e in m.waiting],
        unknown=[schema.ExpectedConsumer.model_validate(e) for e in m.unknown],
    )


def answer(found: Followed) -> schema.Journey:
    j, now = found.journey, found.now
    keys = [
        schema.KeyStep(
            database=db,
            scope=k.scope,
            key=k.key,
            status=k.status,
            stuck=k.stuck,
            claimed_by=k.claimed_by,
            attempt_count=k.attempt_count,
            created_at=k.created_at,
            updated_at=k.updated_at,
            spent_seconds=_seconds(k.created_at, now if k.status == "processing" else k.updated_at) or 0,
            url=key_url(k.scope, k.key, database=db if len(all_targets()) > 1 else None),
        )
        for db, k in j.keys
    ]
    return schema.Journey(
        q=j.q,
        verdict=j.verdict,
        problems=j.problems,
        keys=keys,
        messages=[_message(m, now) for m in j.messages],
        unmatched=[_consumer(db, c, row, None) for db, c, row in j.unmatched],
        traces=[schema.Trace(trace_id=t, url=trace_url(t)) for t, _ in j.traces],
        answered=found.answered,
        not_answered=[schema.Database(database=n, why=w) for n, w in found.not_answered.items()],
        not_followed=[schema.Database(database=n, why=w) for n, w in found.not_followed.items()],
        routes_learned_at=found.learned.learned_at,
        seconds=round(found.seconds, 3),
        deadline_seconds=DEADLINE_SECONDS,
    )


@bp.app_template_filter("ticks")
def ticks(text: str) -> Markup:
    """A verdict's `names` as code, the rest escaped."""
    return Markup(re.sub(r"`([^`<>]+)`", r"<code>\1</code>", str(escape(text))))


@bp.get("/journey")
def page():
    args = contract.query(schema.JourneyPageQuery)
    q = (args.q or "").strip() or None
    return render("journey.html", "journey_answer", q=q, answer=answer(follow(q)) if q else None)


@bp.get("/api/v1/journey")
@contract.operation(
    "Follow one request across services: a key ('scope/key'), an outbox row's id, a message id or "
    "an aggregate id, through every database's key, outbox and inbox tables, with the first step "
    "that has not happened in words; within a deadline (3 s), naming the databases not answered",
    query=schema.JourneyQuery,
    ok=schema.Journey,
)
def api() -> schema.Journey:
    args = contract.query(schema.JourneyQuery)
    return answer(follow(args.q.strip()))
