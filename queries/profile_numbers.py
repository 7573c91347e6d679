"""A role table's numbers on a library's database, as every on-call page shows them (dashboard/profile_numbers.py):
each meaning's count (live, or the rollup job's where it stores them), the pending lag without the likely poison
rows and those apart, and what finished in the last 24 hours; read through queries/profile_pages.py's blocks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from idemdash.core.profiles.detect import Found
from idemdash.core.profiles.shape import DONE, MEANINGS, PENDING
from idemdash.core.settings import Settings
from idemdash.queries.profile_pages import attempts_column, count_done_since, get_pending_split
from idemdash.queries.profile_rows import get_state_lag
from idemdash.queries.rollup_states import read_library_states


@dataclass(frozen=True)
class RoleNumbers:
    """One on-call role's numbers on a library's database, each by the library's own states; a number is None where
    the library does not record it (``recorded`` says which meanings it records at all)."""

    role: str
    name: str | None  # the table's name in the database; None: none found
    counts: dict[str, int | None]  # meaning -> rows, for the meanings its profile records
    stored: dict[str, Any]  # meaning -> the rollup job's StoredCount, where read stored
    lag_seconds: float | None  # its oldest pending row that is not likely poison
    poison: int | None  # pending with POISON_MIN_ATTEMPTS or more attempts; None: no attempts
    attempts_recorded: bool  # the found table has the profile's attempts column
    poison_oldest_seconds: float | None
    done_24h: int | None  # done within 24 h, by its done time; None: it records none


@dataclass(frozen=True)
class ProfileNumbers:
    found: Found | None
    problem: str | None  # why its tables were not found
    roles: tuple[RoleNumbers, ...]


def read_role_numbers(
    conn: psycopg.Connection,
    settings: Settings,
    roles: tuple[str, ...],
    min_attempts: int,
    *,
    count: bool = True,
) -> ProfileNumbers:
    """Each of ``roles`` the found profile has a table for: every state's count (stored where counting live is
    slow, as /tables reads them), the pending lag without likely poison rows and those apart, and done in 24 h.
    ``count=False``: the tables found and which states they record, nothing counted (a list that shows no number)."""
    read, stored = read_library_states(conn, settings, MEANINGS if count else (), roles=roles)
    if not count and read.found is not None:
        return ProfileNumbers(
            read.found,
            None,
            tuple(
                RoleNumbers(
                    role=role,
                    name=read.found.table(role),
                    counts={},
                    stored={},
                    lag_seconds=None,
                    poison=None,
                    poison_oldest_seconds=None,
                    done_24h=None,
                    attempts_recorded=attempts_column(conn, read.found, role) is not None,
                )
                for role in roles
                if read.found.table(role) is not None
            ),
        )
    found = read.found
    if found is None:
        return ProfileNumbers(None, read.problem, ())
    result = []
    for role in roles:
        name = found.table(role)
        states = {s.meaning: (s, n) for s, n in read.counts if s.table == role}
        if name is None and not states:
            continue
        pending = states.get(PENDING, (None, None))[0]
        split = get_pending_split(conn, found, pending, settings, min_attempts) if pending and name else None
        lag = (
            split.lag_seconds
            if split
            else (get_state_lag(conn, found, pending, settings) if pending and name else None)
        )
        done = states.get(DONE, (None, None))[0]
        result.append(
            RoleNumbers(
                role=role,
                name=name,
                counts={m: n for m, (_, n) in states.items()},
                stored={m: stored[(role, m)] for m in states if (role, m) in stored},
                lag_seconds=lag,
                poison=split.poison if split else None,
                attempts_recorded=bool(name) and attempts_column(conn, found, role) is not None,
                poison_oldest_seconds=split.poison_oldest_seconds if split else None,
                done_24h=count_done_since(conn, found, done, settings, 24) if done and name else None,
            )
        )
    return ProfileNumbers(found, None, tuple(result))
