"""Every setting idemdash reads, declared once with its default and meaning.

Settings come from environment variables named ``IDEMDASH_<NAME>``. The README's
configuration table is checked against this list by the tests, so a new setting
without documentation fails CI.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

PREFIX = "IDEMDASH_"


def _bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected a boolean (1/0, true/false), got {raw!r}")


def _identifier(raw: str) -> str:
    # Identifiers are quoted with psycopg.sql.Identifier anyway; this only
    # rejects values that are certainly typos (empty, whitespace, too long).
    if not raw or raw != raw.strip() or len(raw) > 63:
        raise ValueError(f"expected a PostgreSQL identifier of 1-63 characters, got {raw!r}")
    if "%" in raw:
        raise ValueError(f"identifiers containing '%' are not supported, got {raw!r}")
    return raw


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise ValueError(f"expected a positive integer, got {raw!r}")
    return value


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {raw!r}")
        return value

    return parse


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    parse: Callable[[str], Any]
    doc: str

    @property
    def env(self) -> str:
        return PREFIX + self.name


SETTINGS: tuple[Setting, ...] = (
    Setting("DATABASE_URL", "", str,
            "libpq connection string or URL of the database that holds the application tables."),
    Setting("APP_SCHEMA", "app", _identifier,
            "Schema of the application's idempotency, inbox and outbox tables."),
    Setting("KEYS_TABLE", "idempotency_request", _identifier,
            "Name of the idempotency-key table inside the application schema."),
    Setting("INBOX_TABLE", "processed_message", _identifier,
            "Name of the processed-message (inbox) table."),
    Setting("OUTBOX_TABLE", "outbox_event", _identifier,
            "Name of the transactional outbox table."),
    Setting("SECRET_KEY", "", str,
            "Flask secret key for sessions and CSRF tokens. Unset: a random key per process "
            "(fine for one process, not for several gunicorn workers)."),
    Setting("READ_ONLY", False, _bool,
            "`1` hides and refuses every state-changing action (reclassify, purge), for every user."),
    Setting("BULK_MAX_KEYS", 1000, _positive_int,
            "Most keys one bulk reclassification changes; the operator repeats the call for more."),
    Setting("RUNBOOK_URL", "", str,
            "Runbook link template with `{scope}`, `{key}` and `{status}` (URL-encoded when filled in). "
            "Empty: the built-in runbook page for stuck keys."),
    Setting("HOTSPOT_MIN_ATTEMPTS", 5, _positive_int,
            "`attempt_count` from which a key counts as a retry hotspot."),
    Setting("INBOX_RETENTION_DAYS", 30, _positive_int,
            "How long inbox rows are kept; the inbox page compares each consumer's oldest row with it."),
    Setting("DEFAULT_LEASE_SECONDS", 300, _positive_int,
            "Lease assumed for a `processing` key whose `locked_until` is NULL: it is stuck once "
            "`claimed_at` is older than this."),
    Setting("STATEMENT_TIMEOUT_MS", 3000, _positive_int,
            "Statement timeout for page and API reads (READ ONLY transactions)."),
    Setting("LOCK_TIMEOUT_MS", 500, _positive_int,
            "Lock timeout for the dashboard's own writes."),
    Setting("POOL_MIN_SIZE", 1, _positive_int, "Connections the pool keeps open."),
    Setting("POOL_MAX_SIZE", 5, _positive_int, "Most connections one web worker opens."),
    Setting("POOL_TIMEOUT_SECONDS", 3, _positive_int,
            "How long a request waits for a database connection before the page answers 503 "
            "(database unreachable)."),
    Setting("RUN_JOBS", False, _bool,
            "`1` runs the scheduled jobs inside the web process (single-process setups; the demo "
            "does this). Otherwise run `idemdash scheduler` separately."),
    Setting("BIND", "127.0.0.1:8000", str, "Address `idemdash serve` listens on."),
    Setting("WORKERS", 2, _positive_int, "gunicorn worker processes for `idemdash serve`."),
)

BY_NAME = {s.name: s for s in SETTINGS}


class ConfigError(ValueError):
    pass


def load(environ: Mapping[str, str] | None = None, **overrides: Any) -> dict[str, Any]:
    """Read every setting from ``environ`` (default: os.environ).

    ``overrides`` use the bare setting names (``DATABASE_URL=...``) and win over
    the environment; they are how tests and the demo configure the app.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.name in overrides:
            values[setting.name] = overrides.pop(setting.name)
            continue
        raw = environ.get(setting.env)
        if raw is None:
            values[setting.name] = setting.default
            continue
        try:
            values[setting.name] = setting.parse(raw)
        except ValueError as exc:
            raise ConfigError(f"{setting.env}: {exc}") from None
    if overrides:
        raise ConfigError(f"unknown settings: {', '.join(sorted(overrides))}")
    return values


_PASSWORD_IN_KV = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_URL_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://[^/?#@:]*):([^/?#]*)@", re.IGNORECASE)
_PASSWORD_IN_QUERY = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)


def redact_dsn(dsn: str) -> str:
    """The DSN with any password replaced by ``***``, safe to show or log. Nothing else changes."""
    if "://" in dsn:
        dsn = _URL_USERINFO.sub(lambda m: f"{m.group(1)}:***@" if m.group(2) else f"{m.group(1)}@", dsn)
        return _PASSWORD_IN_QUERY.sub(r"\1***", dsn)
    return _PASSWORD_IN_KV.sub(r"\1***", dsn)
