"""A custom shape's time unit and columns are checked against the database before anything is read or purged: a
unit that contradicts its column's type (a timestamp read as timestamptz ages every row by the zone's offset, seconds
read as milliseconds purge every done row at once) is refused by `idemdash check`, at start and by the purge, which
then deletes nothing; identity columns get the checks every other column gets."""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner

from idemdash.cli import main
from idemdash.core import settings
from idemdash.core.databases import load_databases
from idemdash.core.settings import ConfigError
from tests.test_custom_shapes import _config

# each row's times as timestamptz; {written} and {done} turn them into the column's type
ROWS = [(1, "NEW", "2 hours", None), (2, "SENT", "40 days", "40 days"), (3, "SENT", "1 day", "1 day")]
AS = {
    "timestamptz": "now() - interval '{}'",
    "timestamp": "(now() - interval '{}') AT TIME ZONE 'UTC'",
    "bigint seconds": "extract(epoch FROM now() - interval '{}')::bigint",
    "bigint ms": "(extract(epoch FROM now() - interval '{}') * 1000)::bigint",
}
SHAPE = """
[databases.payments]
url = "{url}"
profile = "custom"
app_schema = "payments"

[databases.payments.shape.outbox]
table = "events_out"
identity = {identity}
state = "status"
time = "created_at"
{unit}
pending = ["NEW"]
done = ["SENT"]
done_time = "sent_at"
"""


def _world(url: str, tmp_path, column: str, unit: str | None, identity: str = '["id"]', id_type: str = "bigint") -> str:
    sql_type = column.split()[0]
    values = ", ".join(
        f"({i if id_type == 'bigint' else repr(str(i)) + '::' + id_type}, '{status}', {AS[column].format(written)}, "
        f"{AS[column].format(done) if done else 'NULL'})"
        for i, status, written, done in ROWS
    )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f"CREATE SCHEMA payments; CREATE TABLE payments.events_out (id {id_type} NOT NULL, "
            f"status text NOT NULL, created_at {sql_type} NOT NULL, sent_at {sql_type}); "
            f"INSERT INTO payments.events_out VALUES {values}"
        )
    return _config(tmp_path, SHAPE.format(url=url, identity=identity, unit=f'time_unit = "{unit}"' if unit else ""))


def _left(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM payments.events_out").fetchone()[0]


def _check_and_purge(config: str) -> tuple[object, object]:
    runner = CliRunner()
    env = {"IDEMDASH_CONFIG": config, "IDEMDASH_OUTBOX_RETENTION_DAYS": "30"}
    assert runner.invoke(main, ["migrate", "--database", "payments"], env=env).exit_code == 0
    check = runner.invoke(main, ["check", "--database", "payments"], env=env)
    purge = runner.invoke(main, ["purge", "--database", "payments"], env=env)
    return check, purge


@pytest.mark.system
@pytest.mark.parametrize(
    "column, unit, said",
    [
        # a timestamp without time zone read as timestamptz: every age off by the zone's offset
        (
            "timestamp",
            None,
            'time_unit = "timestamptz" reads timestamp with time zone: set time_unit = "utc timestamp"',
        ),
        (
            "timestamptz",
            "utc timestamp",
            'time_unit = "utc timestamp" reads timestamp without time zone: set time_unit = "timestamptz"',
        ),
        (
            "timestamptz",
            "epoch ms",
            'is timestamp with time zone, but time_unit = "epoch ms" reads smallint or integer',
        ),
        (
            "bigint ms",
            "timestamptz",
            'is bigint, but time_unit = "timestamptz" reads timestamp with time zone: set time_unit = "epoch ms"',
        ),
        # seconds read as milliseconds: every done row is "decades old", so all of them would go at once
        ("bigint seconds", "epoch ms", "read as epoch milliseconds are 1970-01-"),
    ],
)
def test_a_unit_the_column_cannot_hold_is_refused_and_nothing_is_purged(
    make_app, empty_database_url, tmp_path, column, unit, said
):
    config = _world(empty_database_url, tmp_path, column, unit)
    check, purge = _check_and_purge(config)
    assert check.exit_code != 0 and said in check.output, check.output
    assert purge.exit_code != 0 and "nothing purged" in purge.output and said in purge.output, purge.output
    assert _left(empty_database_url) == 3
    # at start, and on every page over the tables: the same refusal, never rows read in the wrong unit
    answer = make_app(None, CONFIG=config, DATABASE_URL="").test_client().get("/api/v1/tables").get_json()
    assert said in answer["problem"] and answer["tables"] == [], answer


@pytest.mark.parametrize(
    "column, unit", [("timestamptz", None), ("timestamp", "utc timestamp"), ("bigint ms", "epoch ms")]
)
def test_a_unit_that_fits_its_column_purges_only_the_old_done_row(empty_database_url, tmp_path, column, unit):
    check, purge = _check_and_purge(_world(empty_database_url, tmp_path, column, unit))
    assert check.exit_code == 0, check.output
    assert purge.exit_code == 0, purge.output
    assert _left(empty_database_url) == 2  # the row sent 40 days ago, not the one sent yesterday


@pytest.mark.parametrize(
    "identity, id_type, said",
    [
        ('["nope"]', "bigint", "shape.outbox.identity: events_out has no column 'nope'"),
        ('["id"]', "json", "shape.outbox.identity: events_out.id is json, expected text or"),
    ],
)
def test_identity_columns_must_exist_with_a_type_rows_can_be_found_by(
    empty_database_url, tmp_path, identity, id_type, said
):
    check, purge = _check_and_purge(_world(empty_database_url, tmp_path, "timestamptz", None, identity, id_type))
    assert check.exit_code != 0 and said in check.output, check.output
    assert purge.exit_code != 0 and said in purge.output, purge.output
    assert _left(empty_database_url) == 3


@pytest.mark.parametrize("identity", ['["i%d"]', '["id\\u0000"]'])
def test_identity_column_names_get_the_checks_other_column_names_get(tmp_path, identity):
    config = _config(tmp_path, SHAPE.format(url="postgresql://localhost/payments", identity=identity, unit=""))
    with pytest.raises(ConfigError, match="shape.outbox.identity: expected a list of the columns"):
        load_databases(settings.load({}, CONFIG=config))
