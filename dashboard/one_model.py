"""The one model for a request (core/profiles/dimensions.py): the database's profile, its table per role, which
read a page takes, and what the header shows. Every on-call page asks here, never a profile's name:

- a page of a role whose table records an operator's decisions (``decisions``; the reference inbox: the duplicates
  it refused, ``suppression``) keeps its rich reads over idemdash's own column contract (queries/keys.py, ...);
- any other reads the profile-driven queries (queries/profile_pages.py) in the page's ``profile_*`` module.
"""

from __future__ import annotations

from typing import Any

from idemdash.core.profiles import DEFAULT, profile
from idemdash.core.profiles.dimensions import ROLES, records, role_table
from idemdash.core.profiles.shape import Profile, Table
from idemdash.core.settings import Settings

# the dimension whose table a page's rich reads need: the reference tables' own records
RICH = {"keys": "decisions", "outbox": "decisions", "inbox": "suppression"}
# the pages each role has; a page of a role the profile has no table for still answers, saying so
ROLE_PAGES = {"keys": ("keys.list_page", "Keys"), "outbox": ("outbox.page", "Outbox"), "inbox": ("inbox.page", "Inbox")}


def chosen(settings: Settings) -> Profile:
    return profile(settings.profile)


def table(settings: Settings, role: str) -> Table | None:
    return role_table(chosen(settings), role)


def owns_tables(settings: Settings) -> bool:
    """Whether the database's tables are idemdash's own column contract: a table records an operator's decisions
    (only the reference tables do). Then idemdash writes them (reclassify, notes, park), purges them by its own rules
    and checks them against its schema; any other tables are read through their profile, changed only by the
    library's own documented actions and purged by the library's own definition of finished."""
    return any(records(t, "decisions") for t in chosen(settings).tables)


def rich(settings: Settings, role: str) -> bool:
    """Whether the page of ``role`` reads the table's rich columns (the reference column contract): its table records
    what only those columns hold."""
    return records(table(settings, role), RICH[role])


def header(settings: Settings | None) -> dict[str, Any]:
    """What base.html shows for the database's tables: whether the pages of the reference tables' decisions (search,
    hotspots, suppression, workers, runbooks) apply, the role pages in the nav, and the badge naming whose tables
    these are when an operator's decisions are not recorded."""
    model = profile(settings.profile if settings is not None else DEFAULT)
    keys = role_table(model, "keys")
    decisions = records(keys, "decisions")
    actions = settings.library_actions if settings is not None else ""
    badge = (
        None
        if decisions or any(records(t, "decisions") for t in model.tables)
        else {
            "text": f"{model.name} · {actions.replace(',', ', ') if actions else 'read-only'}",
            "actions": bool(actions),
        }
    )
    return {
        "decisions_recorded": decisions,
        "role_pages": [ROLE_PAGES[r] for r in ROLES],
        "roles_present": [r for r in ROLES if role_table(model, r) is not None],
        "profile_badge": badge,
        "profile_name": model.name,
    }
