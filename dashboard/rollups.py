"""Page panels for the rollups (queries/rollups.py): the stored value while it is fresh and slow to fetch live,
otherwise fetched live like any panel (statement timeout, a degraded panel that names its index). A panel from
a stored rollup carries ``computed_at`` and the page says so.

A variant the job does not compute (a threshold other than the default: ``/hotspots?min_attempts=10``) is computed
live; when that is slow, the answer is kept in the worker for the rollup's interval (``kept``), so the next view,
or the page's 15 s refresh, reads it instead of computing it again (at 100M keys: 85 ms each time).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from flask import current_app
from psycopg import errors

from idemdash.dashboard import page_reads, panels
from idemdash.dashboard.targets import get_target
from idemdash.queries import rollup_store, rollups

log = logging.getLogger(__name__)

# answers kept per app at most (a variant per window and threshold asked for)
KEPT_MAX = 256


def load(*wanted: tuple[str, str]) -> list[panels.Panel]:
    """One panel per (rollup name, variant)."""
    target = get_target()
    stored: dict[tuple[str, str], rollup_store.StoredRollup] = {}
    try:
        with page_reads.read(target, target.statement_timeout_ms) as conn:
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
    kept = _kept().get((target.name, name, variant))
    if kept is not None and kept[0] > time.monotonic():
        return kept[1]
    started = time.perf_counter()
    panel = panels.load(rollup.compute, target.tables, target.settings, variant, index=rollup.index)
    _keep(target, rollup, variant, panel, (time.perf_counter() - started) * 1000)
    if panel.problem == "timeout":
        hint = (
            f" At this table size the scheduler precomputes it every {rollup.every_seconds} s (rollup "
            f"'{name}'), and no fresh value was stored: is `idemdash scheduler` running?"
        )
        message, marker, rest = (panel.message or "").partition(" This index would make it fast:")
        panel = replace(panel, message=message + hint + marker + rest)
    return panel


def _kept() -> dict[tuple[str, str, str], tuple[float, panels.Panel]]:
    """This app's kept answers: (database, rollup, variant) -> (until, panel); per app, as its databases are."""
    return current_app.extensions.setdefault("idemdash_kept_rollups", {})


def _keep(target, rollup: rollups.Rollup, variant: str, panel: panels.Panel, ms: float) -> None:
    if not panel.ok or ms < rollups.LIVE_BUDGET_MS or variant in rollup.variants(target.settings):
        return  # quick, failed, or the job's own variant (the job stores it; a stale one is computed live)
    kept = _kept()
    if len(kept) >= KEPT_MAX:
        kept.pop(min(kept, key=lambda k: kept[k][0]))  # the one that ends first
    until = time.monotonic() + rollups.interval_seconds(rollup, ms)
    kept[(target.name, rollup.name, variant)] = (
        until,
        replace(panel, computed_at=datetime.now(timezone.utc), computed_ms=ms, kept=True),
    )


def load_one(name: str, variant: str = "") -> panels.Panel:
    return load((name, variant))[0]


def precomputed(**named: panels.Panel) -> dict[str, Any]:
    """For a JSON answer: the sections that came from a rollup, when they were computed and how long that took."""
    return {
        name: {"computed_at": panel.computed_at, "computed_ms": round(panel.computed_ms or 0.0, 1)}
        for name, panel in named.items()
        if panel.computed_at is not None
    }
