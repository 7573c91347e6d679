"""Table-shape profiles: one declarative description per library whose tables idemdash can read, one module each.

A new library is one new module holding its ``PROFILE`` (see ``shape.py`` for the vocabulary), listed in
``PROFILES`` below, plus its tests with the library's own DDL (tests/test_detect.py). Nothing here runs SQL:
``detect.py`` matches a catalog listing against the profiles, and the queries layer feeds it.
"""

from __future__ import annotations

from idemdash.core.profiles import (
    brandur,
    cap,
    dbos,
    debezium_outbox,
    eventuate,
    masstransit,
    nservicebus,
    pg_transactional_outbox,
    reference,
    spring_modulith,
    wolverine,
)
from idemdash.core.profiles.shape import Profile

PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        reference.PROFILE,
        spring_modulith.PROFILE,
        masstransit.PROFILE,
        wolverine.PROFILE,
        brandur.PROFILE,
        nservicebus.PROFILE,
        eventuate.PROFILE,
        pg_transactional_outbox.PROFILE,
        debezium_outbox.PROFILE,
        cap.PROFILE,
        dbos.PROFILE,
    )
}
DEFAULT = "reference"


# profiles made from configuration (custom shapes, core/profiles/custom.py), by name: read like the built-in ones,
# never looked for by `idemdash detect`
CUSTOM: dict[str, Profile] = {}


def register(custom: Profile) -> None:
    """Add a profile made from configuration (a custom shape) under its own name (``custom:<database>``)."""
    CUSTOM[custom.name] = custom


def profile(name: str) -> Profile:
    try:
        return PROFILES[name] if name in PROFILES else CUSTOM[name]
    except KeyError:
        raise KeyError(f"no profile {name!r}; the profiles are {', '.join(PROFILES)}") from None


def setting_defaults(name: str) -> dict[str, str | int]:
    """The schema and table-name settings a database of profile ``name`` gets where its configuration names none:
    the library's own (``APP_SCHEMA``, ``OUTBOX_TABLE``, ...). A name as the library spells it matches the table
    under any naming convention the profile allows (MassTransit's ``InboxState`` finds ``inbox_state``); and the
    zone its naive timestamps are written in (``LIBRARY_TIMEZONE``) where the library has one of its own; and the
    library's own retention and lock timeout (``Profile.defaults``: Brandur's reaper keeps keys 72 h, its lock times
    out after 90 s)."""
    chosen = profile(name)
    zone = {"LIBRARY_TIMEZONE": chosen.timezone} if chosen.timezone else {}
    own = {d.setting: d.value for d in chosen.defaults}
    return {"APP_SCHEMA": chosen.default_schema, **{t.setting.upper(): t.name for t in chosen.tables}, **zone, **own}
