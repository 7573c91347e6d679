"""Schemathesis hooks for tests/test_schemathesis.py (loaded through SCHEMATHESIS_HOOKS): strategies for the
document's own string formats, as the document describes them. A purge table is one the seeded database has. A cursor
is a real cursor of its list, taken from
the seeded server before the run (IDEMDASH_TEST_CURSORS); a hold is a duration between 60 s and 30 days."""

from __future__ import annotations

import json
import os

import schemathesis
from hypothesis import strategies as st

for listing, cursors in json.loads(os.environ.get("IDEMDASH_TEST_CURSORS", "{}")).items():
    schemathesis.openapi.format(f"idemdash-cursor-{listing}", st.sampled_from(cursors))

# a purge table: one the seeded (reference) database's purges empty, as GET /api/v1/purges lists them
schemathesis.openapi.format("idemdash-purge-table", st.sampled_from(["keys", "inbox", "outbox"]))

_seconds = st.integers(min_value=60, max_value=30 * 86400)
schemathesis.openapi.format(
    "idemdash-hold",
    st.one_of(
        _seconds.map(str),
        _seconds.map(lambda s: f"{s}s"),
        st.integers(1, 43200).map(lambda m: f"{m}m"),
        st.integers(1, 720).map(lambda h: f"{h}h"),
        st.integers(1, 30).map(lambda d: f"{d}d"),
    ),
)
