"""The search across every database (`GET /api/v1/databases/search`)."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from idemdash.core.statuses import KeyStatus
from idemdash.dashboard.schemas.common import Answer, Name, Query
from idemdash.dashboard.schemas.search import SearchFor
from idemdash.queries.search import MessageHit


class FleetSearchQuery(Query):
    q: SearchFor = Field(
        description="The exact key (in scope, or in every scope; 'scope/key' and a pasted key page "
        "address are understood too), an inbox message id or an outbox id. White "
        "space around it is trimmed."
    )
    scope: Name | None = Field(None, description="Only this scope; then inbox and outbox are not looked in.")


class FleetSearchPageQuery(FleetSearchQuery):
    q: SearchFor | None = None  # type: ignore[assignment]  # the page's q is optional


class HeldKey(Answer):
    scope: str
    key: str
    status: KeyStatus
    stuck: bool
    url: str = Field(description="The key's page in that database.")


class HeldOutboxRow(Answer):
    outbox_id: str
    status: str
    event_type: str
    url: str = Field(description="The outbox row's page in that database.")


class HeldBy(Answer):
    database: str
    url: str = Field(description="That database's search for it (which opens the one thing it names).")
    keys: list[HeldKey]
    messages: list[MessageHit] = Field(description="Inbox rows whose message_id is q (no scope given).")
    outbox: list[HeldOutboxRow] = Field(description="The outbox row whose outbox_id is q (no scope given).")


class NotAsked(Answer):
    database: str
    why: str = Field(
        description="Its last background ask failed (with its cause), no answer within the deadline "
        "(a host that hangs), the cause of the failure, or another library's tables."
    )


class FleetSearch(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "q": "order-4471",
                    "scope": None,
                    "held_by": [
                        {
                            "database": "orders/orders_eu",
                            "url": "/db/orders/orders_eu/search?q=order-4471",
                            "keys": [
                                {
                                    "scope": "checkout",
                                    "key": "order-4471",
                                    "status": "processing",
                                    "stuck": True,
                                    "url": "/db/orders/orders_eu/keys/checkout/order-4471",
                                }
                            ],
                            "messages": [],
                            "outbox": [],
                        }
                    ],
                    "not_held_by": ["orders/orders_us", "billing"],
                    "not_asked": [
                        {"database": "ledger", "why": "no answer within 2 s (a host that hangs, or a slow one)"}
                    ],
                    "seconds": 2.004,
                    "deadline_seconds": 2.0,
                }
            ]
        },
    )

    q: str
    scope: str | None
    held_by: list[HeldBy] = Field(description="The databases that hold it, in IDEMDASH_CONFIG's order.")
    not_held_by: list[str] = Field(description="The databases asked that do not hold it.")
    not_asked: list[NotAsked] = Field(
        description="The databases that could not be asked, and why: held_by may miss one of these."
    )
    seconds: float = Field(description="How long the lookup took (never much past deadline_seconds).")
    deadline_seconds: float = Field(description="The longest the lookup waits for the databases, all together.")
