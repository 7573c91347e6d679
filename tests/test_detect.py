"""`idemdash detect` finds each library's tables, created by the library's own DDL (tests/library_ddl.py), in
its default schema and in another, names two libraries in one database, nothing in an empty one, and never
claims a near miss."""

from __future__ import annotations

import json
import re
import tomllib

import psycopg
import pytest
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.core import settings
from idemdash.core.databases import load_databases
from idemdash.core.profiles import PROFILES
from idemdash.core.profiles.detect import snake_case
from tests import library_ddl as ddl


@pytest.fixture(autouse=True)
def _no_config(monkeypatch):
    monkeypatch.delenv("IDEMDASH_CONFIG", raising=False)


def run(url: str, *extra: str) -> str:
    result = CliRunner().invoke(main, ["detect", "--database-url", url, *extra])
    assert result.exit_code == 0, result.output
    return result.output


def found(url: str) -> list[tuple[str, str | None, str, dict[str, str]]]:
    (document,) = json.loads(run(url, "--json"))
    return [(e["profile"], e["version"], e["schema"], e["tables"]) for e in document["found"]]


def create(url: str, schema: str, *statements: str, **fields: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        for text in statements:
            conn.execute(text.replace("{schema}", f'"{schema}"').format_map(_Keep(fields)))


class _Keep(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _masstransit_snake() -> str:
    return re.sub(r'"([A-Za-z_]+)"', lambda m: snake_case(m.group(1)), ddl.MASSTRANSIT)


def _nservicebus(prefix: str) -> str:
    return ddl.NSERVICEBUS + f"SELECT pg_temp.create_outbox_table('{prefix}', '{{schema_name}}');"


CASES = [
    # profile, version, default schema, statements, the tables found by role
    ("spring-modulith", "v1", "public", [ddl.SPRING_MODULITH_V1], {"outbox": "event_publication"}),
    (
        "spring-modulith",
        "v2",
        "public",
        [ddl.SPRING_MODULITH_V2],
        {"outbox": "event_publication", "archive": "event_publication_archive"},
    ),
    (
        "masstransit",
        None,
        "public",
        [ddl.MASSTRANSIT],
        {"inbox": "InboxState", "outbox_state": "OutboxState", "outbox": "OutboxMessage"},
    ),
    (
        "masstransit",
        None,
        "public",
        [_masstransit_snake()],
        {"inbox": "inbox_state", "outbox_state": "outbox_state", "outbox": "outbox_message"},
    ),
    (
        "wolverine",
        None,
        "wolverine",
        [ddl.WOLVERINE],
        {
            "inbox": "wolverine_incoming_envelopes",
            "outbox": "wolverine_outgoing_envelopes",
            "dead_letters": "wolverine_dead_letters",
            "nodes": "wolverine_nodes",
        },
    ),
    ("brandur", None, "public", [ddl.BRANDUR], {"keys": "idempotency_keys"}),
    ("nservicebus", None, "public", [_nservicebus("Sales_")], {"outbox": "Sales_OutboxData"}),
    ("eventuate", "message-id", "eventuate", [ddl.EVENTUATE], {"outbox": "message", "inbox": "received_messages"}),
    ("eventuate", "db-id", "eventuate", [ddl.EVENTUATE_DB_ID], {"outbox": "message"}),
    (
        "pg-transactional-outbox",
        None,
        "public",
        [
            ddl.PG_TRANSACTIONAL_OUTBOX.replace("{table}", "outbox"),
            ddl.PG_TRANSACTIONAL_OUTBOX.replace("{table}", "inbox"),
        ],
        {"outbox": "outbox", "inbox": "inbox"},
    ),
    ("debezium-outbox", None, "public", [ddl.DEBEZIUM], {"outbox": "outboxevent"}),
    ("cap", None, "cap", [ddl.CAP], {"outbox": "published", "inbox": "received"}),
    (
        "dbos",
        None,
        "dbos",
        [ddl.DBOS],
        {
            "keys": "workflow_status",
            "operation_outputs": "operation_outputs",
            "workflow_input": "workflow_input",
            "workflow_output": "workflow_output",
            "application_versions": "application_versions",
        },
    ),
]
IDS = [
    "spring-v1",
    "spring-v2",
    "masstransit",
    "masstransit-snake",
    "wolverine",
    "brandur",
    "nservicebus",
    "eventuate",
    "eventuate-db-id",
    "pg-transactional-outbox",
    "debezium",
    "cap",
    "dbos",
]


def _create_case(url: str, schema: str, statements: list[str]) -> None:
    create(url, schema, *[s.replace("{schema_name}", schema) for s in statements])


@pytest.mark.parametrize("schema_kind", ["default", "other"])
@pytest.mark.parametrize(("name", "version", "default_schema", "statements", "tables"), CASES, ids=IDS)
def test_each_library_is_found_by_its_own_ddl(
    empty_database_url, schema_kind, name, version, default_schema, statements, tables
):
    schema = default_schema if schema_kind == "default" else "Billing Events"
    _create_case(empty_database_url, schema, statements)
    assert found(empty_database_url) == [(name, version, schema, tables)]


def test_every_profile_has_a_case_here():
    assert {case[0] for case in CASES} | {"reference"} == set(PROFILES)


def test_the_reference_tables_are_found_and_print_lines_to_paste(database_url, tmp_path):
    assert found(database_url) == [
        (
            "reference",
            None,
            "app",
            {"keys": "idempotency_request", "inbox": "processed_message", "outbox": "outbox_event"},
        )
    ]
    output = run(database_url)
    assert output.startswith("# reference in schema app: idempotency_request (keys)")
    config = tomllib.loads(output)
    assert config == {
        "databases": {"reference": {"url": "postgresql://USER:PASSWORD@HOST:5432/DATABASE", "app_schema": "app"}}
    }
    # what it prints is what IDEMDASH_CONFIG takes, once the url is filled in
    path = tmp_path / "idemdash.toml"
    path.write_text(output.replace("postgresql://USER:PASSWORD@HOST:5432/DATABASE", database_url))
    [database] = load_databases(settings.load({}, CONFIG=str(path)))
    assert database.name == "reference"


def test_another_librarys_entry_is_printed_to_paste_and_loads_as_a_read_only_database(empty_database_url, tmp_path):
    _create_case(empty_database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    output = run(empty_database_url)
    assert "# read-only: idemdash shows these tables' states" in output
    assert tomllib.loads(output)["databases"]["spring-modulith"] == {
        "url": "postgresql://USER:PASSWORD@HOST:5432/DATABASE",
        "profile": "spring-modulith",
        "app_schema": "modulith",
    }
    path = tmp_path / "idemdash.toml"
    path.write_text(output.replace("postgresql://USER:PASSWORD@HOST:5432/DATABASE", empty_database_url))
    [database] = load_databases(settings.load({}, CONFIG=str(path)))
    assert (database.settings.profile, database.settings.app_schema, database.settings.outbox_table) == (
        "spring-modulith",
        "modulith",
        "event_publication",
    )


def test_nothing_is_found_in_an_empty_database(empty_database_url):
    assert found(empty_database_url) == []
    assert run(empty_database_url).strip() == "no known table shape in this database"


def test_two_libraries_in_one_database_are_both_named_with_their_lines(empty_database_url):
    _create_case(empty_database_url, "modulith", [ddl.SPRING_MODULITH_V2])
    _create_case(
        empty_database_url, "public", [_masstransit_snake(), _nservicebus("Orders."), _nservicebus("Billing_")]
    )
    assert [(p, v, s) for p, v, s, _ in found(empty_database_url)] == [
        ("spring-modulith", "v2", "modulith"),
        ("masstransit", None, "public"),
        ("nservicebus", None, "public"),
        ("nservicebus", None, "public"),
    ]
    (document,) = json.loads(run(empty_database_url, "--json"))
    assert all(entry["served"] for entry in document["found"])
    config = {
        name: body for entry in document["found"] for name, body in tomllib.loads(entry["toml"])["databases"].items()
    }
    assert config["spring-modulith"] == {
        "url": "postgresql://USER:PASSWORD@HOST:5432/DATABASE",
        "profile": "spring-modulith",
        "app_schema": "modulith",
    }
    assert {k: v for k, v in config["masstransit"].items() if k != "url"} == {
        "profile": "masstransit",
        "app_schema": "public",
        "inbox_table": "inbox_state",
        "outbox_state_table": "outbox_state",
        "outbox_table": "outbox_message",
    }
    assert config["nservicebus"]["outbox_table"] == "Billing_OutboxData"
    assert config["nservicebus-public"]["outbox_table"] == "Orders.OutboxData"


NEAR_MISSES = [
    # a table of the library's name lacking a required column, or with the wrong type
    (
        ddl.SPRING_MODULITH_V1.replace("completion_date  TIMESTAMP WITH TIME ZONE,", "").replace(
            "ON {schema}.event_publication (completion_date)", "ON {schema}.event_publication (publication_date)"
        )
    ),
    ddl.BRANDUR.replace("recovery_point", "recovery_pt"),
    ddl.EVENTUATE_DB_ID.replace("creation_time BIGINT", "creation_time TIMESTAMPTZ"),
    ddl.DEBEZIUM.replace("aggregateid varchar(255) NOT NULL,", ""),
    ddl.BRANDUR.replace("TIMESTAMPTZ DEFAULT now(),\n", "TIMESTAMP DEFAULT now(),\n", 1),
]


@pytest.mark.parametrize(
    "statement", NEAR_MISSES, ids=["spring", "brandur", "eventuate-type", "debezium", "brandur-lock-type"]
)
def test_a_near_miss_is_not_claimed(empty_database_url, statement):
    create(empty_database_url, "public", statement)
    assert found(empty_database_url) == []


def test_a_near_miss_of_one_table_leaves_the_libraries_others_unclaimed(empty_database_url):
    """Wolverine without its dead-letter table is not Wolverine; MassTransit's optional tables may be absent."""
    create(empty_database_url, "wolverine", ddl.WOLVERINE, "DROP TABLE wolverine.wolverine_dead_letters")
    create(empty_database_url, "bus", ddl.MASSTRANSIT, 'DROP TABLE bus."OutboxMessage"')
    assert found(empty_database_url) == []
