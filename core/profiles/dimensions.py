"""The one model every page reads: a profile's tables by role, each with the dimensions it records.

A role is what a table is for, the same words for every library:

- ``keys``: work claimed under a lease (an idempotency key, a workflow);
- ``outbox``: what the service still has to send;
- ``inbox``: what it consumed, for deduplication.

A library may have tables of its own roles besides (``outbox_state``, ``archive``, ``nodes``); the on-call pages
read the three above. Each table has the six meanings of ``shape.MEANINGS`` where the library records them, and these
optional dimensions:

- ``group``: what its rows are grouped by (a scope, a listener, an event type, CAP's ``Name``, a consumer);
- ``owner``: who holds or handled a row (a worker, a node, an executor);
- ``attempts``: how many times it was tried;
- ``lease``: a time after which another worker may take it;
- ``changed``: a time the library sets whenever a row changes (a claim, an attempt, an outcome): when an owner was
  last seen, and what a window ("done in the last hour") counts by;
- ``payload``: what it carries (a message, a stored response);
- ``error``: why it last failed;
- ``decisions``: an operator's recorded outcome, note and audit per row, and the evidence the key's page reads
  (idemdash's reference tables only: a library keeps no such record);
- ``suppression``: how many duplicates it refused (counted where the application records it).

A page asks ``records(table, dimension)`` and, where it is false, shows ``not_recorded(profile, dimension)`` in the
panel's place: never 0, never a 404. Pages never branch on a profile's name.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from idemdash.core.profiles.shape import Profile, Table, Time

# the tables of a profile the on-call pages read, by what each is for (the JSON answers name them too)
Role = Literal["keys", "outbox", "inbox"]
ROLES: Final[tuple[Role, ...]] = get_args(Role)
# the dimensions a table names one column for
_COLUMNS = ("owner", "attempts", "lease", "changed", "payload", "error")
DIMENSIONS = ("group", "owner", "attempts", "lease", "changed", "payload", "error", "decisions", "suppression")


def records(table: Table | None, dimension: str) -> bool:
    """Whether ``table`` records ``dimension`` (one of ``DIMENSIONS``)."""
    if dimension not in DIMENSIONS:
        raise KeyError(f"no dimension {dimension!r}; the dimensions are {', '.join(DIMENSIONS)}")
    if table is None:
        return False
    if dimension == "group":
        return bool(table.groups)
    if dimension in _COLUMNS:
        return getattr(table, dimension) is not None
    return dimension in table.extras


def column(table: Table, dimension: str) -> str | None:
    """The column that holds ``dimension`` in ``table`` (the first group column for ``group``), or None."""
    if dimension == "group":
        return table.groups[0] if table.groups else None
    if dimension in _COLUMNS:
        value = getattr(table, dimension)
        return value if isinstance(value, str) else None
    return None


def role_table(chosen: Profile, role: str) -> Table | None:
    """The profile's table for ``role``, or None where the library has none (Spring Modulith records no keys)."""
    for table in chosen.tables:
        if table.role == role:
            return table
    return None


def not_recorded(chosen: Profile, dimension: str, role: str | None = None) -> str:
    """The words a panel shows in place of what the library does not record."""
    what = {
        "group": "a group per row",
        "owner": "who holds a row",
        "attempts": "attempts",
        "lease": "a lease",
        "changed": "when a row last changed",
        "payload": "a payload",
        "error": "an error",
        "decisions": "an operator's decisions",
        "suppression": "suppressed duplicates",
    }[dimension]
    of = f" for its {role} table" if role and role_table(chosen, role) is not None else ""
    return f"{what} is not recorded by {chosen.library}{of}"


def no_table(chosen: Profile, role: str) -> str:
    """The words a page for ``role`` shows where the library has no such table."""
    return no_tables(chosen, (role,))


def no_tables(chosen: Profile, roles: tuple[str, ...]) -> str:
    """The same for several roles at once (an overview names every role the library has no table for once)."""
    tables = ", ".join(f"{t.name} ({t.role})" for t in chosen.tables)
    return f"{chosen.library} has no {' or '.join(roles)} table: its tables are {tables}"


def done_time(table: Table | None) -> Time | None:
    """The time ``table`` records when the library finished a row (what "done in 24 h" counts by), or None."""
    return next((t for t in table.times if t.done), None) if table is not None else None
