"""A command over several databases (IDEMDASH_CONFIG without --database): each database in the file's order, one
line saying what it came to (or the one-line cause of its failure), on past a database that fails
(``--keep-going``, the default) or stopping there (``--fail-fast``), then one summary line; the exit status is
the worst of the databases'.

One database (no file, ``--database-url`` or ``--database NAME``) runs exactly as it always has: its errors end
the command with their own message and status.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import click
import psycopg

from idemdash.cli.common import heading
from idemdash.core.formatting import plural
from idemdash.queries.target import Target

keep_going_option = click.option(
    "--keep-going/--fail-fast",
    "keep_going",
    default=True,
    show_default=True,
    help="With several databases: go on past a database that fails (cannot be reached, an error), reporting each "
    "one, or stop at the first and leave the rest unattempted. Either way the exit status is 1 when any failed.",
)


@dataclass(frozen=True)
class Outcome:
    """What one database's run came to."""

    kind: str  # a word for the summary's count: "migrated", "up to date", "purged", "failed" ...
    status: int = 0  # the exit status this database alone gives (the command's own, 0 or 1)
    detail: str = ""  # what it did, or for a failure its cause in one line
    failed: bool = False  # could not do its work (cannot connect, an error): --fail-fast stops after it


def failure(detail: str) -> Outcome:
    return Outcome("failed", 1, detail, failed=True)


Work = Callable[[Target], Outcome]


def each_database(
    chosen: list[Target], work: Work, *, keep_going: bool, stop: Callable[[], str | None] = lambda: None
) -> int:
    """Run ``work`` on every database of ``chosen``; returns the exit status (the worst database's).

    ``work`` raises click.ClickException (or lets a psycopg.Error through) for a database it cannot work on:
    with one database that ends the command as before; with several it is that database's failure line.
    ``stop`` says why to start no further database (Ctrl-C), or None.
    """
    if len(chosen) == 1:
        return work(chosen[0]).status
    results: list[tuple[Target, Outcome]] = []
    left: list[Target] = []
    why_left = ""
    for n, db in enumerate(chosen):
        heading(db, True)
        try:
            outcome = work(db)
        except click.ClickException as exc:
            outcome = failure(exc.format_message())
        except psycopg.Error as exc:
            outcome = failure(str(db.cause_of(exc)))
        results.append((db, outcome))
        click.echo(f"-- {db.name}: {outcome.kind}" + (f": {outcome.detail}" if outcome.detail else ""))
        why_left = stop() or ("--fail-fast" if outcome.failed and not keep_going else "")
        if why_left:
            left = chosen[n + 1 :]
            break
    click.echo(summary(results, left, why_left))
    return max(outcome.status for _, outcome in results)


def summary(results: list[tuple[Target, Outcome]], left: list[Target], why_left: str = "") -> str:
    """``3 databases: 1 migrated, 1 up to date, 1 failed: billing (cannot connect ...)``, and the ones never
    attempted."""
    total = len(results) + len(left)
    counts: dict[str, int] = {}
    for _, outcome in results:
        counts[outcome.kind] = counts.get(outcome.kind, 0) + 1
    parts = [f"{count} {kind}" for kind, count in counts.items() if kind != "failed"]
    failed = [(db, outcome) for db, outcome in results if outcome.failed]
    if failed:
        parts.append(f"{len(failed)} failed: " + "; ".join(f"{db.name} ({outcome.detail})" for db, outcome in failed))
    line = f"{plural(total, 'database')}: " + ", ".join(parts)
    if left:
        line += f"; {len(left)} not attempted ({why_left}): " + ", ".join(db.name for db in left)
    return line
