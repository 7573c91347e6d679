"""`idemdash detect`: the known table shapes in a database (schema, tables, profile, version), each with the
``[databases.<name>]`` lines of IDEMDASH_CONFIG that point idemdash at it; ``--json`` for scripts.

Table-name keys are printed only where the database's name differs from the profile's default.
"""

from __future__ import annotations

import json
import re

import click

from idemdash.cli.common import connect, database_errors, databases_option, heading, targets
from idemdash.core.profiles import DEFAULT, profile
from idemdash.core.profiles.detect import Found
from idemdash.queries.catalog import find_shapes

URL_PLACEHOLDER = "postgresql://USER:PASSWORD@HOST:5432/DATABASE"


@click.command()
@databases_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="JSON for scripts: per database, every shape found with its settings and TOML lines.",
)
def detect(database_url: str, database: str | None, as_json: bool) -> None:
    """Find the tables of known libraries (every schema) and print the IDEMDASH_CONFIG lines for each."""
    chosen = targets(database_url, database)
    documents = []
    for db in chosen:
        with connect(db, "idemdash-detect") as conn, database_errors(db, "reading the catalog"):
            found = find_shapes(conn)
        entries = entries_for(found)
        if as_json:
            documents.append({"database": db.name, "found": entries})
            continue
        heading(db, len(chosen) > 1)
        if not entries:
            click.echo("no known table shape in this database")
        for entry in entries:
            click.echo(f"# {describe(entry)}")
            if entry["profile"] != DEFAULT:
                click.echo("# read-only: idemdash shows these tables' states (/tables) and changes none of their rows")
            click.echo(entry["toml"])
    if as_json:
        click.echo(json.dumps(documents, indent=2))


def describe(entry: dict) -> str:
    version = f" {entry['version']}" if entry["version"] else ""
    tables = ", ".join(f"{name} ({role})" for role, name in entry["tables"].items())
    return f"{entry['profile']}{version} in schema {entry['schema']}: {tables}"


def entries_for(found: list[Found]) -> list[dict]:
    names: set[str] = set()
    entries = []
    for shape in found:
        name = (
            _unique(_name(shape.profile), names)
            if shape.profile not in names
            else _unique(_name(f"{shape.profile}-{shape.schema}"), names)
        )
        names.add(name)
        settings = settings_for(shape)
        entries.append(
            {
                "name": name,
                "profile": shape.profile,
                "served": True,
                "version": shape.version,
                "schema": shape.schema,
                "naming": shape.naming,
                "tables": dict(shape.tables),
                "settings": settings,
                "toml": toml(name, settings),
            }
        )
    return entries


def settings_for(shape: Found) -> dict[str, str]:
    """profile (but the default one's), app_schema, and each table-name key whose table is not at the profile's
    default name."""
    settings = (
        {"app_schema": shape.schema}
        if shape.profile == DEFAULT
        else {"profile": shape.profile, "app_schema": shape.schema}
    )
    for table in profile(shape.profile).tables:
        actual = shape.table(table.role)
        if actual is not None and actual != table.name:
            settings[table.setting] = actual
    return settings


def toml(name: str, settings: dict[str, str]) -> str:
    lines = [f"[databases.{name}]", f"url = {_quote(URL_PLACEHOLDER)}"]
    lines += [f"{key} = {_quote(value)}" for key, value in settings.items()]
    return "\n".join(lines)


def _quote(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a TOML basic string is a JSON string


def _name(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-_")[:63] or "db"


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name[:60]}-{n}", n + 1
    return candidate
