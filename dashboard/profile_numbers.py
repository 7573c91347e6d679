"""A role's numbers on a library's database as the pages show them (schemas/profile_overview.RolePanel): each of the
six meanings by the library's own states, the pending lag without likely poison rows, those apart, done in 24 h;
what the library does not record in its words (core/profiles/dimensions.py), never 0."""

from __future__ import annotations

from typing import Any

from idemdash.core.profiles.dimensions import done_time, no_table, not_recorded, records, role_table
from idemdash.core.profiles.shape import DONE, FAILED, IN_PROGRESS, MEANINGS, PENDING, STUCK, Profile
from idemdash.dashboard.schemas import profile_overview as schema
from idemdash.queries.outbox import POISON_MIN_ATTEMPTS
from idemdash.queries.profile_numbers import RoleNumbers

FIELDS = {STUCK: "stuck", IN_PROGRESS: "in_progress", PENDING: "pending", FAILED: "failed", DONE: "done"}


def definitions(chosen: Profile) -> dict[str, str]:
    return {
        "states": f"each count is the {chosen.library}'s own definition of the meaning (its states' notes, /tables)",
        "lag_seconds": f"age of the oldest pending row with fewer than {POISON_MIN_ATTEMPTS} attempts (not likely "
        "poison), by the table's first time column in its unit and zone",
        "poison": f"pending rows with {POISON_MIN_ATTEMPTS} or more attempts (likely poison), counted apart",
        "done_24h": "done rows whose done time (the time the library records when it finished a row) is within the "
        "last 24 hours",
    }


def absent_words(chosen: Profile, role: str, numbers: RoleNumbers | None) -> str | None:
    """Where the database has no table of ``role``: the library has none, or its optional one is not here."""
    table = role_table(chosen, role)
    if table is None:
        return no_table(chosen, role)
    if numbers is None or numbers.name is None:
        return f"{chosen.library}'s {role} table ({table.name}) is not in this database"
    return None


def role_panel(chosen: Profile, role: str, numbers: RoleNumbers | None) -> schema.RolePanel:
    """``role``'s panel; ``numbers`` None: the library has no table of this role (or it was not found)."""
    table = role_table(chosen, role)
    counts = numbers.counts if numbers else {}
    missing: dict[str, str] = {}
    for meaning, field in FIELDS.items():
        if meaning not in counts:
            missing[field] = f"{meaning} is not recorded by {chosen.library}"
    if not records(table, "attempts") or (numbers is not None and not numbers.attempts_recorded):
        missing["poison"] = not_recorded(chosen, "attempts", role)
    if DONE not in counts:
        missing["done_24h"] = missing["done"]
    elif done_time(table) is None:
        missing["done_24h"] = f"a done time is not recorded by {chosen.library}" + (
            f" for its {role} table" if table is not None else ""
        )
    absent = absent_words(chosen, role, numbers)
    if absent:
        missing = {field: absent for field in (*FIELDS.values(), "poison", "done_24h")}
    states = []
    for meaning in MEANINGS:
        state = next((s for s in chosen.states if s.table == role and s.meaning == meaning), None)
        kept = numbers.stored.get(meaning) if numbers else None
        states.append(
            schema.MeaningCount.model_validate(
                {
                    "meaning": meaning,
                    "count": counts.get(meaning),
                    "recorded": meaning in counts,
                    "note": state.note if state is not None else f"{meaning} is not recorded by {chosen.library}",
                    "computed_at": kept.computed_at if kept else None,
                    "estimated": bool(kept and kept.estimated),
                }
            )
        )
    value: dict[str, Any] = {field: counts.get(meaning) for meaning, field in FIELDS.items()}
    return schema.RolePanel.model_validate(
        {
            "role": role,
            "table": numbers.name if numbers else None,
            "no_table": absent,
            **value,
            "done_24h": numbers.done_24h if numbers else None,
            "lag_seconds": numbers.lag_seconds if numbers else None,
            "poison": numbers.poison if numbers else None,
            "poison_oldest_seconds": numbers.poison_oldest_seconds if numbers else None,
            "poison_threshold": POISON_MIN_ATTEMPTS,
            "not_recorded": missing,
            "states": states,
        }
    )


def other_table(chosen: Profile, numbers: RoleNumbers) -> schema.OtherTable:
    """A table of one of the library's own roles, with the meanings it records (in the six meanings' order)."""
    notes = {s.meaning: s.note for s in chosen.states if s.table == numbers.role}
    return schema.OtherTable.model_validate(
        {
            "role": numbers.role,
            "table": numbers.name,
            "states": [
                {
                    "meaning": m,
                    "count": numbers.counts[m],
                    "recorded": True,
                    "note": notes.get(m, ""),
                    "computed_at": kept.computed_at if (kept := numbers.stored.get(m)) else None,
                    "estimated": bool(kept and kept.estimated),
                }
                for m in MEANINGS
                if m in numbers.counts
            ],
        }
    )
