"""Activity checks: long-running and idle-in-transaction sessions, and advisory locks with the session that
holds each and the key it guards where that can be worked out (docs/concepts.md, Advisory locks per key)."""

from __future__ import annotations

import psycopg

from idemdash.checks import shared_reads
from idemdash.checks.finding import FAIL, OK, WARN, Check, KeyLink
from idemdash.core.formatting import duration
from idemdash.core.settings import Settings
from idemdash.queries import Tables, health, health_fixes
from idemdash.queries.purges import TABLES as PURGE_TABLES

# Sessions: one query running this long warns, a transaction idle this long warns; either this long fails.
LONG_QUERY_SECONDS = 300
IDLE_IN_TRANSACTION_SECONDS = 60
LONG_SESSION_FAIL_SECONDS = 3600
MAX_SESSION_FINDINGS = 20
QUERY_CHARS = 200  # of a session's query text shown in a finding
IDLE_TIMEOUT_SUGGESTED = "5min"

# Advisory locks: held this long by a session idle in a transaction warns; waiting always does.
ADVISORY_LOCK_IDLE_SECONDS = 300
MAX_LOCK_FINDINGS = 20  # locks listed (waiting first) and matched against keys
LOCK_KEY_CANDIDATES = 10_000  # most recently leased processing keys a lock is compared with
LOCKED_KEYS_PER_LOCK = 3
LOCK_DERIVATIONS = (
    "hashtextextended(idempotency_scope || ':' || idempotency_key, 0)",
    "hashtextextended(idempotency_key, 0)",
    "hashtext(idempotency_scope || ':' || idempotency_key)",
    "hashtext(idempotency_key)",
    "(hashtext(idempotency_scope), hashtext(idempotency_key)) for a two-key lock",
)


