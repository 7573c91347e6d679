"""Where an incident is: a key list's rows per scope and per worker (``claimed_by``), worst first, beside the list
(every tab, within its filters), on the overview's stuck card, and as ``GET /api/v1/keys/breakdown``.

Bounded like the tab counts: at most ``CAP`` matching keys are read (the exact-count cap of the tabs); a tab with
more (succeeded, at millions of keys) says "too many to break down" rather than counting them all on every view;
when the request already knows the tab is past the cap (its tab's count, or a fresh snapshot) nothing is read.
The stuck set is read from the index of leases. A stuck list filtered by suggested outcome is broken down over the
page shown, as its suggestion groups are: that filter costs an outbox lookup per key.
"""

from __future__ import annotations

from dataclasses import replace

from flask import g

from idemdash.dashboard import key_tabs, panels
from idemdash.dashboard.key_tabs import COUNT_CAP
from idemdash.dashboard.targets import get_target
from idemdash.queries import key_breakdown, keys
from idemdash.queries.cursor import Page

CAP = COUNT_CAP
# groups shown beside the list and on the overview; the rest are "and N more"
TOP = 8
# the page broken down when a suggested outcome filters the stuck list and no page is given (the list's default)
PAGE = 50
# the index that makes each tab's breakdown a bounded range read (named in a timed-out panel)
INDEX = {"stuck": "index_keys_leases", "processing": "index_keys_leases", "needs_review": "index_keys_held"}


def load(
    flt: keys.KeyFilter, page: panels.Panel[Page[keys.KeyRow]] | None = None, *, known_count: int | None = None
) -> panels.Panel[key_breakdown.Breakdown]:
    """The breakdown of ``flt``'s tab within every filter of it (read once per request); with a suggested outcome,
    of ``page`` (the list's page shown; the first page when none is given). ``known_count``: how many keys the tab
    has with no filter, when the caller has counted them (the overview's cards), so nothing else is read to learn
    whether it is past the cap."""
    read = g.setdefault("key_breakdowns", {})
    if flt.status == "stuck" and flt.suggested is not None:
        return _of_page(page if page is not None else _first_page(flt))
    if flt not in read and _known_past_cap(flt, known_count):
        read[flt] = panels.Panel(value=key_breakdown.Breakdown(0, True, CAP))
    if flt not in read:
        target = get_target()
        read[flt] = panels.load(
            key_breakdown.break_down_keys,
            target.tables,
            flt,
            lease_seconds=target.settings.default_lease_seconds,
            hotspot_min_attempts=target.settings.hotspot_min_attempts,
            cap=CAP,
            index=INDEX.get(flt.status, "index_keys_terminal_scope" if flt.scope else "index_keys_updated"),
        )
    return read[flt]


def _known_past_cap(flt: keys.KeyFilter, known_count: int | None) -> bool:
    """Whether the tab has more than CAP keys by what this request already knows, with no filter but the window:
    the caller's count far past the cap (a stored count may be a rollup interval old), its tab counted past the
    cap, or a fresh snapshot far past it (as the tab itself shows). Then the breakdown would read CAP + 1 keys only
    to find it cannot break them down."""
    if replace(flt, updated_within_seconds=None) != keys.KeyFilter(flt.status):
        return False
    if known_count is not None and flt.updated_within_seconds is None:
        return known_count > key_tabs.SKIP_FACTOR * CAP
    tab = key_tabs.counted(flt.status, flt.updated_within_seconds)
    if tab is not None:
        return tab.more
    return flt.status in key_tabs.far_past_cap(flt.updated_within_seconds is not None)


def _first_page(flt: keys.KeyFilter) -> panels.Panel[Page[keys.KeyRow]]:
    target = get_target()
    return panels.load(
        keys.list_keys,
        target.tables,
        flt,
        lease_seconds=target.settings.default_lease_seconds,
        limit=PAGE,
        hotspot_min_attempts=target.settings.hotspot_min_attempts,
        index="index_keys_leases",
    )


def _of_page(page: panels.Panel[Page[keys.KeyRow]]) -> panels.Panel[key_breakdown.Breakdown]:
    if not page.ok or page.value is None:
        return panels.failed(page)
    shown = page.value
    more = shown.next_cursor is not None or shown.prev_cursor is not None
    return panels.Panel(value=key_breakdown.break_down_rows(shown.items, cap=CAP, more=more))


def in_words(b: key_breakdown.Breakdown) -> dict | None:
    """The top scope and worker of a breakdown, for "23 stuck: 21 in capture_payment, 19 claimed by api-3"."""
    if b.too_many or not b.total:
        return None
    scope = b.by_scope[0] if b.by_scope else None
    worker = next((w for w in b.by_worker if w.name is not None), None)
    return {"total": b.total, "scope": scope, "worker": worker}
