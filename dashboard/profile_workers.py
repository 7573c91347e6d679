"""`/workers` on a database whose tables record no operator's decisions: each owner (the owner dimension: a node, an
executor, a consumer group) of each role table that records one, with the rows it holds in progress and stuck now and
those that failed or were done in the window (where the table records when a row changed; every one otherwise),
worst first. A table that records no owner says so."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

from idemdash.core.profiles.dimensions import ROLES, role_table
from idemdash.core.profiles.shape import DONE, FAILED, IN_PROGRESS, STUCK
from idemdash.dashboard import panels, profile_reads
from idemdash.dashboard.schemas import profile_dimensions as schema
from idemdash.dashboard.targets import get_target
from idemdash.queries import profile_dimensions, workers

# each number of an owner -> the state it counts, and whether the window narrows it
COUNTS = {"in_progress": (IN_PROGRESS, False), "stuck": (STUCK, False), "failed": (FAILED, True), "done": (DONE, True)}


def _read(conn: Any, found: Any, settings: Any, window: Any) -> dict[str, dict[str, Any]]:
    """Per role whose table records an owner: each count's owners (None: the state is not recorded)."""
    read: dict[str, dict[str, Any]] = {}
    for role in ROLES:
        table = profile_dimensions.present_table(conn, found, role)
        if table is None:
            continue
        read[role] = {
            "table": table,
            "counts": None
            if table.owner is None
            else {
                field: profile_dimensions.list_owner_counts(
                    conn, found, table, meaning, settings, window=window if windowed else None
                )
                for field, (meaning, windowed) in COUNTS.items()
            },
        }
    return read


def load(window: str) -> panels.Panel[schema.ProfileWorkers]:
    as_of = datetime.now(timezone.utc)
    panel = profile_reads.load(_read, get_target().settings, workers.WINDOWS[window])
    if not panel.ok:
        return panel  # type: ignore[return-value]  # a degraded panel holds no value of either type
    read = panels.require(panel)
    chosen = profile_reads.chosen()
    by_role = read.value or {}
    items, truncated = _owners({role: r["counts"] for role, r in by_role.items() if r["counts"] is not None})
    tables = []
    for role in ROLES:
        table = by_role[role]["table"] if role in by_role else role_table(chosen, role)
        tables.append(
            {
                "role": role,
                "table": read.found.table(role) if read.found else None,
                "owner": asdict(profile_reads.dimension(table, "owner", role)),
                "window_applies": table is not None and profile_dimensions.window_applies(table),
            }
        )
    limit = profile_dimensions.OWNER_LIMIT
    return panels.Panel(
        value=schema.ProfileWorkers.model_validate(
            {
                "profile": chosen.name,
                "library": chosen.library,
                "problem": read.problem,
                "as_of": as_of,
                "window": window,
                "since": as_of - workers.WINDOWS[window],
                "items": items[:limit],
                "tables": tables,
                "truncated": truncated or len(items) > limit,
                "limit": limit,
                "definitions": {
                    "owners": "every owner (the table's owner column, as text) holding a row in progress or stuck "
                    "now, or "
                    "owning a row that failed or was done in the window; values that mean no owner (Wolverine's "
                    "0, any node) are left out",
                    "in_progress": "rows in the library's in progress state now (the stuck ones may be among them)",
                    "stuck": "rows the library's own stuck rule counts now",
                    "failed": "rows in the library's failed state, changed in the window where the table records when "
                    "a "
                    "row changed (window_applies), every one otherwise",
                    "done": "rows in the library's done state, in the window as failed",
                    "last_seen": "the latest change time among the owner's rows counted here; null where the table "
                    "records none",
                    "order": f"most stuck first, then most failed, then by name; at most {limit}",
                    "null": "a number the library does not record for that table (no such state)",
                },
            }
        )
    )


def _owners(read: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    items: dict[tuple[str, str], dict[str, Any]] = {}
    truncated = False
    for role, counts in read.items():
        for field, rows in counts.items():
            if rows is None:
                continue
            truncated = truncated or len(rows) > profile_dimensions.OWNER_LIMIT
            for row in rows[: profile_dimensions.OWNER_LIMIT]:
                item = items.setdefault((role, row.name), _item(role, row.name, counts))
                item[field] = row.rows
                if row.last_seen is not None and (item["last_seen"] is None or row.last_seen > item["last_seen"]):
                    item["last_seen"] = row.last_seen
    for item in items.values():
        worst = next(
            (
                meaning
                for field, (meaning, _) in (
                    ("stuck", COUNTS["stuck"]),
                    ("failed", COUNTS["failed"]),
                    ("in_progress", COUNTS["in_progress"]),
                )
                if item[field]
            ),
            DONE,
        )
        item["url"] = profile_reads.state_url(item["role"], worst)
    ordered = sorted(items.values(), key=lambda i: (-(i["stuck"] or 0), -(i["failed"] or 0), i["name"], i["role"]))
    return ordered, truncated


def _item(role: str, name: str, counts: dict[str, Any]) -> dict[str, Any]:
    """An owner's numbers: 0 for a state it has no row in, None for one the library does not record."""
    return {
        "name": name,
        "role": role,
        "last_seen": None,
        **{field: None if counts[field] is None else 0 for field in COUNTS},
    }
