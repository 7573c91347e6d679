"""The statements of `idemdash demo --profile` (workload/library_demo.py): a library's own tables, created by its
DDL (library_ddl.sql, which the tests create too; DBOS's by DBOS itself, workload/dbos_demo.py), their history and each
second's workload (library_demo.sql)."""

from __future__ import annotations

import psycopg
from psycopg import sql

from idemdash.queries.workload import statement

# Each library's own DDL, as a block of library_ddl.sql: what the demo and the tests (tests/library_ddl.py) create
# (not DBOS's: in the demo its own application creates its tables, in the tests its own migrations).
LIBRARY_DDL = {
    "spring-modulith v1": "library_ddl_spring_modulith_v1",
    "spring-modulith": "library_ddl_spring_modulith_v2",
    "masstransit": "library_ddl_masstransit",
    "wolverine": "library_ddl_wolverine",
    "brandur": "library_ddl_brandur",
    "nservicebus": "library_ddl_nservicebus",
    "eventuate": "library_ddl_eventuate",
    "eventuate db-id": "library_ddl_eventuate_db_id",
    "pg-transactional-outbox": "library_ddl_pg_transactional_outbox",
    "debezium-outbox": "library_ddl_debezium",
    "cap": "library_ddl_cap",
}


def table_exists(conn: psycopg.Connection, schema: str, table: str) -> bool:
    row = conn.execute(
        statement("library_demo_table_exists"), {"table": sql.Identifier(schema, table).as_string(conn)}
    ).fetchone()
    return bool(row and row[0])


# pg-transactional-outbox's DDL is one block for its two tables of one shape, `{table}` in it (a constraint's name
# too, so the library's fixed names go in as they are, not quoted)
PG_TRANSACTIONAL_OUTBOX_TABLES = ("outbox", "inbox")
# NServiceBus's DDL defines the installer's function; the demo runs it for the profile's default table, "OutboxData"
NSERVICEBUS_TABLE_PREFIX = ""


def create_library_tables(conn: psycopg.Connection, library: str, schema: str) -> None:
    conn.execute(statement("library_demo_create_schema", schema=sql.Identifier(schema)))
    if library == "pg-transactional-outbox":
        for table in PG_TRANSACTIONAL_OUTBOX_TABLES:
            conn.execute(statement(LIBRARY_DDL[library], schema=sql.Identifier(schema), table=sql.SQL(table)))
        return
    conn.execute(statement(LIBRARY_DDL[library], schema=sql.Identifier(schema)))
    if library == "nservicebus":
        conn.execute(
            statement("library_demo_nservicebus_create_outbox"), {"prefix": NSERVICEBUS_TABLE_PREFIX, "schema": schema}
        )


def run_block(conn: psycopg.Connection, block: str, schema: str, **values: int | str) -> None:
    """One of library_demo.sql's history or workload blocks on the library's schema (``host_zone``: the simulated
    application hosts' zone, for a library that writes their wall clock; a block that writes none ignores it)."""
    conn.execute(statement(block, schema=sql.Identifier(schema)), values)
