"""The examples of the profile-shaped answers (schemas/profile_pages.py, schemas/profile_overview.py): a Spring Modulith
v2 database (tests/test_profile_on_call.py's rows), trimmed."""

from __future__ import annotations

from typing import Any

from idemdash.dashboard.schemas.examples import AS_OF

# the examples: a Spring Modulith v2 database (tests/test_profile_on_call.py's rows), trimmed
SPRING = "Spring Modulith event publication registry"


HEAD: dict[str, Any] = {"database": "events", "profile": "spring-modulith", "library": SPRING}


NOTES: dict[str, Any] = {
    "pending": "the registry's own 'incomplete'",
    "in progress": "no owner or lease is recorded",
    "stuck": "the staleness monitor's rule, measured from publication_date",
    "done": "exactly the rows that are not incomplete",
    "failed": "findFailedPublications",
    "purgeable": "completed before the retention",
}


COUNTS: dict[str, Any] = {"pending": 2, "in progress": 1, "stuck": 1, "done": 3, "failed": 1, "purgeable": 2}


NO_KEYS = f"{SPRING} has no keys table: its tables are event_publication (outbox), event_publication_archive (archive)"


OUTBOX_PANEL: dict[str, Any] = {
    "role": "outbox",
    "table": "event_publication",
    "no_table": None,
    "stuck": 1,
    "in_progress": 1,
    "pending": 2,
    "failed": 1,
    "done": 3,
    "done_24h": 1,
    "lag_seconds": 3600.5,
    "poison": 1,
    "poison_oldest_seconds": 2.1,
    "poison_threshold": 3,
    "not_recorded": {},
    "states": [
        {"meaning": m, "count": n, "recorded": True, "note": NOTES[m], "computed_at": None, "estimated": False}
        for m, n in COUNTS.items()
    ],
}


ABSENT_PANEL: dict[str, Any] = {
    "role": "keys",
    "table": None,
    "no_table": NO_KEYS,
    "stuck": None,
    "in_progress": None,
    "pending": None,
    "failed": None,
    "done": None,
    "done_24h": None,
    "lag_seconds": None,
    "poison": None,
    "poison_oldest_seconds": None,
    "poison_threshold": 3,
    "not_recorded": {f: NO_KEYS for f in ("stuck", "in_progress", "pending", "failed", "done", "poison", "done_24h")},
    "states": [
        {
            "meaning": m,
            "count": None,
            "recorded": False,
            "note": f"{m} is not recorded by {SPRING}",
            "computed_at": None,
            "estimated": False,
        }
        for m in COUNTS
    ],
}


ROW: dict[str, Any] = {
    "identity": '["0b8e4f1c-3c55-4f8e-9a57-6c0d2f1e7a10"]',
    "row": {
        "id": "0b8e4f1c-3c55-4f8e-9a57-6c0d2f1e7a10",
        "listener_id": "l",
        "event_type": "t",
        "publication_date": "2026-11-24T20:47:48.141880+09:00",
        "completion_date": None,
        "status": "PROCESSING",
        "completion_attempts": 0,
        "last_resubmission_date": None,
    },
}


ROWS: dict[str, Any] = {
    **HEAD,
    "role": "outbox",
    "table": "event_publication",
    "no_table": None,
    "state": "pending",
    "group": None,
    "group_column": None,
    "tabs": [{"meaning": m, "count": n, "recorded": True} for m, n in COUNTS.items() if m != "purgeable"],
    "items": [ROW],
    "next_cursor": None,
    "not_recorded": {"group": f"a group per row is not recorded by {SPRING} for its outbox table"},
    "as_of": AS_OF,
}
