"""`GET /api/v1/keys/breakdown`: a key list's rows per scope and worker (dashboard/key_breakdown.py); on a database
whose keys table records no operator's decisions, its stuck rows per group and per owner, where the library records
them, and a clear answer where it has no keys table."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

from flask import Blueprint, abort

from idemdash.core.profiles.dimensions import no_table, role_table
from idemdash.dashboard import contract, key_breakdown, key_filters, panels, profile_reads
from idemdash.dashboard.schemas import keys as schema
from idemdash.dashboard.schemas.profile_breakdown import BreakdownAnswer, ProfileBreakdown
from idemdash.dashboard.targets import get_target
from idemdash.queries import profile_dimensions

bp = Blueprint("breakdown", __name__)


@bp.get("/api/v1/keys/breakdown")
@contract.operation(
    "The keys of a tab matching its filters, counted per scope and per worker (claimed_by), most "
    "first; not broken down past cap keys. On a library's database: its stuck rows per group and "
    "per owner, where it records them",
    query=schema.KeyFilterQuery,
    ok=BreakdownAnswer,
)
def api() -> BreakdownAnswer:
    args = contract.query(schema.KeyFilterQuery)
    if not profile_reads.rich("keys"):
        return BreakdownAnswer(_profile(args))
    flt, ignored = key_filters.read(args)
    value = panels.require(key_breakdown.load(flt))
    return BreakdownAnswer(
        schema.KeyBreakdown.model_validate(
            {
                "status": flt.status,
                **value.to_json(),
                "as_of": datetime.now(timezone.utc),
                "not_applied": [{"filter": name, "applies_to": key_filters.APPLIES[name]} for name in ignored],
            }
        )
    )


def _read(conn: Any, found: Any, settings: Any) -> tuple[Any, list[profile_dimensions.Cell] | None]:
    table = profile_dimensions.present_table(conn, found, "keys")
    return table, profile_dimensions.list_stuck_cells(conn, found, table, settings, cap=key_breakdown.CAP)


def _profile(args: schema.KeyFilterQuery) -> ProfileBreakdown:
    chosen = profile_reads.chosen()
    given = [name for name, value in args.model_dump().items() if name != "status" and value is not None]
    if args.status != "stuck" or given:
        abort(
            400,
            f"on a {chosen.library} database the breakdown is of the stuck rows of its keys table, with no "
            f"filter: leave out {', '.join(given) if given else 'status'}",
        )
    table = role_table(chosen, "keys")
    nothing = {"total": None, "too_many": False, "by_group": None, "by_owner": None}
    read = panels.require(profile_reads.load(_read, get_target().settings)) if table is not None else None
    if read is not None and read.value is not None and read.value[0] is not None:
        table = read.value[0]  # as this database has it
    base: dict[str, Any] = {
        "profile": chosen.name,
        "library": chosen.library,
        "as_of": datetime.now(timezone.utc),
        "status": "stuck",
        "cap": key_breakdown.CAP,
        **{dim: asdict(profile_reads.dimension(table, dim, "keys")) for dim in ("group", "owner")},
    }
    if table is None or read is None:
        return ProfileBreakdown.model_validate(
            {**base, **nothing, "problem": None, "table": None, "note": no_table(chosen, "keys")}
        )
    name = read.found.table("keys") if read.found else None
    cells = read.value[1] if read.value is not None else None
    if read.problem or cells is None:
        note = read.problem or f"{chosen.library} records no stuck state for its keys table"
        return ProfileBreakdown.model_validate(
            {**base, **nothing, "problem": read.problem, "table": name, "note": note}
        )
    groups = [c for c in cells if c.dimension == "group"]
    total = sum(c.count for c in groups)
    too_many = total > key_breakdown.CAP
    return ProfileBreakdown.model_validate(
        {
            **base,
            "problem": None,
            "table": name,
            "note": None,
            "total": 0 if too_many else total,
            "too_many": too_many,
            "by_group": None
            if not table.groups
            else []
            if too_many
            else [{"group": json.loads(c.name) if c.name else None, "count": c.count} for c in _worst_first(groups)],
            "by_owner": None
            if not table.owner
            else []
            if too_many
            else [
                {"owner": c.name, "count": c.count} for c in _worst_first([c for c in cells if c.dimension == "owner"])
            ],
        }
    )


def _worst_first(cells: list[profile_dimensions.Cell]) -> list[profile_dimensions.Cell]:
    return sorted(cells, key=lambda c: (-c.count, c.name is None, c.name or ""))
