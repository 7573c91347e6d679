"""The words of core/statuses.py and the SQL that creates or checks them say the same values, in the same order."""

from __future__ import annotations

import re
from string import Formatter
from typing import get_args

from psycopg import sql

from idemdash.core import triage
from idemdash.core.statuses import KEY_STATUSES, OUTCOMES, PURGE_ENDS, REVIEW_HOLDER, PartitionAction
from idemdash.queries import CONSTANTS, QUERIES, Tables, statement
from idemdash.queries.migrate import list_migrations


def _quoted(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r"'([a-z_]+)'", text))


def test_the_key_status_enum_and_check_are_the_key_statuses():
    assert _quoted(re.search(r"AS ENUM \(([^)]*)\)", QUERIES["create_app_status_enum"].text).group(1)) == KEY_STATUSES
    checks = re.findall(r"CHECK \(status::text IN \(([^)]*)\)\)", "".join(q.text for q in QUERIES.values()))
    assert checks and all(_quoted(check) == KEY_STATUSES for check in checks)


def test_the_purge_runs_check_is_running_and_the_ends_of_a_purge():
    text = "".join(m.text for m in list_migrations())
    *_, last = re.findall(r"CHECK \(outcome IN \(([^)]*)\)\)", text)
    assert _quoted(last) == ("running", *PURGE_ENDS)


def test_the_partition_actions_check_is_the_partition_actions():
    text = "".join(m.text for m in list_migrations())
    *_, last = re.findall(r"action text NOT NULL CHECK \(action IN \(([^)]*)\)\)", text)
    assert sorted(_quoted(last)) == sorted(get_args(PartitionAction))


def test_the_review_holder_enters_sql_as_its_literal():
    held = [name for name, query in QUERIES.items() if "{review_holder}" in query.text]
    assert len(held) >= 10
    known = {*Tables().identifiers(), *QUERIES, *CONSTANTS}
    for name in held:
        other = {f: sql.Identifier(f) for _, f, _, _ in Formatter().parse(QUERIES[name].text) if f and f not in known}
        text = statement(name, Tables(), **other).as_string(None)
        assert f"'{REVIEW_HOLDER}'" in text and "{review_holder}" not in text, name
    assert not any("idemdash:needs_review" in query.text for query in QUERIES.values())


def test_every_outcome_says_what_it_does():
    assert tuple(sorted(triage.OUTCOMES)) == tuple(sorted(OUTCOMES))
