"""The markers on the overview's trend charts: when an operator acted (the audit log) and when a purge ran, placed
on the charts' time axis, with the words a hover shows and a list under the charts that says the same."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Literal

from flask import current_app
from markupsafe import Markup, escape

from idemdash.dashboard import panels, partials
from idemdash.dashboard.links import url_for
from idemdash.queries.trend_marks import TrendAction, TrendPurge, list_trend_marks

MAX_EACH = 200  # the newest actions and purge runs of a range read for the markers (each)
NEAR = 4.0  # markers closer than this on the chart's x axis (of 262) merge into one
MAX_LINES = 6  # a merged marker's hover lists this many events, then "and N more"
LISTED = 40  # the list under the charts names the newest this many events
# an action taken after the newest snapshot (the next comes within a minute) is drawn at the charts' right edge
LATE = timedelta(minutes=2)

Kind = Literal["action", "purge"]


@dataclass(frozen=True)
class Event:
    kind: Kind
    at: datetime
    by: str
    what: str  # in words: "alice reclassified 40 keys as abandoned"
    audit_id: int | None
    run_id: int | None


@dataclass(frozen=True)
class Mark:
    """One marker on a chart: one event, or several close together in time."""

    x: float
    kind: Literal["action", "purge", "both"]
    events: list[Event]
    title: str  # the hover: each event's time and words


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def action_words(a: TrendAction) -> str:
    kind, _, arg = a.action.partition(":")
    on = f" {a.scope} {a.key}" if a.key else (f" in {a.scope}" if a.scope else "")
    if kind == "reclassify":
        return f"{a.actor} reclassified{on} as {arg or a.to_status}"
    if kind == "reclassify-bulk":
        return f"{a.actor} reclassified {_plural(a.children, 'key')}{on} as {arg or a.to_status} (bulk)"
    if kind in ("outbox-park", "outbox-release"):
        verb = "parked" if kind == "outbox-park" else "released"
        return f"{a.actor} {verb} an outbox row{on}"
    if kind in ("outbox-park-bulk", "outbox-release-bulk"):
        verb = "parked" if kind == "outbox-park-bulk" else "released"
        return f"{a.actor} {verb} {_plural(a.children, 'outbox row')} (bulk)"
    if kind == "purge-cancel":
        return f"{a.actor} cancelled the {arg} purge"
    return f"{a.actor}: {a.action}{on}"


def purge_words(p: TrendPurge) -> str:
    parts = [f"purge of {p.table_name}: {_plural(p.rows_deleted, 'row')} deleted"]
    if p.partitions_dropped:
        parts.append(f", {_plural(p.partitions_dropped, 'partition')} dropped")
    if p.outcome != "succeeded":
        parts.append(f" ({p.outcome})")
    parts.append(f", started by {p.started_by}")
    return "".join(parts)


def events(actions: list[TrendAction], purges: list[TrendPurge]) -> list[Event]:
    """Every action and purge run read, oldest first."""
    found = [Event("action", a.at, a.actor, action_words(a), a.audit_id, None) for a in actions]
    found += [Event("purge", p.at, p.started_by, purge_words(p), None, p.run_id) for p in purges]
    return sorted(found, key=lambda e: e.at)


@dataclass(frozen=True)
class Found:
    """The events of a range for the charts: every one read, oldest first; cut when the newest MAX_EACH of either
    kind were all that was read; problem when they could not be read (the charts then carry no markers)."""

    events: list[Event]
    cut: bool
    problem: panels.Panel | None

    @property
    def newest(self) -> list[Event]:
        """The events the list under the charts names: the newest LISTED, newest first."""
        return self.events[: -LISTED - 1 : -1]

    @property
    def list_items(self) -> Markup:
        return list_items(self.newest)

    @property
    def actions(self) -> int:
        return sum(1 for e in self.events if e.kind == "action")

    @property
    def purges(self) -> int:
        return sum(1 for e in self.events if e.kind == "purge")


def load(hours: int) -> Found:
    panel = panels.load(list_trend_marks, hours=hours, limit=MAX_EACH)
    if not panel.ok or panel.value is None:
        return Found([], False, panel)
    return Found(events(panel.value.actions, panel.value.purges), panel.value.cut(MAX_EACH), None)


def list_items(found: list[Event]) -> Markup:
    """The list under the charts, one ``<li>`` an event, in Python (40 of them were a third of the overview's template):
    the time, and the words linked to where the event is recorded (a purge to the purges page, an operator's action to
    the audit log of its actor)."""
    routes = current_app.view_functions
    purges = escape(url_for("purges.page")) if "purges.page" in routes else None
    audit = "audit.page" in routes
    items = []
    for e in found:
        what = escape(e.what)
        if e.kind == "purge" and purges is not None:
            what = Markup(f'<a href="{purges}">{what}</a>')
        elif e.audit_id and audit:
            what = Markup(f'<a href="{escape(url_for("audit.page", actor=e.by))}">{what}</a>')
        items.append(
            f'<li data-event="{e.kind}"><span class="mark-key {e.kind}" aria-hidden="true"></span>\n'
            f"      {partials.time(e.at)} {what}</li>"
        )
    return Markup("".join(items))


def _title(group: list[Event]) -> str:
    lines = [
        f"{e.at.astimezone(timezone.utc):%m-%d %H:%M} {'operator action' if e.kind == 'action' else 'purge'}: {e.what}"
        for e in group[:MAX_LINES]
    ]
    if len(group) > MAX_LINES:
        lines.append(f"and {len(group) - MAX_LINES} more")
    return "\n".join(lines)


def layout(found: list[Event], start: datetime, end: datetime, left: float, right: float) -> list[Mark]:
    """The markers of the events between start and end (or at most LATE after it: at the right edge), on an x axis
    from left to right; close ones merged."""
    span = (end - start).total_seconds()
    marks: list[tuple[float, list[Event]]] = []
    for e in found:
        if not start <= e.at <= end + LATE:
            continue
        x = left + ((right - left) * min((e.at - start).total_seconds() / span, 1.0) if span > 0 else right - left)
        if marks and x - marks[-1][0] < NEAR:
            marks[-1][1].append(e)
        else:
            marks.append((x, [e]))
    out = []
    for x, group in marks:
        kinds = {e.kind for e in group}
        kind: Literal["action", "purge", "both"] = "both" if len(kinds) > 1 else group[0].kind
        out.append(Mark(round(x, 1), kind, group, _title(group)))
    return out
