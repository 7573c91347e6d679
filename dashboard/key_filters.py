"""The key list's filters: read from the query string, which tab each applies to, said in words, and how many keys
match them (``matching``), with the stuck keys grouped by suggested outcome.

A filter that does not apply to a tab is never silently ignored: it is not applied, and the JSON API's answer names
it with the tabs it applies to (``not_applied``), as the page shows it disabled with a note. (A 400 would refuse a
request the OpenAPI document cannot call invalid: a document cannot tie one query parameter to another's value.)
"""

from __future__ import annotations

from dataclasses import replace

from idemdash.core.formatting import duration
from idemdash.core.statuses import CHANGE_TABS, LEASE_TABS
from idemdash.dashboard import key_breakdown, panels
from idemdash.dashboard.schemas.keys import KeyFilterQuery
from idemdash.dashboard.targets import get_target
from idemdash.queries import key_matching, keys
from idemdash.queries.cursor import Page

# the tabs a filter means something on: a lease's end, and the outcome suggested for a stuck key
# and the window of a terminal or failed key's last change (the overview's 24 h cards link to it)
APPLIES = {
    "overdue": LEASE_TABS,
    "suggested": ("stuck",),
    "updated_within": CHANGE_TABS,
}
FIELDS = ("scope", "claimed_by", "min_attempts", "overdue", "suggested", "updated_within")


def read(args: KeyFilterQuery) -> tuple[keys.KeyFilter, list[str]]:
    """The filter of this request, and the names of the filters it carries that do not apply to its tab: those are
    not applied, and said so (the page shows them disabled, the API lists them in ``not_applied``)."""
    status = args.status
    flt = keys.KeyFilter(
        status=status,
        scope=args.scope,
        claimed_by=args.claimed_by,
        min_attempts=args.min_attempts,
        min_overdue_seconds=args.overdue,
        suggested=args.suggested,
        updated_within_seconds=args.updated_within,
    )
    given = {
        "overdue": flt.min_overdue_seconds,
        "suggested": flt.suggested,
        "updated_within": flt.updated_within_seconds,
    }
    ignored = [name for name, value in given.items() if value is not None and status not in APPLIES[name]]
    if "overdue" in ignored:
        flt = replace(flt, min_overdue_seconds=None)
    if "suggested" in ignored:
        flt = replace(flt, suggested=None)
    if "updated_within" in ignored:
        flt = replace(flt, updated_within_seconds=None)
    return flt, ignored


def in_words(flt: keys.KeyFilter) -> str:
    """The filters in force, as the page says them: "scope = refund, overdue ≥ 1 d"."""
    parts = []
    if flt.scope is not None:
        parts.append(f"scope = {flt.scope}")
    if flt.claimed_by is not None:
        parts.append(f"claimed by = {flt.claimed_by}")
    if flt.min_attempts is not None:
        parts.append(f"attempts ≥ {flt.min_attempts}")
    if flt.min_overdue_seconds is not None:
        parts.append(f"overdue ≥ {duration(flt.min_overdue_seconds)}")
    if flt.suggested is not None:
        parts.append(f"suggested {flt.suggested}")
    if flt.updated_within_seconds is not None:
        parts.append(f"changed in the last {window_words(flt.updated_within_seconds)}")
    return ", ".join(parts)


def window_words(seconds: float) -> str:
    """A window as the overview's cards say it: "24 h" rather than "1 d"."""
    return "24 h" if seconds == 86400 else duration(seconds)


def filtered(flt: keys.KeyFilter) -> bool:
    return bool(in_words(flt))


def matching(flt: keys.KeyFilter, page_size: int) -> panels.Panel[key_matching.Matching]:
    """Keys on this tab that match every filter, exact up to the tabs' cap; with a suggested outcome, exact up to
    ``page_size`` (each key costs an outbox lookup: a page of them, as the list itself reads). Without one, the
    number comes from the tab's breakdown (the same rows, read once for both: the breakdown is over the cap exactly
    when the count is; on a processing tab it examines at most the cap + 1 keys of each range, and past them the
    count is a lower bound, ``more``)."""
    target = get_target()
    if flt.status == "stuck" and flt.suggested is not None:
        return panels.load(
            key_matching.count_suggested_keys_matching,
            target.tables,
            flt,
            lease_seconds=target.settings.default_lease_seconds,
            hotspot_min_attempts=target.settings.hotspot_min_attempts,
            cap=page_size,
            index="index_keys_leases",
        )
    broken_down = key_breakdown.load(flt)
    if not broken_down.ok or broken_down.value is None:
        return panels.failed(broken_down)
    b = broken_down.value
    return panels.Panel(value=key_matching.Matching(b.cap if b.too_many else b.total, b.too_many or b.more))


def without_each(flt: keys.KeyFilter, page_size: int) -> list[tuple[str, key_matching.Matching]]:
    """For an empty filtered list: how many would match with each filter left out (what each one hides)."""
    loosened = {
        "scope": replace(flt, scope=None),
        "claimed by": replace(flt, claimed_by=None),
        "attempts": replace(flt, min_attempts=None),
        "overdue": replace(flt, min_overdue_seconds=None),
        "suggested": replace(flt, suggested=None),
        "changed within": replace(flt, updated_within_seconds=None),
    }
    found = []
    for label, other in loosened.items():
        if other != flt:
            count = matching(other, page_size)
            if count.ok and count.value is not None and count.value.count:
                found.append((label, count.value))
    return found


def suggestion_groups(
    flt: keys.KeyFilter, page: panels.Panel[Page[keys.KeyRow]]
) -> panels.Panel[list[key_matching.SuggestionGroup]]:
    """The stuck keys on the page shown, per suggested outcome (stuck tab only; else empty): one outbox lookup per
    row shown, however many keys are stuck."""
    if flt.status != "stuck":
        return panels.Panel(value=[])
    if not page.ok or page.value is None:
        return panels.failed(page)
    shown = page.value
    target = get_target()
    return panels.load(
        key_matching.count_suggestions_on_page,
        target.tables,
        shown.items,
        hotspot_min_attempts=target.settings.hotspot_min_attempts,
        more=shown.next_cursor is not None or shown.prev_cursor is not None,
        index="index_outbox_key",
    )
