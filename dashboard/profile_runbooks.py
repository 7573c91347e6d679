"""The built-in runbooks on a database whose tables record no operator's decisions: each step says what to look at
and links to the page of this database that shows it, read off the profile's role tables, their states and what they
record (core/profiles/dimensions.py). Where the library records nothing for a step, the step says so."""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import url_for

from idemdash.core.profiles.dimensions import no_table, not_recorded, records, role_table
from idemdash.core.profiles.shape import FAILED, PENDING, STUCK, Profile, Table
from idemdash.dashboard import profile_reads


@dataclass(frozen=True)
class Step:
    title: str
    text: str
    links: list[tuple[str, str]] = field(default_factory=list)  # (label, url)
    recorded: bool = True


@dataclass(frozen=True)
class Runbook:
    name: str
    endpoint: str
    title: str
    when: str
    covers: str
    library: str = ""
    lede: str = ""
    steps: list[Step] = field(default_factory=list)
    never: str = ""


def index() -> tuple[Runbook, ...]:
    return stuck(), backlog()


def _note(chosen: Profile, role: str, meaning: str) -> tuple[bool, str]:
    """Whether the library records ``meaning`` for ``role``'s table, and its own note on it."""
    for state in chosen.states:
        if state.table == role and state.meaning == meaning:
            return True, state.note
    return False, ""


def _rows(chosen: Profile, table: Table, meaning: str) -> Step:
    known, note = _note(chosen, table.role, meaning)
    if not known:
        return Step(
            f"Which rows of the {table.role} table are {meaning}?",
            f"{chosen.library} records no {meaning} state for its {table.role} table ({table.name}).",
            recorded=False,
        )
    return Step(
        f"Which rows of the {table.role} table are {meaning}?",
        f"The {meaning} rows of {table.name}, oldest first, by {chosen.library}'s own rule"
        + (f": {note}." if note else ".")
        + " Open one: its page shows every column, the states it is in, "
        "what the library says of it, and the library's own command for it where it has one.",
        [(f"{meaning} rows of {table.name}", profile_reads.state_url(table.role, meaning))],
    )


def _dimension_step(
    chosen: Profile, table: Table, dimension: str, title: str, text: str, label: str, endpoint: str
) -> Step:
    if not records(table, dimension):
        return Step(
            title,
            not_recorded(chosen, dimension, table.role)[:1].upper()
            + not_recorded(chosen, dimension, table.role)[1:]
            + ".",
            recorded=False,
        )
    column = table.owner if dimension == "owner" else table.attempts
    return Step(title, text.format(column=column, table=table.name), [(label, url_for(endpoint))])


def _acting(chosen: Profile) -> Step:
    actions = ", ".join(a.label for a in chosen.actions)
    text = chosen.application_acts or "idemdash reads these tables and changes none of their rows."
    if actions:
        text += (
            f" The library's own actions ({actions}) can be enabled for this database (LIBRARY_ACTIONS), "
            "from a row's page."
        )
    return Step("Who acts on a row?", text)


def stuck() -> Runbook:
    chosen = profile_reads.chosen()
    tables = [t for t in (role_table(chosen, r) for r in ("keys", "inbox", "outbox")) if t is not None]
    stuck_tables = [t for t in tables if _note(chosen, t.role, STUCK)[0]] or tables[:1]
    steps = [_rows(chosen, t, STUCK) for t in stuck_tables]
    first = stuck_tables[0]
    steps += [
        _dimension_step(
            chosen,
            first,
            "owner",
            "Who held them?",
            "Many stuck rows of one owner ({column}) usually mean one dead worker or node: Workers lists "
            "each owner with its stuck and in progress rows, worst first.",
            "workers",
            "workers.page",
        ),
        _dimension_step(
            chosen,
            first,
            "attempts",
            "Did they fail many times?",
            "A high {column} means retries keep dying the same way: Hotspots lists the rows tried most.",
            "hotspots",
            "hotspots.page",
        ),
        Step(
            "Find one row by its id",
            "Paste an id from a log or an alert: it is looked for among the identity columns of every table.",
            [("search", url_for("search.page"))],
        ),
        _acting(chosen),
    ]
    if role_table(chosen, "keys") is None:
        steps.insert(
            0,
            Step(
                "No keys table",
                no_table(chosen, "keys") + ": this runbook reads its other tables' stuck rows.",
                recorded=False,
            ),
        )
    return Runbook(
        "stuck-keys",
        "runbooks.stuck_keys",
        "Stuck rows",
        "The alert says rows are stuck: work claimed and never finished, or messages that no worker will take.",
        "Which rows are stuck by the library's own rule, who held them, how often they were tried, "
        "and who may act on them.",
        chosen.library,
        f"A row is stuck when {chosen.library}'s own rule says no worker will finish it as things are. "
        "Nothing is lost yet: the question is who restarts it, and whether running it again is right.",
        steps,
        "Never delete an unfinished row to clear the alert: its work or its message would be lost "
        "without a trace. " + chosen.cleanup,
    )


def backlog() -> Runbook:
    chosen = profile_reads.chosen()
    table = role_table(chosen, "outbox")
    if table is None:
        steps = [
            Step(
                "No outbox table",
                no_table(chosen, "outbox") + ".",
                [("tables", url_for("tables.page"))],
                recorded=False,
            )
        ]
    else:
        grouped = (
            f"The Tables page breaks the backlog down by {', '.join(table.groups)}, each with how long its "
            "oldest row has waited."
            if table.groups
            else not_recorded(chosen, "group", "outbox")[:1].upper()
            + not_recorded(chosen, "group", "outbox")[1:]
            + ": the backlog is one number."
        )
        steps = [
            _rows(chosen, table, PENDING),
            Step(
                "Is it one kind of message?",
                grouped,
                [("tables", url_for("tables.page"))] if table.groups else [],
                recorded=bool(table.groups),
            ),
            _rows(chosen, table, STUCK),
            _rows(chosen, table, FAILED),
            _dimension_step(
                chosen,
                table,
                "attempts",
                "Is a poison row holding it up?",
                "Rows whose {column} keeps growing are retried and refused again: Hotspots lists them, most first.",
                "hotspots",
                "hotspots.page",
            ),
            _dimension_step(
                chosen,
                table,
                "owner",
                "Is the sender running?",
                "Rows held by an owner ({column}) that no longer answers wait for it: Workers lists each owner.",
                "workers",
                "workers.page",
            ),
            _acting(chosen),
        ]
    return Runbook(
        "outbox-backlog",
        "runbooks.outbox_backlog",
        "Outbox backlog growing",
        "The alert says the outbox backlog or its lag is growing: messages are written but not sent.",
        "Pending, stuck and failed rows by the library's own rules, by kind where recorded, poison rows, "
        "the sender, and what never to do.",
        chosen.library,
        f"An outbox row waits until {chosen.library} sends it. The backlog is every pending row; the lag is "
        "the age of the oldest. Nothing is lost while rows wait: only the message is late.",
        steps,
        "Never delete a pending row to clear the backlog: its message is the only record that it "
        "must be sent. " + chosen.cleanup,
    )
