"""The freeze rule (docs/security.md): IDEMDASH_READ_ONLY=1 freezes every database, whatever a ``[databases.<name>]``
table of IDEMDASH_CONFIG says; ``read_only = false`` on one database does not lift it. Every action on such a
database answers 403 and changes nothing, in the application's tables, idemdash's or a library's."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from psycopg import sql

from idemdash.core import settings
from idemdash.core.databases import load_databases
from tests.test_keys import insert_key
from tests.test_library_actions import LETTER, NODE_DEAD, ORPHAN, REASON, _ident, seed_wolverine
from tests.test_outbox_park import poison  # noqa: F401  (a fixture: pending rows on the test database)

SCHEMAS = ("app", "idemdash", "wolverine")


def everything(url: str) -> dict[str, str | None]:
    """Every row of every table of the application's, idemdash's and Wolverine's schemas, as one digest per table."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema = ANY(%s) AND table_type = 'BASE TABLE'",
            (list(SCHEMAS),),
        ).fetchall()
        return {
            f"{schema}.{name}": conn.execute(
                sql.SQL(
                    "SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '') FROM {} t"
                ).format(sql.Identifier(schema, name))
            ).fetchone()[0]
            for schema, name in tables
        }


def frozen_config(tmp_path, shop: str, bus: str) -> str:
    path = tmp_path / "idemdash.toml"
    path.write_text(
        f'[databases.shop]\nurl = "{shop}"\nread_only = false\n\n'
        f'[databases.bus]\nurl = "{bus}"\nprofile = "wolverine"\nread_only = false\n'
        'library_actions = ["release-dead-node", "replay-dead-letter"]\n',
        encoding="utf-8",
    )
    return str(path)


def test_the_global_freeze_wins_over_read_only_false_on_a_database(tmp_path):
    path = frozen_config(tmp_path, "postgresql://x/shop", "postgresql://x/bus")
    frozen = {d.name: d.settings.read_only for d in load_databases(settings.load({}, CONFIG=path, READ_ONLY=True))}
    assert frozen == {"shop": True, "bus": True}
    # without the global freeze a database's own read_only decides
    (tmp_path / "one.toml").write_text(
        '[databases.shop]\nurl = "postgresql://x/shop"\nread_only = true\n\n'
        '[databases.bus]\nurl = "postgresql://x/bus"\n',
        encoding="utf-8",
    )
    own = {d.name: d.settings.read_only for d in load_databases(settings.load({}, CONFIG=str(tmp_path / "one.toml")))}
    assert own == {"shop": True, "bus": False}


@pytest.mark.system
def test_every_action_on_a_database_with_read_only_false_is_refused_under_the_global_freeze(
    make_app,
    database_url,
    conn,
    poison,  # noqa: F811
    empty_database_url,
    tmp_path,
):
    insert_key(conn, "create_order", "k", locked_until=timedelta(minutes=-30))
    bus = seed_wolverine(empty_database_url)
    path = frozen_config(tmp_path, database_url, bus)
    # a preview taken before the freeze, so that the bulk confirmation below would be a valid one
    as_of = (
        make_app(CONFIG=path)
        .test_client()
        .post(
            "/api/v1/db/shop/keys/reclassify-bulk",
            json={"filter": {"scope": "create_order"}, "to": "abandoned", "preview": True},
        )
        .get_json()["as_of"]
    )
    before = {"shop": everything(database_url), "bus": everything(bus)}

    client = make_app(CONFIG=path, READ_ONLY=True).test_client()
    shop, bus_api = "/api/v1/db/shop", "/api/v1/db/bus"
    actions = [
        (f"{shop}/keys/reclassify", {"scope": "create_order", "key": "k", "to": "abandoned", "reason": "INC-1"}),
        (f"{shop}/keys/reclassify-bulk", {"filter": {"scope": "create_order"}, "to": "abandoned", "preview": True}),
        (
            f"{shop}/keys/reclassify-bulk",
            {"filter": {"scope": "create_order"}, "to": "abandoned", "reason": "INC-1", "as_of": as_of},
        ),
        (f"{shop}/keys/notes", {"scope": "create_order", "key": "k", "text": "looking"}),
        (f"{shop}/purges/run", {"table": "keys", "dry_run": False}),
        (f"{shop}/outbox/park", {"outbox_id": poison[0], "reason": "INC-1"}),
        (f"{shop}/outbox/release", {"outbox_id": poison[0], "reason": "INC-1"}),
        (
            f"{bus_api}/tables/inbox/row/release-dead-node",
            {"id": _ident(ORPHAN), "reason": REASON, "expected": {"owner_id": NODE_DEAD}},
        ),
        (
            f"{bus_api}/tables/dead_letters/row/replay-dead-letter",
            {"id": _ident(LETTER), "reason": REASON, "expected": {"replayable": False}},
        ),
    ]
    answers = {url + ("?preview" if body.get("preview") else ""): client.post(url, json=body) for url, body in actions}
    assert {url: a.status_code for url, a in answers.items()} == {url: 403 for url in answers}
    assert all("read-only" in a.get_json()["error"] for a in answers.values())
    assert {"shop": everything(database_url), "bus": everything(bus)} == before
    # and the pages offer no action there
    page = client.get("/db/shop/keys/create_order/k").get_data(as_text=True)
    assert 'action="/db/shop/keys/reclassify"' not in page
