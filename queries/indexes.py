"""The indexes idemdash's queries need, named so a timed-out panel can say which would help."""
from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from queries import QUERIES, Tables, statement


@dataclass(frozen=True)
class IndexAdvice:
    name: str       # the block in indexes.sql, e.g. index_keys_processing
    table: str      # 'keys', 'inbox' or 'outbox'
    why: str

    def index_name(self, tables: Tables) -> str:
        base = getattr(tables, self.table)
        return f"{base}_{self.name.removeprefix('index_').split('_', 1)[1]}_idemdash_idx"[:63]

    def create_statement(self, tables: Tables) -> sql.Composable:
        return statement(self.name, tables, index_name=sql.Identifier(self.index_name(tables)))

    def as_text(self, tables: Tables) -> str:
        return self.create_statement(tables).as_string(None)


ADVICE = {
    name: IndexAdvice(name, name.split("_")[1], QUERIES[name].description)
    for name in QUERIES if name.startswith("index_")
}
