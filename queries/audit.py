"""idemdash's append-only audit log of operator actions."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from queries import statement
from queries.db import select_all


@dataclass(frozen=True)
class AuditEntry:
    audit_id: int
    at: datetime
    actor: str
    action: str
    scope: str | None
    key: str | None
    from_status: str | None
    to_status: str | None
    reason: str | None
    evidence: Any
    detail: Any


def list_audit_for_key(conn: psycopg.Connection, scope: str, key: str, limit: int = 100) -> list[AuditEntry]:
    return select_all(conn, statement("list_audit_for_key"), {"scope": scope, "key": key, "limit": limit}, AuditEntry)
