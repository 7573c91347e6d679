"""Each library's tables in a real Chromium, the way an operator follows them: a library database's overview (its
tables and their states), a state's rows, one row's page; seeded with the library's own DDL and rows whose states
are known (tests/test_profile_states.py)."""

from __future__ import annotations

import psycopg
import pytest
from playwright.sync_api import expect

from tests import library_ddl as ddl
from tests.test_detect import _create_case, _nservicebus
from tests.test_profile_states import BRANDUR_ROWS, SPRING_V1_ROWS, SPRING_V2_ROWS, WOLVERINE_ROWS

pytestmark = pytest.mark.browser

MASSTRANSIT_ROWS = """
INSERT INTO public."InboxState" ("MessageId", "ConsumerId", "LockId", "Received", "ReceiveCount", "Consumed",
                                 "Delivered") VALUES
  (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), now() - interval '2 hours', 3, NULL, NULL),
  (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), now() - interval '40 days', 1, now() - interval '40 days',
   now() - interval '40 days')
"""

NSERVICEBUS_ROWS = """
INSERT INTO public."Sales_OutboxData" ("MessageId", "Dispatched", "DispatchedAt", "PersistenceVersion", "Operations")
VALUES ('m-1', false, NULL, '8.0.0', '[]'), ('m-2', false, NULL, '8.0.0', '[]'),
       ('m-3', true, (now() AT TIME ZONE 'UTC') - interval '1 hour', '8.0.0', '[]')
"""
EVENTUATE_ROWS = """
INSERT INTO eventuate.message (id, destination, headers, payload, published, creation_time) VALUES
  ('0001', 'orders', '{}', '{"order": 1}', 0, (extract(epoch FROM now()) * 1000)::bigint - 60000),
  ('0002', 'orders', '{}', '{"order": 2}', 1, (extract(epoch FROM now()) * 1000)::bigint - 60000)
"""
PG_TRANSACTIONAL_ROWS = """
INSERT INTO public.outbox (id, aggregate_type, aggregate_id, message_type, payload, created_at, processed_at,
                           abandoned_at) VALUES
  (gen_random_uuid(), 'order', '1', 'order_created', '{}', now() - interval '1 hour', NULL, NULL),
  (gen_random_uuid(), 'order', '2', 'order_created', '{}', now() - interval '1 hour', NULL, now())
"""
DEBEZIUM_ROWS = """
INSERT INTO public.outboxevent (id, aggregatetype, aggregateid, type, payload) VALUES
  (gen_random_uuid(), 'order', '1', 'OrderCreated', '{}'), (gen_random_uuid(), 'order', '2', 'OrderCreated', '{}')
"""
# CAP writes DateTime.Now, the host's wall clock: here Asia/Kolkata's (LIBRARY_TIMEZONE below)
CAP_ROWS = """
INSERT INTO cap."published" ("Id", "Version", "Name", "Content", "Retries", "Added", "ExpiresAt", "StatusName") VALUES
  (1, 'v1', 'orders.created', '{}', 0, (now() AT TIME ZONE 'Asia/Kolkata') - interval '2 hours', NULL, 'Scheduled'),
  (2, 'v1', 'orders.remind', '{}', 0, (now() AT TIME ZONE 'Asia/Kolkata') - interval '1 hour',
   (now() AT TIME ZONE 'Asia/Kolkata') - interval '20 minutes', 'Queued'),
  (3, 'v1', 'orders.created', '{}', 0, (now() AT TIME ZONE 'Asia/Kolkata') - interval '1 minute', NULL, 'Scheduled')
"""
ZONES = {"cap": "Asia/Kolkata"}
# DBOS: v2 is the latest version; a PENDING v1 workflow no launch of v2 recovers, a PENDING v2 one of an executor
# silent for an hour, one running now, a success
DBOS_ROWS = """
INSERT INTO dbos.application_versions (version_id, version_name, version_timestamp) VALUES
  ('a', 'v1', (extract(epoch FROM now()) * 1000)::bigint - 7200000),
  ('b', 'v2', (extract(epoch FROM now()) * 1000)::bigint - 3600000);
INSERT INTO dbos.workflow_status (workflow_uuid, status, name, executor_id, application_version, created_at,
                                  updated_at) VALUES
  ('wf-old', 'PENDING', 'ship', 'e1', 'v1', (extract(epoch FROM now()) * 1000)::bigint - 7200000,
   (extract(epoch FROM now()) * 1000)::bigint - 7200000),
  ('wf-silent', 'PENDING', 'ship', 'e2', 'v2', (extract(epoch FROM now()) * 1000)::bigint - 3600000,
   (extract(epoch FROM now()) * 1000)::bigint - 3600000),
  ('wf-running', 'PENDING', 'ship', 'e3', 'v2', (extract(epoch FROM now()) * 1000)::bigint,
   (extract(epoch FROM now()) * 1000)::bigint),
  ('wf-done', 'SUCCESS', 'ship', 'e3', 'v2', (extract(epoch FROM now()) * 1000)::bigint,
   (extract(epoch FROM now()) * 1000)::bigint);
INSERT INTO dbos.operation_outputs (workflow_uuid, function_id, function_name, completed_at_epoch_ms) VALUES
  ('wf-old', 0, 'reserve', (extract(epoch FROM now()) * 1000)::bigint - 7100000)
"""

