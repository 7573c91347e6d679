"""Downstream of the clients: an outbox relay that publishes (and sometimes fails), and inbox consumers that see
each published event, and now and then a redelivery or a producer's tampered duplicate."""

from __future__ import annotations

import queue
import uuid
from collections import deque

import psycopg

from idemdash.queries.app_schema import MESSAGE_MISMATCH, consume_message
from idemdash.queries.workload.simulate import (
    PendingEvent,
    list_pending_outbox_events_for_publish,
    mark_outbox_published,
    record_outbox_publish_failures,
)
from idemdash.workload.scenario import (
    CONSUMER_RESULTS,
    CONSUMER_ROUTES,
    MESSAGE_MISMATCH_RATE,
    PUBLISH_BATCH,
    PUBLISH_FAILURE_RATE,
    PUBLISH_RETRY_FRACTION,
    REDELIVERY_RATE,
    UNROUTABLE_EVENT,
    Delivery,
    Run,
    digest,
)


class Publisher:
    """Outbox relay: locks pending rows, 'publishes' them, sometimes fails; runs a little behind the producers."""

    def __init__(self, sim: Run) -> None:
        self.sim = sim
        self.rng = sim.rng("publisher")

    def wait_next(self) -> bool:
        return not self.sim.stop.wait(self.sim.publish_interval * self.rng.uniform(0.7, 1.3))

    def step(self, conn: psycopg.Connection) -> None:
        with conn.transaction():
            events = list_pending_outbox_events_for_publish(
                conn, self.sim.tables, PUBLISH_BATCH, PUBLISH_RETRY_FRACTION
            )
            failed: list[PendingEvent] = []
            delivered: list[PendingEvent] = []
            for event in events:
                if event.event_type == UNROUTABLE_EVENT or self.rng.random() < PUBLISH_FAILURE_RATE:
                    failed.append(event)
                else:
                    delivered.append(event)
            if delivered:
                mark_outbox_published(conn, self.sim.tables, [e.outbox_id for e in delivered])
            if failed:
                record_outbox_publish_failures(conn, self.sim.tables, [e.outbox_id for e in failed])
        self.sim.stats.add("published", len(delivered))
        self.sim.stats.add("publish_failed", len(failed))
        for event in delivered:  # handed to the broker only once the commit succeeded
            try:
                self.sim.deliveries.put_nowait(Delivery(str(event.outbox_id), event.event_type))
            except queue.Full:
                break


class Consumer:
    """Inbox consumers downstream of the publisher; the broker redelivers now and then."""

    def __init__(self, sim: Run) -> None:
        self.sim = sim
        self.rng = sim.rng("consumer")
        self.recent: deque[tuple[str, str, str]] = deque(maxlen=500)

    def wait_next(self) -> bool:
        return not self.sim.stop.is_set()

    def step(self, conn: psycopg.Connection) -> None:
        try:
            delivery = self.sim.deliveries.get(timeout=0.2)
        except queue.Empty:
            return
        message_hash = digest(delivery.event_type, delivery.message_id)
        for consumer in CONSUMER_ROUTES.get(delivery.event_type, ("analytics",)):
            self._consume(conn, consumer, delivery.message_id, message_hash)
            self.recent.append((consumer, delivery.message_id, message_hash))
            if self.rng.random() < REDELIVERY_RATE:
                self._consume(conn, *self.rng.choice(self.recent))
            if self.rng.random() < MESSAGE_MISMATCH_RATE:
                # a producer bug: the same message id with another body
                other, message_id, _ = self.rng.choice(self.recent)
                self._consume(conn, other, message_id, digest("tampered", message_id))

    def _consume(self, conn: psycopg.Connection, consumer: str, message_id: str, message_hash: str) -> None:
        result_type = CONSUMER_RESULTS.get(consumer)
        try:
            with conn.transaction():
                outcome = consume_message(
                    conn,
                    self.sim.tables,
                    consumer,
                    message_id,
                    message_hash,
                    result_type,
                    uuid.uuid4() if result_type else None,
                )
        except psycopg.Error as exc:
            if exc.sqlstate == MESSAGE_MISMATCH:
                self.sim.stats.add("message_mismatch")
                return
            raise
        self.sim.stats.add(outcome)
