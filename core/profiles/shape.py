"""The vocabulary of a table-shape profile: which tables a library creates, which columns carry identity, state,
lease or owner, attempts, times (and their unit), payload and error, what each state means, and how to tell the
shape (and its version) in the catalog.

Everything here is data, and nothing here runs SQL. A state names its statement: a block of
``queries/profile_states.sql`` (named ``state_<profile>_<table role>_<meaning>``, with ``_<version>`` when it holds
for one version of the shape only), ``SELECT count(*) FROM {table} WHERE <condition>``. In a block, ``{table}`` is
the state's own table, ``{<role>}`` another table of the profile (a condition such as "not among the values of
another table's column" is a subquery over it), ``{<column>}`` a column as the profile spells it, and ``%(name)s``
a value the caller supplies (``retention``, ``stale_after``, ``lock_timeout`` intervals, ``before_epoch_ms``,
``library_zone``: the IANA zone a LOCAL_TIMESTAMP column is written in).
``queries/profile_states.py`` fills every name in with ``psycopg.sql.Identifier``, after applying the naming
convention found in the database, so a configured or detected name never enters SQL as text.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, get_args

# What a profile module needs, taken whole (`from idemdash.core.profiles.shape import *`): each library's module
# declares its tables, states and sources in these words and no others. Time units, meanings, catalog types, naming
# conventions and matches, then the declarations:
__all__ = ["TIMESTAMPTZ", "UTC_TIMESTAMP", "EPOCH_MS", "LOCAL_TIMESTAMP"]
__all__ += ["Meaning", "MEANINGS", "PENDING", "IN_PROGRESS", "STUCK", "DONE", "FAILED", "PURGEABLE"]
__all__ += ["TEXT", "UUID", "INTEGER", "BOOLEAN", "JSONB", "TSTZ", "TS", "ANY_TIMESTAMP"]
__all__ += ["AS_IS", "SNAKE_CASE", "EXACT", "SUFFIX", "ANY_NAME"]
__all__ += ["Column", "Time", "Dependent", "Table", "State", "Fact", "Command", "Index", "Version", "Source"]
__all__ += ["Default", "LibraryAction", "Profile"]

# Time units: how a column holds a point in time.
TIMESTAMPTZ = "timestamptz"
UTC_TIMESTAMP = "timestamp holding UTC"  # timestamp without time zone, written from a UTC clock
EPOCH_MS = "epoch milliseconds"  # bigint
LOCAL_TIMESTAMP = "timestamp holding the library's local time"  # timestamp without time zone, written from the
# application host's clock: read in LIBRARY_TIMEZONE (``%(library_zone)s``)

# What a state means, the same words for every library: pending, the library still has to do it (send it, handle
# it); in progress, someone holds it now; stuck, in progress, or pending, past what the library allows; done, the
# library counts it as finished; failed, given up on, or dead-lettered; purgeable, what idemdash may delete:
# finished by the library's own definition, and old.
Meaning = Literal["pending", "in progress", "stuck", "done", "failed", "purgeable"]
MEANINGS: tuple[Meaning, ...] = get_args(Meaning)
PENDING, IN_PROGRESS, STUCK, DONE, FAILED, PURGEABLE = MEANINGS

# Catalog type names (format_type without a modifier) a column may have.
TEXT = ("text", "character varying")
UUID = ("uuid",)
INTEGER = ("smallint", "integer", "bigint")
BOOLEAN = ("boolean",)
JSONB = ("jsonb",)
TSTZ = ("timestamp with time zone",)
TS = ("timestamp without time zone",)
ANY_TIMESTAMP = TSTZ + TS

# Naming conventions a library's tables may be created under.
AS_IS = "as-is"
SNAKE_CASE = "snake_case"  # EF Core's EFCore.NamingConventions: "InboxState" -> inbox_state

# How a table's name is recognised.
EXACT = "exact"  # the profile's name (after the naming convention)
SUFFIX = "suffix"  # any prefix, then the name (NServiceBus: one table per endpoint)
ANY_NAME = "any"  # any table with the required columns (the name is the user's choice)


@dataclass(frozen=True)
class Column:
    name: str
    types: tuple[str, ...] = ()  # accepted catalog types; () accepts any


@dataclass(frozen=True)
class Time:
    column: str
    meaning: str
    unit: str
    done: bool = False  # when the library finished the row (done in 24 h counts by it)


@dataclass(frozen=True)
class Dependent:
    """Rows of another table of the profile that belong to a row of this one without a foreign key (so no cascade
    deletes them): a purge deletes them with the purged row, in the same statement."""

    table: str  # the role of the dependent table
    column: str  # its column holding the purged row's ...
    parent: str  # ... value of this column


@dataclass(frozen=True)
class Table:
    role: str  # keys, inbox, outbox, or a library's own: outbox_state, archive, nodes, ...
    name: str  # the library's default name, as the library spells it
    setting: str  # the [databases.<name>] key naming this table
    columns: tuple[Column, ...]  # required to recognise the table (other columns may exist)
    identity: tuple[str, ...]
    state: str | None = None
    lease: str | None = None  # a time after which another worker may take it
    owner: str | None = None  # who holds it (a node, a worker)
    attempts: str | None = None
    times: tuple[Time, ...] = ()
    payload: str | None = None
    error: str | None = None
    optional: bool = False  # the shape is recognised without it
    match: str = EXACT
    groups: tuple[str, ...] = ()  # /tables breaks its backlog (rows not in its done state) down by these columns,
    # each group with its rows and how long its oldest has waited (the first time)
    dependents: tuple[Dependent, ...] = ()  # deleted with each purged row (a found table only)
    # dimensions beyond its columns (core/profiles/dimensions.py): decisions, suppression
    extras: tuple[str, ...] = ()
    changed: str | None = None  # a time column the library sets whenever a row changes (a claim, an attempt, an
    # outcome): when an owner was last seen, and what a window counts by
    unowned: tuple[str, ...] = ()  # owner values (as text) that mean no one holds the row (Wolverine's 0: any node)

    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


@dataclass(frozen=True)
class State:
    meaning: Meaning
    table: str  # the role of the table it is about
    query: str  # the name of its block in queries/profile_states.sql, see the docstring
    note: str = ""
    version: str | None = None  # holds for this version of the shape only; None: for every version
    order: str | None = None  # the time column its rows are listed by (one the library indexes for the
    # state); None: the table's first time column
    params: tuple[tuple[str, object], ...] = ()  # values its condition binds besides the settings' (a custom
    # shape's state values, its stuck-after interval)
    columns: tuple[tuple[str, str], ...] = ()  # a field of its condition -> the column it stands for (a custom
    # shape's); a field not here is a column of that very name


@dataclass(frozen=True)
class Fact:
    """What a row's page says of one row beyond its columns (why it is stuck, its last step): a block of
    ``queries/profile_facts.sql`` named ``fact_<profile>_<role>_<what>``, a text expression over the row ``t`` (its
    columns written ``t.{<column>}``, other tables ``{<role>}``, values ``%(name)s`` as a state's); NULL says
    nothing."""

    table: str  # the role of the table whose rows it is about
    label: str
    query: str
    columns: tuple[tuple[str, str], ...] = ()  # as State.columns
    params: tuple[tuple[str, object], ...] = ()  # as State.params


@dataclass(frozen=True)
class Command:
    """The library's own command for a row (to resume, cancel, replay it), shown on the row's page when the row is
    in one of ``meanings``: idemdash never runs it. ``text`` names the row's columns as ``{<column>}`` and the
    schema as ``{schema}``; each value is shell-quoted."""

    table: str
    label: str
    text: str
    meanings: tuple[str, ...]


@dataclass(frozen=True)
class Index:
    """An index idemdash advises on one of the library's tables, for its pages' counts and lists: built only by
    `idemdash check --apply-indexes`, named ``<table>_<purpose>_idemdash_idx``, never one of the library's own."""

    table: str  # the role of the table it is on
    purpose: str  # part of its name
    query: str  # its CREATE INDEX CONCURRENTLY block in queries/profile_indexes.sql
    why: str
    version: str | None = None  # advised for this version of the shape only; None: for every version


@dataclass(frozen=True)
class Version:
    name: str
    table: str  # the role of the table whose columns tell it
    present: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()


@dataclass(frozen=True)
class Source:
    repo: str  # owner/name on GitHub
    path: str
    commit: str


@dataclass(frozen=True)
class Default:
    """A value the library itself uses, as the setting it becomes (``INBOX_RETENTION_DAYS``, ``DEFAULT_LEASE_SECONDS``)
    where the configuration sets none; ``source`` names where the library says so (a file, a constant, its docs)."""

    setting: str
    value: int
    source: str
    note: str = ""  # where the setting cannot say it exactly (a window shorter than a day)


@dataclass(frozen=True)
class LibraryAction:
    """A write the library itself documents and performs on one of its rows, which an operator may do in its place
    on a database whose ``LIBRARY_ACTIONS`` names it (off by default). idemdash does exactly what the library does,
    nothing more: ``condition`` is the library's own (a block of ``queries/library_actions.sql``, filled in like a
    state's), ``sets`` the assignments it makes (another block, ``{column} = value, ...``). The write is a
    compare-and-set: the row must still meet ``condition`` and still hold what the operator saw in ``expected``."""

    name: str  # release-dead-node: what LIBRARY_ACTIONS names, and the last part of its URL
    tables: tuple[str, ...]  # the roles of the tables whose rows it changes (one row a time)
    label: str  # its button
    does: str  # what it does, in the library's words
    source: Source  # the library's file that does it
    condition: str  # block: the library's condition on the row, checked again when writing
    sets: str  # block: the assignments the library makes
    expected: tuple[str, ...] = ()  # columns whose values the operator saw are passed back and must still hold
    changes: tuple[str, ...] = ()  # the columns ``sets`` changes (their values before and after go to the audit)


@dataclass(frozen=True)
class Profile:
    name: str
    library: str
    default_schema: str
    tables: tuple[Table, ...]
    states: tuple[State, ...]
    cleanup: str  # the library's own cleanup rule, in words
    sources: tuple[Source, ...]
    versions: tuple[Version, ...] = ()  # the first that fits wins
    namings: tuple[str, ...] = (AS_IS,)
    indexes: tuple[Index, ...] = ()
    # where the library's own cleaner deletes rows it has not finished (by age alone), in words; idemdash never does
    unfinished_cleanup: str = ""
    # (version, table role, identity columns): a version whose rows are told apart by other columns than the table's
    version_identity: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # writes the library documents and does itself, which a database may enable (LIBRARY_ACTIONS); none by default
    actions: tuple[LibraryAction, ...] = ()
    # where the library leaves acting on a row to the application (no action from the database side): how the
    # application does it, in words, shown on a row's page
    application_acts: str = ""
    # a logical replication slot reads the outbox's rows from the write-ahead log (Debezium): what is pending is what
    # the slot has not confirmed, so its lag is shown beside the rows, and /health says when nothing reads them
    reads_wal: bool = False
    # the zone its LOCAL_TIMESTAMP columns are written in when the configuration names none (LIBRARY_TIMEZONE's
    # default for it: an IANA name, or "local"); "" : it writes none
    timezone: str = ""
    facts: tuple[Fact, ...] = ()  # told on a row's page
    # the library's own retention and lock timeout, as settings a database of it gets where its configuration sets none
    defaults: tuple[Default, ...] = ()
    commands: tuple[Command, ...] = ()  # the library's own, shown on a row's page

    def table(self, role: str) -> Table:
        for table in self.tables:
            if table.role == role:
                return table
        raise KeyError(f"profile {self.name!r} has no {role!r} table")

    def table_of(self, role: str, version: str | None) -> Table:
        """The table of ``role`` as ``version`` of the shape has it (its identity may differ by version)."""
        table = self.table(role)
        for of_version, of_role, identity in self.version_identity:
            if of_version == version and of_role == role:
                return replace(table, identity=identity)
        return table

    def action(self, name: str) -> LibraryAction:
        for action in self.actions:
            if action.name == name:
                return action
        raise KeyError(f"profile {self.name!r} has no action {name!r}")

    def states_meaning(self, meaning: str) -> tuple[State, ...]:
        return tuple(s for s in self.states if s.meaning == meaning)

    def states_of(self, version: str | None) -> tuple[State, ...]:
        """The states that hold for ``version`` of the shape (a state without a version holds for all)."""
        return tuple(s for s in self.states if s.version is None or s.version == version)
