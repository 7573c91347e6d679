"""The demo's simulated on-call engineer: every so often, the stuck keys whose lease ran out some minutes ago are
triaged and reclassified through the same functions the dashboard's reclassify action uses (the suggestion and its
evidence from ``core.triage``, the locked compare-and-set UPDATE of ``queries.reclassify``), as ``demo-oncall``
with a reason, so each decision shows in /audit and in the key's history like a person's.

The keys that were stuck before its shift began (the backfill's crashed keys, those of a demo that was stopped) are
left for a person: someone new to the demo finds stuck keys to try the key page's Reclassify on, however long they
take to get there."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

import psycopg
from psycopg import errors

from idemdash.core.triage import suggest
from idemdash.queries import Tables
from idemdash.queries import keys as key_queries
from idemdash.queries.reclassify import Reclassification, lock_key_for_action, reclassify_key

log = logging.getLogger(__name__)

ACTOR = "demo-oncall"
REASONS = {
    "safe_to_retry": "on-call triage: the worker died before its effect (no outbox row); released for the client's "
    "retry",
    "already_succeeded": "on-call triage: the outbox row shows the effect committed; completing the key with that "
    "result",
    "abandoned": "on-call triage: no effect committed and no retry expected; closing the key as failed",
}


@dataclass(frozen=True)
class OnCallSettings:
    after_seconds: float = 240.0  # a key must have been overdue this long before the on-call acts on it
    every_seconds: float = 60.0  # how often the on-call looks
    per_pass: int = 200  # at most this many keys per look
    lease_seconds: int = 300  # IDEMDASH_DEFAULT_LEASE_SECONDS: the lease of a key without locked_until
    replay_horizon_seconds: int = 86400
    hotspot_min_attempts: int = 5


def _change(
    to: str, detail: key_queries.KeyDetail, outbox: list[key_queries.KeyOutboxRow], evidence: list[str]
) -> Reclassification | None:
    """What the on-call decides for a suggestion: the suggested outcome; a hotspot (suggested needs_review) is
    closed as abandoned, since the on-call has looked and retrying would fail the same way."""
    base = Reclassification(
        to=to,
        reason=REASONS.get(to, ""),
        actor=ACTOR,
        evidence=evidence,
        expected_attempt_count=detail.attempt_count,
        check_locked_until=True,
        expected_locked_until=detail.locked_until,
    )
    if to == "already_succeeded" and outbox:
        effect = outbox[0]
        return replace(
            base,
            result_ref_type=effect.aggregate_type,
            result_ref_id=effect.aggregate_id,
            response_body={"id": effect.aggregate_id, "status": "ok", "completed_by": ACTOR},
        )
    if to in ("safe_to_retry", "abandoned"):
        return base
    if to == "needs_review":
        return replace(
            base,
            to="abandoned",
            reason=REASONS["abandoned"] + f" (attempted {detail.attempt_count} times: a retry would fail the same way)",
        )
    return None


def stuck_since(row: key_queries.KeyRow, lease_seconds: int) -> datetime | None:
    """When a key's lease ran out: its locked_until, or without one its claim plus the default lease."""
    if row.locked_until is not None:
        return row.locked_until
    return None if row.claimed_at is None else row.claimed_at + timedelta(seconds=lease_seconds)


def triage_pass(
    conn: psycopg.Connection, tables: Tables, settings: OnCallSettings, *, leave_stuck_before: datetime | None = None
) -> Counter[str]:
    """One look at the stuck keys overdue at least ``after_seconds``: each is reclassified as its evidence
    suggests, except those stuck before ``leave_stuck_before`` (the start of its shift), left for a person (``left``).
    Returns how many keys went to each outcome (and ``skipped``: changed or locked meanwhile)."""
    done: Counter[str] = Counter()
    flt = key_queries.KeyFilter(status="stuck", min_overdue_seconds=settings.after_seconds)
    # the keys that went stuck last first: those left for a person, stuck before the shift, come at the end
    with conn.transaction():
        page = key_queries.list_keys(
            conn, tables, flt, lease_seconds=settings.lease_seconds, limit=settings.per_pass, order="desc"
        )
    for row in page.items:
        since = stuck_since(row, settings.lease_seconds)
        if leave_stuck_before is not None and since is not None and since < leave_stuck_before:
            done["left"] += 1
            continue
        with conn.transaction():
            detail = key_queries.get_key(conn, tables, row.scope, row.key, lease_seconds=settings.lease_seconds)
            outbox = key_queries.list_outbox_for_key(conn, tables, row.scope, row.key)
        if detail is None or not detail.stuck:
            done["skipped"] += 1
            continue
        suggestion = suggest(detail, outbox, hotspot_min_attempts=settings.hotspot_min_attempts, now=detail.as_of)
        change = _change(suggestion.to or "", detail, outbox, suggestion.evidence)
        if change is None:
            done["skipped"] += 1
            continue
        try:
            with conn.transaction():
                locked = lock_key_for_action(conn, tables, row.scope, row.key)
                result = (
                    None
                    if locked is None
                    else reclassify_key(
                        conn,
                        tables,
                        locked,
                        change,
                        lease_seconds=settings.lease_seconds,
                        replay_horizon_seconds=settings.replay_horizon_seconds,
                    )
                )
        except errors.LockNotAvailable:  # its worker is finishing it right now: leave it
            result = None
        done[change.to if result is not None and result.changed else "skipped"] += 1
    return done


class OnCall:
    """A thread that runs ``triage_pass`` every ``every_seconds`` on its own connection until stopped."""

    def __init__(
        self,
        database_url: str,
        tables: Tables,
        settings: OnCallSettings,
        expected_error: Callable[[], bool] = lambda: False,
    ) -> None:
        self.database_url, self.tables, self.settings = database_url, tables, settings
        self.expected_error = expected_error  # True: the caller says this error's cause itself
        self.stop_event = threading.Event()
        self.resolved: Counter[str] = Counter()
        # the start of its shift: keys stuck before it are left for a person to try
        self.shift_started = datetime.now(timezone.utc)
        self._thread = threading.Thread(target=self._run, name="idemdash-demo-oncall", daemon=True)

    def start(self) -> None:
        self.shift_started = datetime.now(timezone.utc)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.stop_event.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self.stop_event.wait(self.settings.every_seconds):
            try:
                with psycopg.connect(
                    self.database_url, connect_timeout=3, application_name="idemdash-demo-oncall"
                ) as conn:
                    done = triage_pass(conn, self.tables, self.settings, leave_stuck_before=self.shift_started)
            except psycopg.Error as exc:  # the database is away; the next look tries again
                if not self.expected_error():
                    log.info("on-call could not look at the stuck keys: %s", str(exc).strip().splitlines()[0])
                continue
            done.pop("skipped", None)
            done.pop("left", None)
            if done:
                self.resolved.update(done)
                log.info(
                    "on-call (%s) reclassified %s",
                    ACTOR,
                    ", ".join(f"{n} stuck key{'s' if n != 1 else ''} {to}" for to, n in sorted(done.items())),
                )
