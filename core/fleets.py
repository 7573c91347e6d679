"""A ``[fleets.<name>]`` table of IDEMDASH_CONFIG: many databases described once.

Either one server and a pattern of database names, found by asking the server (queries/fleets.py)::

    [fleets.orders]
    url = "postgresql://idemdash@orders-db/postgres"   # the server; its database name is replaced by each member's
    databases = "orders_*"                              # a glob over pg_database's names

or a URL template and a list of names::

    [fleets.shards]
    url_template = "postgresql://idemdash@shard-{name}.internal/app"
    names = ["eu1", "eu2", "us1"]

Every other key is one a ``[databases.<name>]`` table may set, and applies to every member. A member is an ordinary
database named ``<fleet>/<database>`` (``orders/orders_eu``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from idemdash.core.database_table import NAME, NAME_RULE, table_settings
from idemdash.core.settings import Settings

# a member's own part of its name: what a database may be called to be served (the URL path segment under the fleet)
MEMBER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}$")
MEMBER_RULE = "1-63 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
# what a pattern may hold: a member's characters and the glob's own (* ? [ ] !)
PATTERN = re.compile(r"^[A-Za-z0-9_.*?\[\]!-]+$")
FLEET_KEYS = ("url", "databases", "url_template", "names", "read_url", "read_url_template")


@dataclass(frozen=True)
class FleetConfig:
    name: str
    where: str  # "IDEMDASH_CONFIG <file>: [fleets.<name>]", which each of its messages starts with
    common: Mapping[str, Any]  # the keys every member shares (the fleet's table without its own keys)
    base: Settings  # the environment's settings
    url: str | None = None  # the server, for a pattern
    pattern: str | None = None
    url_template: str | None = None
    names: tuple[str, ...] = ()
    read_url: str | None = None  # a pattern's standby server: each member's standby is its database there
    read_url_template: str | None = None

    @property
    def discovered(self) -> bool:
        """Its members are found by asking its server (a pattern), not listed."""
        return self.pattern is not None

    def member_name(self, database: str) -> str:
        return f"{self.name}/{database}"

    def member(self, database: str) -> tuple[str, Settings]:
        """The name and settings of member ``database``."""
        table = dict(self.common)
        if self.url_template is not None:
            table["url"] = self.url_template.format(name=database)
            if self.read_url_template:
                table["read_url"] = self.read_url_template.format(name=database)
        else:
            assert self.url is not None
            table["url"] = with_dbname(self.url, database)
            if self.read_url:
                table["read_url"] = with_dbname(self.read_url, database)
        values, problems = table_settings(
            self.where, self.member_name(database), table, self.base, shape_name=self.name
        )
        if problems:  # checked once with a sample member when the file was read
            raise ValueError("\n".join(problems))
        return self.member_name(database), values


def with_dbname(url: str, dbname: str) -> str:
    """``url`` with its database name replaced (a keyword DSN comes back: host, user and options unchanged)."""
    return make_conninfo(url, dbname=dbname)


def parse_fleet(where: str, name: str, table: Any, base: Settings) -> tuple[FleetConfig | None, list[str]]:
    """The fleet ``table`` describes, and one line per mistake in it (then no fleet)."""
    if not NAME.match(name):
        return None, [f"{where}: a fleet name is {NAME_RULE} (it is the first part of its members' names)"]
    if not isinstance(table, dict):
        return None, [f"{where}: expected a table of settings"]
    problems: list[str] = []
    strings = {}
    for key in FLEET_KEYS:
        if key in table and key != "names":
            if not isinstance(table[key], str) or not table[key]:
                problems.append(f"{where}: {key}: expected a non-empty string")
            else:
                strings[key] = table[key]
    by_pattern = "url" in table or "databases" in table
    by_template = "url_template" in table or "names" in table
    if by_pattern and by_template:
        problems.append(
            f"{where}: either url and databases (a server and a pattern of names) or url_template "
            "and names (a list), not both"
        )
    elif by_pattern and not ("url" in table and "databases" in table):
        missing = "databases" if "url" in table else "url"
        problems.append(
            f"{where}: {missing} is required with {'url' if missing == 'databases' else 'databases'} "
            '(a server\'s url and a pattern of database names, like databases = "orders_*")'
        )
    elif by_template and not ("url_template" in table and "names" in table):
        missing = "names" if "url_template" in table else "url_template"
        other = "url_template" if missing == "names" else "names"
        problems.append(f"{where}: {missing} is required with {other} (a url with {{name}} and a list of names)")
    elif not by_pattern and not by_template:
        problems.append(
            f"{where}: give url and databases (a server and a pattern of database names) or "
            "url_template and names (a url with {name} and a list of names)"
        )
    names = _names(where, table.get("names"), problems) if "names" in table else ()
    pattern = strings.get("databases")
    if pattern is not None and not _good_pattern(pattern):
        problems.append(
            f"{where}: databases: bad pattern {pattern!r}: a glob of database names (* any, ? one "
            "character, [abc] one of), of letters, digits, '_', '.' and '-'"
        )
    template = strings.get("url_template")
    for key in ("url_template", "read_url_template"):
        if key in strings and (problem := _template_problem(strings[key])):
            problems.append(f"{where}: {key}: {problem}")
    if "read_url_template" in table and not by_template:
        problems.append(f"{where}: read_url_template goes with url_template and names; a server's standby is read_url")
    if "read_url" in table and by_template:
        problems.append(
            f"{where}: read_url is a server's standby, for url and databases; with url_template give read_url_template"
        )
    for key in ("url", "read_url"):
        if key in strings and (problem := _url_problem(strings[key])):
            problems.append(f"{where}: {key}: {problem}")
    common = {key: value for key, value in table.items() if key not in FLEET_KEYS}
    _, table_problems = table_settings(where, name, {**common, "url": "postgresql:///x"}, base, shape_name=name)
    problems += table_problems
    if problems:
        return None, problems
    return FleetConfig(
        name,
        where,
        common,
        base,
        url=strings.get("url"),
        pattern=pattern,
        url_template=template,
        names=names,
        read_url=strings.get("read_url"),
        read_url_template=strings.get("read_url_template"),
    ), []


def _names(where: str, raw: Any, problems: list[str]) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw or not all(isinstance(n, str) for n in raw):
        problems.append(f"{where}: names: expected a non-empty list of strings")
        return ()
    bad = [n for n in raw if not MEMBER.match(n)]
    if bad:
        problems.append(f"{where}: names: {', '.join(map(repr, bad))}: a member's name is {MEMBER_RULE}")
    twice = sorted({n for n in raw if raw.count(n) > 1})
    if twice:
        problems.append(f"{where}: names: listed twice: {', '.join(twice)}")
    return tuple(raw)


def _good_pattern(pattern: str) -> bool:
    if not PATTERN.match(pattern):
        return False
    depth = 0
    for ch in pattern:
        if ch == "[":
            if depth:
                return False
            depth = 1
        elif ch == "]":
            if not depth:
                return False
            depth = 0
    return depth == 0


def _template_problem(template: str) -> str | None:
    try:
        filled = template.format(name="x")
    except (KeyError, IndexError, ValueError):
        return "only {name} may be filled in (write a literal brace as {{ or }})"
    if "{name}" not in template:
        return "it must contain {name}, which each member's name fills in"
    return _url_problem(filled)


def _url_problem(url: str) -> str | None:
    try:
        conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        return f"not a connection string: {str(exc).splitlines()[0]}"
    return None


def member_names(fleet: FleetConfig, found: Sequence[str]) -> list[str]:
    """Which of the names a pattern fleet's server has are members: the matching ones that can be served."""
    assert fleet.pattern is not None
    return sorted(n for n in found if fnmatchcase(n, fleet.pattern) and MEMBER.match(n))
