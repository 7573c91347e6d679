"""Each library's tables as the library itself creates them, for tests/test_detect.py. `{schema}` is where they go.

Copied from the library's own file where it ships SQL (named above each block: repo, path, commit); rebuilt from
its code where it ships none (MassTransit's EF model, Wolverine's Weasel tables), as its tool renders them; DBOS's
straight from the installed dbos package's own migrations.
"""

from __future__ import annotations

from dbos._migration import get_dbos_migrations

from idemdash.queries.workload import QUERIES

# the text of each library's block in queries/workload/library_ddl.sql (queries/workload/library_demo.py names them;
# the demo creates the same tables)
SPRING_MODULITH_V1 = QUERIES["library_ddl_spring_modulith_v1"].text
SPRING_MODULITH_V2 = QUERIES["library_ddl_spring_modulith_v2"].text
MASSTRANSIT = QUERIES["library_ddl_masstransit"].text
WOLVERINE = QUERIES["library_ddl_wolverine"].text
BRANDUR = QUERIES["library_ddl_brandur"].text
NSERVICEBUS = QUERIES["library_ddl_nservicebus"].text
EVENTUATE = QUERIES["library_ddl_eventuate"].text
EVENTUATE_DB_ID = QUERIES["library_ddl_eventuate_db_id"].text
PG_TRANSACTIONAL_OUTBOX = QUERIES["library_ddl_pg_transactional_outbox"].text
DEBEZIUM = QUERIES["library_ddl_debezium"].text
CAP = QUERIES["library_ddl_cap"].text


def _dbos() -> str:
    """DBOS Transact's system database as the installed dbos package (3.4) migrates it at launch: every migration of
    dbos/_migration.py's get_dbos_migrations, in order, for a schema written ``{schema}`` (braces of its own
    doubled for the format step of tests/test_detect.py's create). CONCURRENTLY is left out: DBOS runs those
    statements one by one outside a transaction, here they run as one batch; the tables are the same. Like DBOS, it
    skips migration 10 (a primary key migration one already created)."""
    marker = "idemdash_schema_marker"
    migrations = get_dbos_migrations(marker, True)
    del migrations[9]  # migration 10, which DBOS skips on a notifications table created with its primary key
    text = ";\n".join(m for m in migrations if m.strip())
    text = text.replace("{", "{{").replace("}", "}}").replace("CONCURRENTLY ", "")
    return text.replace(f'"{marker}"', "{schema}").replace(marker, "{schema}")


DBOS = _dbos()
