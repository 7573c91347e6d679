"""The catalog as `idemdash detect` reads it: every table's columns and types, matched against the table-shape
profiles of ``core.profiles``."""
from __future__ import annotations

from dataclasses import dataclass

import psycopg

from idemdash.core.profiles.detect import Found, detect
from idemdash.queries import statement
from idemdash.queries.transactions import select_all


@dataclass(frozen=True)
class CatalogColumn:
    schema_name: str
    table_name: str
    column_name: str
    data_type: str


def list_catalog_columns(conn: psycopg.Connection) -> list[CatalogColumn]:
    return select_all(conn, statement("list_catalog_columns"), None, CatalogColumn)


def find_shapes(conn: psycopg.Connection) -> list[Found]:
    """Every known table shape in the database, by schema."""
    return detect((c.schema_name, c.table_name, c.column_name, c.data_type) for c in list_catalog_columns(conn))