# profile, schema, DDL, rows, (table role, state) to follow, how many rows it holds
CASES = [
    ("brandur", "public", [ddl.BRANDUR], BRANDUR_ROWS, ("keys", "in progress"), 2),
    ("spring-modulith", "public", [ddl.SPRING_MODULITH_V1], SPRING_V1_ROWS, ("outbox", "pending"), 2),
    ("spring-modulith", "public", [ddl.SPRING_MODULITH_V2], SPRING_V2_ROWS, ("outbox", "failed"), 2),
    ("wolverine", "wolverine", [ddl.WOLVERINE], WOLVERINE_ROWS, ("inbox", "in progress"), 2),
    ("masstransit", "public", [ddl.MASSTRANSIT], MASSTRANSIT_ROWS, ("inbox", "stuck"), 1),
    ("nservicebus", "public", [_nservicebus("Sales_")], NSERVICEBUS_ROWS, ("outbox", "pending"), 2),
    ("eventuate", "eventuate", [ddl.EVENTUATE], EVENTUATE_ROWS, ("outbox", "pending"), 1),
    (
        "pg-transactional-outbox",
        "public",
        [ddl.PG_TRANSACTIONAL_OUTBOX.replace("{table}", "outbox")],
        PG_TRANSACTIONAL_ROWS,
        ("outbox", "failed"),
        1,
    ),
    ("debezium-outbox", "public", [ddl.DEBEZIUM], DEBEZIUM_ROWS, ("outbox", "pending"), 2),
    ("cap", "cap", [ddl.CAP], CAP_ROWS, ("outbox", "stuck"), 2),
    ("dbos", "dbos", [ddl.DBOS], DBOS_ROWS, ("keys", "stuck"), 2),
]


@pytest.mark.parametrize(
    ("name", "schema", "statements", "rows", "follow", "count"),
    CASES,
    ids=[
        "brandur",
        "spring-v1",
        "spring-v2",
        "wolverine",
        "masstransit",
        "nservicebus",
        "eventuate",
        "pg-transactional-outbox",
        "debezium",
        "cap",
        "dbos",
    ],
)
def test_an_operator_follows_a_librarys_state_to_a_row(
    live_server, make_app, page, empty_database_url, name, schema, statements, rows, follow, count
):
    _create_case(empty_database_url, schema, statements)
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(rows)
    zone = {"LIBRARY_TIMEZONE": ZONES[name]} if name in ZONES else {}
    base = live_server(make_app(empty_database_url, PROFILE=name, DEFAULT_LEASE_SECONDS=300, **zone))
    page.goto(base + "/tables")
    expect(page.locator("h1")).to_have_text("Tables")
    expect(page.locator("header")).to_contain_text(f"{name} · read-only")
    if name == "cap":  # its backlog by Name, the longest waiting first
        backlog = page.locator("table.profile-backlog[data-role=outbox] tbody tr")
        expect(backlog).to_have_count(2)
        expect(backlog.first).to_contain_text("orders.created")
    role, state = follow
    cell = page.locator(f"tr[data-role={role}] td[data-meaning='{state}'] a")
    expect(cell).to_have_text(str(count))
    cell.click()
    expect(page).to_have_url(f"{base}/tables/{role}?state={state.replace(' ', '+')}")
    listed = page.locator("table.library-rows tbody tr")
    expect(listed).to_have_count(count)
    expect(page.locator("nav.tabs a[aria-current=page]")).to_have_text(state.capitalize())
    listed.first.locator("a").click()
    expect(page.locator("ul.row-states")).to_contain_text(f"is {state}")
    expect(page.locator("table.row-columns")).to_be_visible()
    if name == "dbos":  # the oldest stuck workflow: why, its last step, and DBOS's own commands
        expect(page.locator("dl.row-facts")).to_contain_text("application version 'v1' is no longer the latest")
        expect(page.locator("dl.row-facts")).to_contain_text("reserve (step 0), completed")
        expect(page.locator("dl.row-commands")).to_contain_text("dbos workflow resume wf-old")
    page.locator("p.breadcrumb a", has_text="Tables").click()
    expect(page.locator("h1")).to_have_text("Tables")
