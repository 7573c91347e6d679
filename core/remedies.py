"""What fixes a missing object, in one line: idemdash's schema (migrate), an application table (the settings that
name it, or init-app-schema), a privilege (the GRANT, with the role quoted as SQL wants it). A failure's diagnosis
(``core/diagnosis.py``) and the readiness check (``checks/readiness.py``) say the same words."""

from __future__ import annotations

import re


def idemdash_schema_missing(name: str = "idemdash") -> str:
    return (
        f"idemdash's own schema is missing or behind ({name} does not exist): run `idemdash migrate` "
        "(with a role that may create the schema; the README's checklist has the grants)."
    )


def table_missing(
    name: str, setting: str = "IDEMDASH_APP_SCHEMA and IDEMDASH_KEYS_TABLE / _INBOX_TABLE / _OUTBOX_TABLE"
) -> str:
    return (
        f"{name} does not exist: point {setting} at your tables, or create the reference tables with "
        "`idemdash init-app-schema`."
    )


def privilege_missing(role: str, privilege: str, table: str) -> str:
    return (
        f"role {role!r} may not {privilege} {table}: GRANT {privilege} ON {table} TO {quote_role(role)}; "
        "(`idemdash check` lists every grant this role lacks)"
    )


def quote_role(role: str) -> str:
    return role if re.fullmatch(r"[a-z_][a-z0-9_$]*", role) else '"' + role.replace('"', '""') + '"'
