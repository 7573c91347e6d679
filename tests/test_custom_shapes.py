"""A home-grown table described in IDEMDASH_CONFIG (``profile = "custom"`` and a shape): validated at start with
one line per mistake, then read like a library's tables (states, rows, a row, metrics) and purged only where a done
row is older than the retention."""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.core import settings
from idemdash.core.databases import load_databases
from idemdash.core.settings import ConfigError

TABLE = """
CREATE SCHEMA payments;
CREATE TABLE payments.events_out (
    id bigint PRIMARY KEY, status text NOT NULL, created_at timestamptz NOT NULL, sent_at timestamptz,
    locked_until timestamptz, body jsonb NOT NULL);
INSERT INTO payments.events_out VALUES
  (1, 'NEW',     now() - interval '2 hours', NULL, NULL, '{}'),
  (2, 'RETRY',   now() - interval '1 hour',  NULL, NULL, '{}'),
  (3, 'SENDING', now() - interval '3 hours', NULL, now() - interval '1 minute', '{}'),
  (4, 'SENDING', now(),                      NULL, now() + interval '5 minutes', '{}'),
  (5, 'SENT',    now() - interval '40 days', now() - interval '40 days', NULL, '{}'),
  (6, 'SENT',    now() - interval '1 day',   now() - interval '1 day', NULL, '{}'),
  (7, 'DEAD',    now() - interval '40 days', NULL, NULL, '{}');
"""
SHAPE = """
[databases.payments]
url = "{url}"
profile = "custom"
app_schema = "payments"

[databases.payments.shape]
library = "the payments service's outbox"

[databases.payments.shape.outbox]
table = "events_out"
identity = ["id"]
state = "status"
time = "created_at"
pending = ["NEW", "RETRY"]
in_progress = ["SENDING"]
done = ["SENT"]
failed = ["DEAD"]
lease = "locked_until"
done_time = "sent_at"
payload = "body"
"""


@pytest.fixture(autouse=True)
def _no_config(monkeypatch):
    monkeypatch.delenv("IDEMDASH_CONFIG", raising=False)


def _config(tmp_path, text: str) -> str:
    path = tmp_path / "idemdash.toml"
    path.write_text(text)
    return str(path)


def test_a_custom_shape_is_read_like_a_librarys_tables_and_purged_only_where_done_and_old(
    make_app, empty_database_url, tmp_path
):
    with psycopg.connect(empty_database_url, autocommit=True) as conn:
        conn.execute(TABLE)
    config = _config(tmp_path, SHAPE.format(url=empty_database_url))
    client = make_app(None, CONFIG=config, DATABASE_URL="", OUTBOX_RETENTION_DAYS=30).test_client()
    answer = client.get("/api/v1/tables").get_json()
    assert (answer["profile"], answer["library"], answer["problem"]) == (
        "custom:payments",
        "the payments service's outbox",
        None,
    )
    states = {s["meaning"]: s["count"] for s in answer["tables"][0]["states"]}
    assert states == {"pending": 2, "in progress": 2, "stuck": 1, "done": 2, "failed": 1, "purgeable": 1}
    stuck = client.get("/api/v1/tables/outbox?state=stuck").get_json()["items"]
    assert [(i["identity"], i["row"]["status"]) for i in stuck] == [("[3]", "SENDING")]
    assert "body" not in stuck[0]["row"]
    row = client.get("/api/v1/tables/outbox/row", query_string={"id": "[5]"}).get_json()
    assert {s["meaning"] for s in row["states"] if s["inside"]} == {"done", "purgeable"}
    # its keys page says it has none (tests/test_profile_on_call.py reads its outbox's)
    assert client.get("/api/v1/keys").get_json()["no_table"].startswith("the payments service's outbox has no keys")
    assert (
        'profile="custom:payments",role="outbox",state="pending",table="events_out"} 2.0'
        in client.get("/metrics").data.decode()
    )

    runner = CliRunner()
    assert runner.invoke(main, ["migrate", "--database", "payments"], env={"IDEMDASH_CONFIG": config}).exit_code == 0
    purge = runner.invoke(
        main,
        ["purge", "--database", "payments"],
        env={"IDEMDASH_CONFIG": config, "IDEMDASH_OUTBOX_RETENTION_DAYS": "30"},
    )
    assert purge.exit_code == 0, purge.output
    with psycopg.connect(empty_database_url) as conn:
        left = [i for (i,) in conn.execute("SELECT id FROM payments.events_out ORDER BY id")]
    assert left == [1, 2, 3, 4, 6, 7]  # only the SENT row sent 40 days ago; the old DEAD one stays


def test_every_mistake_in_a_shape_is_one_line_naming_it(tmp_path):
    bad = """
[databases.payments]
url = "postgresql://localhost/payments"
profile = "custom"

[databases.payments.shape.outbox]
table = "events_out"
identity = "id"
state = "status"
time_unit = "seconds"
pending = "NEW"
stuck_after = "soon"
colour = "red"

[databases.payments.shape.queue]
table = "q"
"""
    with pytest.raises(ConfigError) as raised:
        load_databases(settings.load({}, CONFIG=_config(tmp_path, bad)))
    lines = str(raised.value).splitlines()
    assert all(
        line.startswith(f"IDEMDASH_CONFIG {tmp_path / 'idemdash.toml'}: [databases.payments]: shape.") for line in lines
    ), lines
    said = " ".join(lines)
    for mistake in (
        "shape.outbox.colour: unknown key",
        "shape.outbox.time: required",
        "shape.outbox.identity: expected a list",
        "shape.outbox.time_unit: expected one of",
        "shape.outbox.pending: expected a list of state values",
        "shape.outbox.stuck_after: expected a duration",
        "shape.queue: unknown role",
    ):
        assert mistake in said, mistake
    assert len(lines) == 8, lines  # the 7 above, and that no meaning has state values left


def test_a_custom_profile_needs_its_shape_and_a_shape_needs_the_custom_profile(tmp_path):
    with pytest.raises(ConfigError, match="IDEMDASH_PROFILE=custom needs the tables' shape"):
        settings.load({"IDEMDASH_PROFILE": "custom"})
    no_shape = '[databases.p]\nurl = "postgresql://localhost/p"\nprofile = "custom"\n'
    with pytest.raises(ConfigError, match=r"needs a \[databases.p.shape.<role>\] table"):
        load_databases(settings.load({}, CONFIG=_config(tmp_path, no_shape)))
    stray = '[databases.p]\nurl = "postgresql://localhost/p"\n[databases.p.shape.outbox]\ntable = "x"\n'
    with pytest.raises(ConfigError, match='shape describes custom tables: it needs profile = "custom"'):
        load_databases(settings.load({}, CONFIG=_config(tmp_path, stray)))
