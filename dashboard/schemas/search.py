"""The search box (`GET /api/v1/search`): a key whatever its scope, keys by prefix, scopes and workers by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from idemdash.dashboard.schemas.common import SAYS_SOMETHING, Answer, Name, Query
from idemdash.queries import search
from idemdash.queries.search import MessageHit, SearchMatch

MAX_QUERY = 10_000  # keys are arbitrary text; a primary-key entry holds at most about 2,700 bytes anyway

# what to find: white space around it is trimmed, so it must hold something else
SearchFor = Annotated[str, Field(min_length=1, max_length=MAX_QUERY, pattern=SAYS_SOMETHING)]


class SearchQuery(Query):
    q: SearchFor = Field(
        description="The key to find (exact, in every scope, or in scope), or the start of one; "
        "'scope/key', 'scope key' and a pasted key page address are understood too. "
        "White space around it is trimmed."
    )
    scope: Name | None = Field(None, description="Only this scope (white space around it trimmed).")


class SearchPageQuery(SearchQuery):
    """The page: without q it explains what to paste."""

    q: SearchFor | None = None  # type: ignore[assignment]  # the page's q is optional


# the answer's rows are the queries' rows with their page (a pydantic model cannot extend a dataclass)
@dataclass(frozen=True)
class SearchHit(search.SearchHit):
    url: Annotated[str, Field(description="The key's page.")]


@dataclass(frozen=True)
class OutboxHit(search.OutboxHit):
    url: Annotated[str, Field(description="The outbox row's page.")]


@dataclass(frozen=True)
class NearKey(search.NearKey):
    url: Annotated[str, Field(description="The key's page.")]


class SearchDefinitions(Answer):
    match: str
    items: str
    scopes: str
    workers: str
    q: str
    outbox: str
    messages: str
    nearest: str
    scopes_truncated: str


_HIT: dict[str, Any] = {
    "scope": "capture_payment",
    "key": "cart/1/checkout-0001",
    "status": "processing",
    "claimed_by": "worker-1",
    "attempt_count": 2,
    "locked_until": "2026-11-24T21:41:48.147136+00:00",
    "updated_at": "2026-11-24T20:47:48.147136+00:00",
    "stuck": True,
    "url": "/keys/capture_payment/cart/1/checkout-0001",
}


class SearchResult(Answer):
    model_config = ConfigDict(
        from_attributes=True,
        frozen=True,
        json_schema_extra={
            "examples": [
                {
                    "q": "cart/1",
                    "scope": None,
                    "match": "prefix",
                    "items": [
                        _HIT,
                        {
                            **_HIT,
                            "key": "cart/10/checkout-0010",
                            "claimed_by": "worker-2",
                            "attempt_count": 5,
                            "locked_until": "2026-11-24T21:32:48.159254+00:00",
                            "updated_at": "2026-11-24T20:47:48.159254+00:00",
                            "url": "/keys/capture_payment/cart/10/checkout-0010",
                        },
                    ],
                    "next_cursor": None,
                    "scopes": [],
                    "workers": [],
                    "scopes_searched": 4,
                    "scopes_truncated": False,
                    "prefix_limited": False,
                    "outbox": [],
                    "messages": [],
                    "nearest": [],
                    "definitions": {
                        "match": "exact: keys named exactly q (in scope, or in every scope; 'scope/key' and a pasted "
                        "key URL are "
                        "understood too); prefix: no exact match, keys starting with q; none: neither",
                        "items": "exact matches, or at most 50 prefix matches (with no scope: at most 5 per scope)",
                        "scopes": "scope names containing q, ignoring case",
                        "workers": "workers (claimed_by) named q exactly (first), then those containing q ignoring "
                        "case (at "
                        "most 20), whatever their keys' state: among the owners of failed keys (the first 2000 by "
                        "name; by its exact name any of them), of the 2000 latest succeeded keys and of the 2000 "
                        "processing keys with the latest and with the oldest leases",
                        "q": "the text searched, white space around it trimmed; a UUID-shaped text is also looked for "
                        "in lower "
                        "and upper case",
                        "outbox": "outbox rows whose outbox_id is q, else those whose aggregate_id is q (at most 20; "
                        "only when q "
                        "is a UUID and no scope is named)",
                        "messages": "inbox rows whose message_id is q, in every consumer (at most 20)",
                        "nearest": "when nothing else matched: the keys just before and after q in each scope's key "
                        "order that "
                        "share a start with it, longest shared start first (at most 5)",
                        "scopes_truncated": "true when there are more than 1000 scopes: keys in the others were not "
                        "looked for "
                        "(name the scope)",
                    },
                }
            ]
        },
    )

    q: str = Field(description="The text searched, white space around it trimmed.")
    scope: str | None
    match: SearchMatch
    items: list[SearchHit]
    next_cursor: None = Field(description="Always null: the matches come in one answer.")
    scopes: list[str] = Field(description="Scope names containing q, ignoring case.")
    workers: list[str] = Field(
        description="Workers (claimed_by) named q (first) or containing it, ignoring case, "
        "whatever their keys' state: among the owners of failed keys, of recently "
        "succeeded keys and of processing keys. Their keys: "
        "/keys?claimed_by=NAME; every worker: /workers."
    )
    scopes_searched: int
    scopes_truncated: bool = Field(description="More scopes exist than were searched: name the scope.")
    prefix_limited: bool = Field(description="More keys may start with q than are listed.")
    outbox: list[OutboxHit]
    messages: list[MessageHit]
    nearest: list[NearKey] = Field(description="When nothing else matched: the keys nearest q in key order.")
    definitions: SearchDefinitions
