"""idemdash's own schema: numbered, append-only migrations under an advisory lock.

Migrations are ``queries/migrations/NNNN_what.sql``. They run in one
transaction that first takes a transaction-level advisory lock, so replicas
booting together serialise: the first applies, the others wait, then find
nothing left to do. A migration that was applied and later edited is refused
(its checksum no longer matches), because migrations are append-only.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from importlib import resources

import psycopg

from idemdash.queries import statement
from idemdash.queries.transactions import select_all

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    text: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass(frozen=True)
class AppliedMigration:
    version: int
    name: str
    checksum: str
    applied_at: datetime


class MigrationError(RuntimeError):
    pass


def list_migrations() -> list[Migration]:
    found = []
    for entry in resources.files(f"{__package__}.migrations").iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise MigrationError(f"migration numbers must run 1..N without gaps, found {versions}")
    return found


def migrate(conn: psycopg.Connection) -> list[Migration]:
    """Apply every pending migration; returns those applied (empty when up to date)."""
    migrations = list_migrations()
    with conn.transaction():
        conn.execute(statement("migration_lock"))
        conn.execute(statement("create_migration_table"))
        applied = {a.version: a for a in select_all(conn, statement("list_applied_migrations"), None, AppliedMigration)}
        pending = []
        for migration in migrations:
            done = applied.get(migration.version)
            if done is None:
                pending.append(migration)
            elif done.checksum != migration.checksum:
                raise MigrationError(
                    f"migration {migration.version:04d}_{migration.name} was changed after it was applied; "
                    "migrations are append-only, add a new one instead"
                )
        for migration in pending:
            conn.execute(migration.text.encode())
            conn.execute(
                statement("record_migration"),
                {"version": migration.version, "name": migration.name, "checksum": migration.checksum},
            )
    return pending
