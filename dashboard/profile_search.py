"""`/search` on a database whose tables record no operator's decisions: the pasted text looked for among the identity
columns of every role table (a row's whole identity as its URL has it; else each identity column an index starts with,
exactly, and by prefix for a text one), and among the owners where a table records one."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from flask import url_for

from idemdash.core.profiles.dimensions import ROLES, role_table
from idemdash.dashboard import panels, profile_reads
from idemdash.dashboard.schemas import profile_search as schema
from idemdash.queries import profile_dimensions, profile_search


def _read(conn: Any, found: Any, q: str) -> list[dict[str, Any]]:
    read = []
    for role in ROLES:
        table = profile_dimensions.present_table(conn, found, role)
        if table is None:
            continue
        hits, compared = profile_search.find_rows(conn, found, table, q)
        owner = profile_search.find_owner(conn, found, table, q)
        read.append({"role": role, "table": found.table(role), "hits": hits, "compared": compared, "owner": owner})
    return read


def load(q: str) -> panels.Panel[schema.ProfileSearch]:
    panel = profile_reads.load(_read, q)
    if not panel.ok:
        return panel  # type: ignore[return-value]  # a degraded panel holds no value of either type
    read = panels.require(panel)
    chosen = profile_reads.chosen()
    searched = read.value or []
    items = [
        {"role": s["role"], "table": s["table"], "identity": hit, "url": profile_reads.row_url(s["role"], hit)}
        for s in searched
        for hit in s["hits"]
    ]
    absent = [role for role in ROLES if role_table(chosen, role) is None]
    notes = [f"{chosen.library} has no {' or '.join(absent)} table"] if absent else []
    notes += [
        f"{s['table']} ({s['role']}): no index starts with an identity column, so it is not searched"
        for s in searched
        if not s["compared"]
    ]
    return panels.Panel(
        value=schema.ProfileSearch.model_validate(
            {
                "profile": chosen.name,
                "library": chosen.library,
                "problem": read.problem,
                "as_of": datetime.now(timezone.utc),
                "q": q,
                "match": "exact" if items else "none",
                "items": items,
                "workers": [
                    {"role": s["role"], "owner": q, "url": url_for("workers.page")} for s in searched if s["owner"]
                ],
                "searched": [{"role": s["role"], "table": s["table"], "compared": s["compared"]} for s in searched],
                "notes": notes if read.problem is None else [],
            }
        )
    )


def only_place(result: schema.ProfileSearch) -> str | None:
    """The row's page when the text names exactly one row and no owner."""
    if len(result.items) == 1 and not result.workers:
        return result.items[0].url
    return None