def check_sessions(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """(g) No session runs one query for long or sits idle in an open transaction (they hold locks and vacuum)."""
    sessions = health.list_long_sessions(
        conn,
        active_seconds=LONG_QUERY_SECONDS,
        idle_seconds=IDLE_IN_TRANSACTION_SECONDS,
        query_chars=QUERY_CHARS,
        limit=MAX_SESSION_FINDINGS + 1,
    )
    count = health.count_sessions(conn)
    findings = [_session_finding(s) for s in sessions[:MAX_SESSION_FINDINGS]]
    if len(sessions) > MAX_SESSION_FINDINGS:
        findings.append(
            Check(
                "session.more",
                WARN,
                f"More long or idle-in-transaction sessions than the {MAX_SESSION_FINDINGS} listed",
                "The oldest transactions are listed first; deal with those, then look again.",
            )
        )
    if count.hidden:
        findings.append(
            Check(
                "sessions.hidden",
                WARN,
                f"{count.hidden} session{'s' if count.hidden != 1 else ''} of other roles cannot be checked",
                "PostgreSQL shows another role's session (its state, times and query) only to superusers and members "
                "of pg_read_all_stats, so idemdash cannot tell whether those sessions run long or sit idle in a "
                "transaction, nor who holds an advisory lock. Grant that role to the one idemdash connects as (it also "
                "lets it read every session's query text), or accept that these checks cover its own sessions only.",
                fix_sql=health_fixes.fix_grant_read_all_stats(count.role),
            )
        )
    if not sessions:
        findings.append(
            Check(
                "sessions",
                OK,
                "No long-running or idle-in-transaction sessions",
                f"Checked {count.sessions - count.hidden} other client session(s) of this database: none has run one "
                "query "
                f"for {duration(LONG_QUERY_SECONDS)} or been idle in a transaction for "
                f"{duration(IDLE_IN_TRANSACTION_SECONDS)}.",
            )
        )
    return findings


def _session_finding(session: health.Session) -> Check:
    idle = session.state.startswith("idle in transaction")
    seconds = (session.state_seconds if idle else session.query_seconds) or 0
    longest = max(seconds, session.transaction_seconds or 0)
    who = _who(session.pid, session.application_name, session.user_name, session.client_addr)
    if idle:
        title = f"Session {session.pid} idle in a transaction for {duration(seconds)}"
        why = (
            "An open transaction keeps every row lock it took (a claimed key row stays locked: reclassifying and "
            "purging skip it or wait) and its snapshot stops VACUUM from removing dead tuples in every table."
        )
        fix_sql = (
            "-- check first that nobody works in it (ask the application's owner); ending it rolls its "
            f"transaction back and releases its locks:\n{health_fixes.fix_terminate_backend(session.pid)}"
        )
        fix = (
            f"idle_in_transaction_session_timeout, so PostgreSQL ends such sessions itself: "
            f"{health_fixes.fix_idle_in_transaction_timeout(session.user_name, IDLE_TIMEOUT_SUGGESTED)}"
            if session.user_name
            else "idle_in_transaction_session_timeout"
        )
    else:
        title = f"Session {session.pid} running one query for {duration(seconds)}"
        why = (
            "A long query holds its snapshot, so VACUUM cannot remove dead tuples newer than it in any table, and "
            "it may hold locks that purges, claims and reclassifications wait for."
        )
        fix_sql = (
            "-- check first what it is (the query above); cancelling stops the query, the session stays:\n"
            f"{health_fixes.fix_cancel_backend(session.pid)};\n"
            "-- if it does not stop, end the session (its transaction rolls back):\n"
            f"{health_fixes.fix_terminate_backend(session.pid)}"
        )
        fix = None
    return Check(
        f"session.{session.pid}",
        FAIL if longest >= LONG_SESSION_FAIL_SECONDS else WARN,
        title,
        f"{who}; {session.state} for {duration(seconds)}, transaction open "
        f"{duration(session.transaction_seconds)}. {'Last query' if idle else 'Query'}: "
        f"{_query_text(session.query)} {why}",
        fix_sql=fix_sql,
        fix=fix,
    )


def _who(pid: int, application: str | None, user: str | None, client_addr: str | None) -> str:
    return f"pid {pid}, user {user or '?'}, application {application!r}, from {client_addr or 'a local socket'}"


def _query_text(query: str | None) -> str:
    if not query or query == "<insufficient privilege>":
        return "(hidden: only superusers and members of pg_read_all_stats see another role's query text)."
    text = " ".join(query.split())
    return repr(text + ("…" if len(query) >= QUERY_CHARS else "")) + "."


def idemdash_locks() -> dict[str, str]:
    """The text idemdash hashes for each of its own advisory locks → what holds it."""
    own = {
        health.lock_name("migration_lock"): "idemdash migrate",
        health.lock_name("try_rollup_lock"): "idemdash's rollup writer",
        health.lock_name("try_snapshot_lock"): "idemdash's snapshot writer",
    }
    prefix = health.lock_name("try_purge_lock")  # the statement appends the table: 'idemdash.purge.' || table
    own.update({f"{prefix}{table}": f"idemdash's {table} purge" for table in PURGE_TABLES})
    return own


def check_advisory_locks(conn: psycopg.Connection, tables: Tables, config: Settings) -> list[Check]:
    """(h) Who holds advisory locks (docs/concepts.md, Advisory locks per key), linked to the processing key each
    guards where that can be told."""
    locks = health.list_advisory_locks(conn, idemdash_locks(), limit=MAX_LOCK_FINDINGS)
    if not locks:
        return [
            Check(
                "advisory_lock",
                OK,
                "No advisory locks held in this database",
                "Neither the application nor idemdash (migrations, purges, rollups, snapshots) holds one.",
            )
        ]
    guarded: dict[tuple[int, bool], list[health.LockedKey]] = {}
    others = [lock for lock in locks if lock.idemdash_lock is None]
    key_columns = {"idempotency_scope", "idempotency_key", "status", "claimed_by", "locked_until"}
    if others and key_columns <= set(shared_reads.table_columns(conn, tables).get("keys", {})):
        for match in health.list_advisory_lock_keys(
            conn, tables, others, candidates=LOCK_KEY_CANDIDATES, per_lock=LOCKED_KEYS_PER_LOCK
        ):
            guarded.setdefault((match.lock_key, match.two_keys), []).append(match)
    findings = [_lock_finding(lock, guarded.get((lock.lock_key, lock.two_keys), [])) for lock in locks]
    if locks[0].total > len(locks):
        findings.append(
            Check(
                "advisory_lock.more",
                OK,
                f"{locks[0].total - len(locks)} more advisory locks",
                f"Only {len(locks)} are listed and linked to keys: waiting ones first, then those of "
                "the oldest transactions.",
            )
        )
    return findings


def _lock_finding(lock: health.AdvisoryLock, keys: list[health.LockedKey]) -> Check:
    idle = (lock.state or "").startswith("idle in transaction")
    held_idle = lock.granted and idle and (lock.state_seconds or 0) >= ADVISORY_LOCK_IDLE_SECONDS
    what = f"{lock.idemdash_lock}'s lock" if lock.idemdash_lock else f"advisory lock {lock.key_text}"
    for_key = f" for key {keys[0].key!r} in scope {keys[0].scope!r}" if len(keys) == 1 else ""
    holder = f"Session {lock.pid}" if lock.pid is not None else "A prepared transaction"
    title = f"{holder} {'holds' if lock.granted else 'waits for'} {what}{for_key}"
    if lock.pid is None:
        session = (
            "A prepared transaction (PREPARE TRANSACTION) holds it until someone runs COMMIT PREPARED or "
            "ROLLBACK PREPARED: see pg_prepared_xacts."
        )
    elif lock.hidden:
        session = (
            f"pid {lock.pid}, user {lock.user_name or '?'}, application {lock.application_name!r}: this role "
            "may not see that session's state, times or client (grant it pg_read_all_stats)."
        )
    else:
        session = (
            f"{_who(lock.pid, lock.application_name, lock.user_name, lock.client_addr)}; {lock.state} for "
            f"{duration(lock.state_seconds)}, connected for {duration(lock.session_seconds)}, "
            + (
                f"transaction open {duration(lock.transaction_seconds)}."
                if lock.transaction_seconds is not None
                else "no transaction open (a session-level lock)."
            )
        )
    kind = "two int4 keys, pg_advisory_lock(int, int)" if lock.two_keys else "bigint key, pg_advisory_lock(bigint)"
    parts = [session, f"Lock key {lock.key_text} ({kind}{', shared' if lock.mode == 'ShareLock' else ''})."]
    if lock.idemdash_lock:
        parts.append(f"This is idemdash's own lock ({lock.idemdash_lock}).")
    else:
        parts.append(_guarded_text(keys))
    status, fix_sql, fix = OK, None, None
    if not lock.granted:
        status = WARN
        blockers = lock.blocked_by or []
        parts.append(
            f"It is waiting, behind session{'s' if len(blockers) != 1 else ''} "
            f"{', '.join(map(str, blockers)) or '?'}: whatever this session does stands still until the "
            "holder unlocks, ends its transaction (for a transaction-level lock) or disconnects."
        )
        if blockers:
            fix_sql = (
                "-- check first what the holding session does; ending it releases its locks and rolls back "
                "its transaction:\n" + ";\n".join(health_fixes.fix_terminate_backend(pid) for pid in blockers)
            )
    elif held_idle and lock.pid is not None:  # idle in a transaction: a session's, so it has a pid
        status = WARN
        parts.append(
            f"Its session has been idle in a transaction for {duration(lock.state_seconds)} while holding "
            "it: the lock stays until the application commits or disconnects, and a worker that gave up "
            "mid-request on a pooled connection looks just like this."
        )
        fix_sql = (
            "-- check first that nobody works in it; ending it releases the lock and rolls back its "
            f"transaction:\n{health_fixes.fix_terminate_backend(lock.pid)}"
        )
        fix = "idle_in_transaction_session_timeout, so PostgreSQL ends such sessions itself"
    key_id = f"{lock.key1}.{lock.key2}" if lock.two_keys else str(lock.lock_key)
    shared = ".shared" if lock.mode == "ShareLock" else ""
    return Check(
        f"advisory_lock.{lock.pid or 'prepared'}.{key_id}{shared}",
        status,
        title,
        " ".join(parts),
        fix_sql=fix_sql,
        fix=fix,
        keys=tuple(KeyLink(k.scope, k.key) for k in keys),
    )


def _guarded_text(keys: list[health.LockedKey]) -> str:
    tried = (
        f"Compared with these derivations of the {LOCK_KEY_CANDIDATES:,} most recently leased processing keys "
        f"(hashtext's int4 widened to bigint): {'; '.join(LOCK_DERIVATIONS)}; and with claimed_by = the "
        "holder's application_name."
    )
    if not keys:
        return f"Not linked to a key: nothing matched. {tried}"
    if keys[0].derivation == health.BY_HOLDER:
        listed = ", ".join(f"{k.key!r} in scope {k.scope!r}" for k in keys)
        return (
            f"No derivation matched, but processing key(s) {listed} are claimed_by this session's "
            f"application_name, so it probably guards one of them. {tried}"
        )
    texts = []
    for k in keys:
        text = f"{k.key!r} in scope {k.scope!r}: {k.derivation} equals the lock key"
        if k.same_holder:
            text += " and the key is claimed_by this session's application_name"
        texts.append(text)
    return f"Guards processing key {'; '.join(texts)}. {tried}"
