"""`/hotspots` on a database whose tables record no operator's decisions: per role table that records attempts, the
rows with the most, by group and by owner where the table records them; a table that records no attempts says so."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

from idemdash.core.profiles.dimensions import ROLES, role_table
from idemdash.dashboard import panels, profile_reads
from idemdash.dashboard.schemas import profile_dimensions as schema
from idemdash.dashboard.targets import get_target
from idemdash.queries import hotspots, profile_dimensions

TOP_ROWS = 20


def _read(conn: Any, found: Any, settings: Any, min_attempts: int, window: Any) -> dict[str, dict[str, Any]]:
    """Per role whose table the database has: that table as it is here, and its hotspots where it records attempts."""
    read: dict[str, dict[str, Any]] = {}
    for role in ROLES:
        table = profile_dimensions.present_table(conn, found, role)
        if table is None:
            continue
        read[role] = {"table": table}
        if table.attempts is None:
            continue
        args = {"min_attempts": min_attempts, "window": window}
        read[role] |= {
            "top": profile_dimensions.list_attempt_rows(conn, found, table, settings, limit=TOP_ROWS, **args),
            "by_group": profile_dimensions.list_attempt_groups(conn, found, table, settings, by="group", **args)
            if table.groups
            else None,
            "by_owner": profile_dimensions.list_attempt_groups(conn, found, table, settings, by="owner", **args)
            if table.owner
            else None,
            "stuck_recorded": profile_dimensions.recorded(found, role, "stuck"),
        }
    return read


def load(window: str, min_attempts: int) -> panels.Panel[schema.ProfileHotspots]:
    """The page's one panel (a timeout degrades it), whose value is the JSON answer."""
    span = hotspots.WINDOWS[window]
    as_of = datetime.now(timezone.utc)
    panel = profile_reads.load(_read, get_target().settings, min_attempts, span)
    if not panel.ok:
        return panel  # type: ignore[return-value]  # a degraded panel holds no value of either type
    return panels.Panel(value=_answer(panels.require(panel), window, min_attempts, as_of))


def _answer(read: profile_reads.Read, window: str, min_attempts: int, as_of: datetime) -> schema.ProfileHotspots:
    chosen = profile_reads.chosen()
    span = hotspots.WINDOWS[window]
    by_role = read.value or {}
    tables = [_table(role, read.found.table(role) if read.found else None, by_role.get(role)) for role in ROLES]
    windowed = any(t["window_applies"] for t in tables) and span is not None
    return schema.ProfileHotspots.model_validate(
        {
            "profile": chosen.name,
            "library": chosen.library,
            "problem": read.problem,
            "as_of": as_of,
            "window": window,
            "since": as_of - span if windowed and span is not None else None,
            "min_attempts": min_attempts,
            "tables": tables,
            "definitions": {
                "hotspot": f"a row whose attempts column is at least {min_attempts}, in any state",
                "window": "rows whose change time (the table's column that records when a row last changed) is within "
                "the window; a table that records none counts every row (window_applies false)",
                "stuck": "the library's own stuck rule, as /tables counts it; null where the library records none",
                "by_group": "hotspot rows per value of the table's group columns, the "
                f"{profile_dimensions.GROUP_LIMIT} "
                "with the most first",
                "by_owner": "hotspot rows per owner (the owner column, as text)",
                "top_rows": f"the {TOP_ROWS} rows with the most attempts, then by identity",
            },
        }
    )


def _groups(rows: list | None, field: str, stuck_known: bool) -> list | None:
    if rows is None:
        return None
    return [
        {
            field: g.group_values,
            "rows": g.rows,
            "stuck": g.stuck if stuck_known else None,
            "max_attempts": g.max_attempts,
        }
        for g in rows[: profile_dimensions.GROUP_LIMIT]
    ]


def _table(role: str, name: str | None, read: dict[str, Any] | None) -> dict[str, Any]:
    table = read["table"] if read else role_table(profile_reads.chosen(), role)
    got = read if read and "top" in read else None
    stuck_known = bool(got and got["stuck_recorded"])
    return {
        "role": role,
        "table": name,
        **{dim: asdict(profile_reads.dimension(table, dim, role)) for dim in ("attempts", "group", "owner")},
        "window_applies": table is not None and profile_dimensions.window_applies(table),
        "by_group": _groups(got["by_group"], "group", stuck_known) if got else None,
        "by_owner": _groups(got["by_owner"], "owner", stuck_known) if got else None,
        "top_rows": [
            {
                "identity": r.identity,
                "attempts": r.attempts,
                "group": r.group_values,
                "owner": r.owner,
                "stuck": r.stuck if stuck_known else None,
                "url": profile_reads.row_url(role, r.identity),
            }
            for r in got["top"]
        ]
        if got
        else None,
        "truncated": bool(
            got
            and any(
                g is not None and len(g) > profile_dimensions.GROUP_LIMIT for g in (got["by_group"], got["by_owner"])
            )
        ),
    }
