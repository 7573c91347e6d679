"""`idemdash demo --profile NAME`: a library's own tables (queries/workload/library_ddl.sql, the DDL the tests use)
with days of history and a live workload that moves rows through the library's states as the library would
(queries/workload/library_demo.sql): Spring Modulith's publications published, taken, completed, failed or left
hanging; MassTransit's inbox states received, consumed and delivered, or faulted; Brandur-style keys locked,
finished, crashed holding their lock, or stopped at a recovery point; Wolverine's envelopes received by live nodes,
left unowned, scheduled, handled and kept, dead-lettered, sent, or held by a dead node; NServiceBus's outbox rows
stored and dispatched; Eventuate's messages written, relayed and received; pg-transactional-outbox's messages
leased, processed, abandoned or left stuck by a crashed worker, outbox to inbox; Debezium outbox events inserted and
some deleted; DotNetCore.CAP's published and received messages stored, delayed, queued, sent or executed, failed,
or left behind by a crashed instance, their times from this machine's clock as CAP's DateTime.Now would write them
(``HOST_ZONE``). DBOS is the one library whose demo runs the library itself: a real DBOS application
(workload/dbos_demo.py) creates its tables and drives the present, its history written here like the others'.
Retention purges and the rollup job run on it like on any library database."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import psycopg

from idemdash.core.profiles import profile
from idemdash.core.time_parsers import LOCAL_ZONE, zone_name
from idemdash.queries.migrate import migrate
from idemdash.queries.workload import library_demo as library_tables
from idemdash.workload import dbos_demo

log = logging.getLogger(__name__)

HISTORY_ROWS = 20_000
# the demo's history spans forty days at least: rows past the default retentions (thirty days for inbox and key
# tables, seven for the others), so every purgeable state has rows for the scheduler's purges to take
HISTORY_DAYS = 40
TICK_SECONDS = 1.0
# the zone of the demo's simulated application hosts: this machine's, which is also what a library profile that
# writes local time (CAP: LIBRARY_TIMEZONE = local) reads its naive timestamps in
HOST_ZONE = zone_name(LOCAL_ZONE)


@dataclass(frozen=True)
class LibraryDemo:
    table: str  # the table its history fills (to tell a new database)
    history: str  # its history block
    ticks: tuple[tuple[str, int], ...]  # each second: (block, rows it writes: %(n)s)
    app: bool = False  # the library's own application creates its tables and is the workload


DEMOS = {
    "spring-modulith": LibraryDemo(
        "event_publication",
        "library_demo_spring_history",
        (("library_demo_spring_publish", 4), ("library_demo_spring_listen", 0)),
    ),
    "masstransit": LibraryDemo(
        "InboxState",
        "library_demo_masstransit_history",
        (("library_demo_masstransit_receive", 6), ("library_demo_masstransit_consume", 0)),
    ),
    "brandur": LibraryDemo(
        "idempotency_keys",
        "library_demo_brandur_history",
        (("library_demo_brandur_request", 3), ("library_demo_brandur_finish", 0)),
    ),
    "wolverine": LibraryDemo(
        "wolverine_incoming_envelopes",
        "library_demo_wolverine_history",
        (
            ("library_demo_wolverine_heartbeat", 0),
            ("library_demo_wolverine_receive", 6),
            ("library_demo_wolverine_recover", 0),
            ("library_demo_wolverine_handle", 0),
            ("library_demo_wolverine_fail", 0),
            ("library_demo_wolverine_send", 4),
        ),
    ),
    "nservicebus": LibraryDemo(
        "OutboxData",
        "library_demo_nservicebus_history",
        (("library_demo_nservicebus_handle", 5), ("library_demo_nservicebus_dispatch", 0)),
    ),
    "eventuate": LibraryDemo(
        "message",
        "library_demo_eventuate_history",
        (
            ("library_demo_eventuate_send", 5),
            ("library_demo_eventuate_relay", 0),
            ("library_demo_eventuate_consume", 0),
        ),
    ),
    "pg-transactional-outbox": LibraryDemo(
        "outbox",
        "library_demo_pg_transactional_outbox_history",
        (
            ("library_demo_pg_transactional_outbox_write", 4),
            ("library_demo_pg_transactional_outbox_take", 0),
            ("library_demo_pg_transactional_outbox_finish", 0),
            ("library_demo_pg_transactional_outbox_handle", 0),
        ),
    ),
    "debezium-outbox": LibraryDemo(
        "outboxevent",
        "library_demo_debezium_history",
        (("library_demo_debezium_emit", 3), ("library_demo_debezium_clean", 0)),
    ),
    "cap": LibraryDemo(
        "published",
        "library_demo_cap_history",
        (
            ("library_demo_cap_publish", 5),
            ("library_demo_cap_send", 0),
            ("library_demo_cap_receive", 5),
            ("library_demo_cap_execute", 0),
        ),
    ),
    "dbos": LibraryDemo("workflow_status", "library_demo_dbos_history", (), app=True),
}


def set_up(url: str, name: str, backfill_days: int) -> str:
    """The library's tables in its default schema (and idemdash's own schema, for the purge history), with
    ``backfill_days`` of history when they are new; returns the schema."""
    demo, schema = DEMOS[name], profile(name).default_schema
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        if not library_tables.table_exists(conn, schema, demo.table):
            if demo.app:  # DBOS creates its tables and registers the older version, leaving its workflows PENDING
                dbos_demo.leave_leftovers(url, schema)
            else:
                library_tables.create_library_tables(conn, name, schema)
            if backfill_days:
                library_tables.run_block(
                    conn, demo.history, schema, n=HISTORY_ROWS, days=backfill_days, host_zone=HOST_ZONE
                )
    return schema


def workload(url: str, name: str, schema: str) -> Workload:
    """The library demo's live workload, not started: the library's own application where it has one, else ticks."""
    if DEMOS[name].app:
        return dbos_demo.DbosWorkload(url, schema)
    return LibraryWorkload(url, name, schema)


class LibraryWorkload(threading.Thread):
    """Every second, each of the library demo's ticks, on a connection of its own; stops when asked."""

    def __init__(self, url: str, name: str, schema: str) -> None:
        super().__init__(name=f"idemdash-demo-{name}", daemon=True)
        self.url, self.demo, self.schema = url, DEMOS[name], schema
        self._stop_event = threading.Event()

    def run(self) -> None:
        failed = False
        while not self._stop_event.wait(TICK_SECONDS):
            try:
                with psycopg.connect(self.url, autocommit=True) as conn:
                    while not self._stop_event.is_set():
                        for block, rows in self.demo.ticks:
                            library_tables.run_block(conn, block, self.schema, n=rows, host_zone=HOST_ZONE)
                        failed = False
                        self._stop_event.wait(TICK_SECONDS)
            except psycopg.Error as exc:
                if not failed:  # once per outage, not every second
                    log.warning("library workload paused: %s", exc)
                failed = True

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)


# what `workload` returns: either kind stops when asked (``stop``)
Workload = LibraryWorkload | dbos_demo.DbosWorkload
