"""The one model's dimensions: what each profile's tables record, and the words for what they do not."""

from __future__ import annotations

import pytest

from idemdash.core.profiles import PROFILES, profile
from idemdash.core.profiles.dimensions import DIMENSIONS, no_table, not_recorded, records, role_table


def test_reference_keys_record_every_dimension_a_key_page_reads():
    keys = role_table(profile("reference"), "keys")
    assert all(records(keys, d) for d in ("group", "owner", "attempts", "lease", "payload", "error", "decisions"))


def test_a_library_records_no_decisions_and_says_so_by_its_name():
    outbox = role_table(profile("spring-modulith"), "outbox")
    assert records(outbox, "attempts") and not records(outbox, "decisions") and not records(outbox, "owner")
    assert (
        not_recorded(profile("spring-modulith"), "owner", "outbox")
        == "who holds a row is not recorded by Spring Modulith event publication registry for its outbox table"
    )


def test_a_missing_role_has_no_table_and_records_nothing():
    spring = profile("spring-modulith")
    assert role_table(spring, "keys") is None and not records(None, "attempts")
    assert no_table(spring, "keys").startswith(
        "Spring Modulith event publication registry has no keys table: its tables are event_publication"
    )


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_has_a_table_of_at_least_one_on_call_role(name):
    chosen = profile(name)
    assert any(role_table(chosen, role) is not None for role in ("keys", "outbox", "inbox"))


def test_an_unknown_dimension_is_refused():
    with pytest.raises(KeyError):
        records(role_table(profile("reference"), "keys"), "colour")
    assert "decisions" in DIMENSIONS
