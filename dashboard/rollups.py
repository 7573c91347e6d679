"""Page panels for the rollups (queries/rollups.py): the stored value while it is fresh and slow to fetch live,
otherwise fetched live like any panel (statement timeout, a degraded panel that names its index). A panel from
a stored rollup carries ``computed_at`` and the page says so.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from psycopg import errors

from idemdash.dashboard import panels
from idemdash.dashboard.targets import get_target
from idemdash.queries import rollup_store, rollups

log = logging.getLogger(__name__)


def load(*wanted: tuple[str, str]) -> list[panels.Panel]:
    """One panel per (rollup name, variant)."""
    target = get_target()
    stored: dict[tuple[str, str], rollup_store.StoredRollup] = {}
    try:
        with target.read() as conn:
            stored = {(r.name, r.variant): r for r in rollup_store.list_rollups(conn, wanted)}
    except (errors.UndefinedTable, errors.InvalidSchemaName, errors.QueryCanceled):
        pass  # idemdash's schema not migrated yet, or the lookup itself timed out: compute live
    return [_panel(target, name, variant, stored.get((name, variant))) for name, variant in wanted]


def _panel(target, name: str, variant: str, stored: rollup_store.StoredRollup | None) -> panels.Panel:
    rollup = rollups.ROLLUPS[name]
    if stored is not None and rollups.usable(stored, rollup):
        try:
            return panels.Panel(
                value=rollup.assemble(rollups.decode_rows(rollup, stored.payload)),
                computed_at=stored.computed_at,
                computed_ms=stored.duration_ms,
            )
        except rollups.RollupDecodeError as exc:
            log.warning("%s; computing it live", exc)
    panel = panels.load(rollup.compute, target.tables, target.settings, variant, index=rollup.index)
    if panel.problem == "timeout":
        hint = (
            f" At this table size the scheduler precomputes it every {rollup.every_seconds} s (rollup "
            f"'{name}'), and no fresh value was stored: is `idemdash scheduler` running?"
        )
        message, marker, rest = (panel.message or "").partition(" This index would make it fast:")
        panel = replace(panel, message=message + hint + marker + rest)
    return panel


def load_one(name: str, variant: str = "") -> panels.Panel:
    return load((name, variant))[0]


def precomputed(**named: panels.Panel) -> dict[str, Any]:
    """For a JSON answer: the sections that came from a rollup, when they were computed and how long that took."""
    return {
        name: {"computed_at": panel.computed_at, "computed_ms": round(panel.computed_ms or 0.0, 1)}
        for name, panel in named.items()
        if panel.computed_at is not None
    }
