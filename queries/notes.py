"""Triage notes: what an operator wrote on a key during an incident (who, when, text), kept with its audit row."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from idemdash.queries import Tables, statement
from idemdash.queries.transactions import select_all, select_one

MAX_NOTE = 4000


@dataclass(frozen=True)
class Note:
    note_id: int
    scope: str
    key: str
    at: datetime
    author: str
    text: str
    audit_id: int | None  # the audit row written with it (set when the note is written)


def insert_triage_note(
    conn: psycopg.Connection, tables: Tables, scope: str, key: str, *, author: str, text: str
) -> Note | None:
    """The note and its audit row, in the caller's transaction; None when there is no such key."""
    return select_one(
        conn,
        statement("insert_triage_note", tables),
        {"scope": scope, "key": key, "author": author, "text": text},
        Note,
    )


def list_notes_for_key(conn: psycopg.Connection, scope: str, key: str, limit: int = 100) -> list[Note]:
    return select_all(conn, statement("list_notes_for_key"), {"scope": scope, "key": key, "limit": limit}, Note)
