"""One request across services (`GET /api/v1/journey`) and the routes learned from the tables (`GET /api/v1/routes`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field

from idemdash.dashboard.schemas.common import Answer, Query
from idemdash.dashboard.schemas.search import SearchFor

# the examples docs/api.md shows
_JOURNEY: dict[str, Any] = {
    "q": "checkout/order-4471",
    "verdict": "`payment.captured` (shop) published 10 min ago; missing at `ledger` (ledger): it usually consumes "
    "within 2 s",
    "problems": [
        "`payment.captured` (shop) published 10 min ago; missing at `ledger` (ledger): it usually consumes within 2 s"
    ],
    "keys": [
        {
            "database": "shop",
            "scope": "checkout",
            "key": "order-4471",
            "status": "succeeded",
            "stuck": False,
            "claimed_by": "api-1",
            "attempt_count": 1,
            "created_at": "2026-11-27T09:50:00+00:00",
            "updated_at": "2026-11-27T09:50:02+00:00",
            "spent_seconds": 2.0,
            "url": "/db/shop/keys/checkout/order-4471",
        }
    ],
    "messages": [
        {
            "database": "shop",
            "message_id": "0b5f6a1e-8d0e-4a57-9f43-5d2f1f0c9e11",
            "event_type": "payment.captured",
            "status": "published",
            "phase": "published",
            "attempts": 1,
            "created_at": "2026-11-27T09:50:02+00:00",
            "published_at": "2026-11-27T09:50:03+00:00",
            "spent_seconds": 1.0,
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "trace_url": "https://jaeger.example/trace/4bf92f3577b34da6a3ce929d0e0e4736",
            "consumers": [
                {
                    "database": "billing",
                    "consumer": "billing",
                    "state": "consumed",
                    "received_at": "2026-11-27T09:50:04+00:00",
                    "consumed_at": "2026-11-27T09:50:04+00:00",
                    "after_seconds": 1.2,
                }
            ],
            "missing": [{"database": "ledger", "consumer": "ledger", "usual_seconds": 2.0}],
            "waiting": [],
            "unknown": [],
        }
    ],
    "unmatched": [],
    "traces": [
        {
            "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
            "url": "https://jaeger.example/trace/4bf92f3577b34da6a3ce929d0e0e4736",
        }
    ],
    "answered": ["shop", "billing", "ledger"],
    "not_answered": [{"database": "email", "why": "no answer in time (a host that hangs, or a slow one)"}],
    "not_followed": [],
    "routes_learned_at": "2026-11-27T10:00:00+00:00",
    "seconds": 1.83,
    "deadline_seconds": 3.0,
}
_ROUTES: dict[str, Any] = {
    "routes": [
        {
            "event_type": "payment.captured",
            "producers": ["shop"],
            "sent": 240,
            "consumers": [
                {"database": "billing", "consumer": "billing", "messages": 240, "p50_seconds": 0.8, "p95_seconds": 2.1}
            ],
        }
    ],
    "learned_at": "2026-11-27T10:00:00+00:00",
    "window_seconds": 3600,
    "not_answered": [{"database": "email", "why": "no answer in time (a host that hangs, or a slow one)"}],
}


class JourneyQuery(Query):
    q: SearchFor = Field(
        description="A key as 'scope/key' (or a pasted key page address), an outbox row's id, a "
        "message id or an aggregate id. White space around it is trimmed."
    )


class JourneyPageQuery(JourneyQuery):
    q: SearchFor | None = None  # type: ignore[assignment]  # the page's q is optional


class Database(Answer):
    database: str
    why: str


class KeyStep(Answer):
    database: str
    scope: str
    key: str
    status: str
    stuck: bool
    claimed_by: str | None
    attempt_count: int
    created_at: datetime
    updated_at: datetime
    spent_seconds: float = Field(description="Created to last change (finished), or to now while processing.")
    url: str


class ConsumerStep(Answer):
    database: str
    consumer: str = Field(
        description="The consumer its inbox names (a consumer name, a CAP group), else the database's name."
    )
    state: str = Field(description="consumed, received (not finished) or failed.")
    received_at: datetime | None
    consumed_at: datetime | None
    after_seconds: float | None = Field(
        description="Consumed this long after it was published (written, where "
        "no publishing time is recorded); null: not recorded."
    )


class ExpectedConsumer(Answer):
    database: str
    consumer: str
    usual_seconds: float | None = Field(description="Its usual delay: the 95th percentile in the learned window.")


class MessageStep(Answer):
    database: str
    message_id: str
    event_type: str | None
    status: str = Field(description="The row's status in its library's words.")
    phase: str = Field(description="pending, published, parked or failed.")
    attempts: int | None
    created_at: datetime | None
    published_at: datetime | None
    spent_seconds: float | None = Field(description="Written to published, or to now while not published.")
    traceparent: str | None
    trace_url: str | None = Field(description="IDEMDASH_TRACE_URL filled in with the trace id, when set.")
    consumers: list[ConsumerStep]
    missing: list[ExpectedConsumer] = Field(description="Expected consumers without it long after their usual delay.")
    waiting: list[ExpectedConsumer] = Field(description="Expected consumers without it, still within their delay.")
    unknown: list[ExpectedConsumer] = Field(description="Expected consumers whose database did not answer.")


class Trace(Answer):
    trace_id: str
    url: str | None


class Journey(Answer):
    model_config = ConfigDict(from_attributes=True, frozen=True, json_schema_extra={"examples": [_JOURNEY]})

    q: str
    verdict: str = Field(description="The first step that has not happened, in words (or that none is missing).")
    problems: list[str] = Field(description="Every step not taken: missing consumers, a stuck key, a parked row.")
    keys: list[KeyStep]
    messages: list[MessageStep]
    unmatched: list[ConsumerStep] = Field(description="Inbox rows of q whose outbox row no database answered with.")
    traces: list[Trace]
    answered: list[str] = Field(description="The databases that answered every read.")
    not_answered: list[Database] = Field(
        description="The databases not answered within the deadline, and why: steps there are unknown."
    )
    not_followed: list[Database] = Field(description="Databases whose library records no message id to follow.")
    routes_learned_at: datetime
    seconds: float
    deadline_seconds: float


class RouteConsumer(Answer):
    database: str
    consumer: str
    messages: int
    p50_seconds: float | None
    p95_seconds: float | None


class Route(Answer):
    event_type: str
    producers: list[str]
    sent: int
    consumers: list[RouteConsumer]


class Routes(Answer):
    model_config = ConfigDict(from_attributes=True, frozen=True, json_schema_extra={"examples": [_ROUTES]})

    routes: list[Route]
    learned_at: datetime
    window_seconds: int
    not_answered: list[Database]
