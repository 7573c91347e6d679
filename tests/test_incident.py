"""An incident as the on-call meets it, every number against ground truth kept by the staging (tests/incident.py),
never by idemdash: where the stuck keys are (the overview's sentence, /keys, GET /api/v1/keys/breakdown); one
outbox lag with the poison apart, equal on /, /outbox, /databases, their JSON and /metrics; who is alive
(/workers and its JSON); the rates between two snapshots; and the operator's bulk park, marked on the charts."""

from __future__ import annotations

from collections import Counter

import pytest
from bs4 import BeautifulSoup

from idemdash.core.formatting import duration
from idemdash.dashboard.targets import app_settings
from idemdash.dashboard.trends import per_minute
from idemdash.jobs import snapshots
from idemdash.queries.target import Target
from tests.incident import BAD_SCOPE, BAD_WORKER, POISON_TYPE, stage_history, stage_traffic
from tests.test_fleet_views import write_toml
from tests.test_metrics import scrape
from tests.test_outbox import now_of

REF = (("profile", "reference"),)


def worst_first(counter: Counter) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda nc: (-nc[1], nc[0]))


def outbox_truth(conn) -> tuple[float, int, float]:
    """The lag (the oldest pending row with fewer than 3 attempts), the poison rows and the oldest one's age."""
    return conn.execute(
        """SELECT extract(epoch FROM now() - min(created_at) FILTER (WHERE attempt_count < 3))::float8,
                  count(*) FILTER (WHERE attempt_count >= 3),
                  extract(epoch FROM now() - min(created_at) FILTER (WHERE attempt_count >= 3))::float8
           FROM app.outbox_event WHERE status = 'pending'"""
    ).fetchone()


def text(node) -> str:
    return " ".join(node.text.split())


@pytest.mark.system
def test_an_incident_reads_the_same_everywhere_as_its_ground_truth(make_app, conn, database_url, tmp_path):
    plain = make_app()  # the snapshot job's target, and a database without a config file
    stage_history(conn)
    baseline = snapshots.run_snapshot(Target.from_settings(app_settings(plain)), min_gap_seconds=0)
    truth = stage_traffic(conn)
    after = snapshots.run_snapshot(Target.from_settings(app_settings(plain)), min_gap_seconds=0)
    assert baseline is not None and after is not None

    # the staging itself, read back from the table: 40 in capture_payment on api-3 among 9 others
    by_scope, by_worker = truth.stuck_by("scope"), truth.stuck_by("worker")
    assert (len(truth.stuck), by_scope[BAD_SCOPE], by_worker[BAD_WORKER]) == (49, 41, 43)
    rows = conn.execute("""SELECT idempotency_scope, claimed_by, count(*) FROM app.idempotency_request
                           WHERE status = 'processing' AND locked_until < now() GROUP BY 1, 2""").fetchall()
    assert Counter({(s, w): n for s, w, n in rows}) == Counter((s, w) for s, _, w in truth.stuck)

    config = write_toml(tmp_path / "one.toml", f'[databases.orders]\nurl = "{database_url}"\n')
    app = make_app(CONFIG=config, FLEET_REFRESH_SECONDS=3600, METRICS_CACHE_SECONDS=0)
    app.extensions["idemdash_overview"].ask_all_now()
    client = app.test_client()

    # -- where: the breakdowns by scope and by worker --------------------------------------------------------------
    body = client.get("/api/v1/db/orders/keys/breakdown?status=stuck").get_json()
    assert body["total"] == len(truth.stuck) and body["too_many"] is False
    assert [(c["scope"], c["count"]) for c in body["by_scope"]] == worst_first(by_scope)
    assert [(c["worker"], c["count"]) for c in body["by_worker"]] == worst_first(by_worker)
    overview_page = BeautifulSoup(client.get("/db/orders/").data, "html.parser")
    assert text(overview_page.select_one("#stuck-where")).startswith(
        f"{len(truth.stuck)} stuck: {by_scope[BAD_SCOPE]} in {BAD_SCOPE}, {by_worker[BAD_WORKER]} claimed by "
        f"{BAD_WORKER}."
    )
    assert overview_page.select_one('[data-metric="stuck"]').get_text(strip=True) == str(len(truth.stuck))
    box = BeautifulSoup(client.get("/db/orders/keys?status=stuck").data, "html.parser").select_one("#breakdown-box")
    shown = {
        what: [(a["data-name"], int(a["data-count"])) for a in box.select(f"[data-breakdown={what}] a")]
        for what in ("scope", "worker")
    }
    assert shown["scope"] == worst_first(by_scope)[: len(shown["scope"])] and shown["scope"][0] == (BAD_SCOPE, 41)
    assert shown["worker"] == worst_first(by_worker)[: len(shown["worker"])] and shown["worker"][0] == (BAD_WORKER, 43)

    # -- one lag, the poison apart: the same on every page, API and /metrics ---------------------------------------
    lag, poison, poison_age = outbox_truth(conn)
    assert 40 <= lag < 70 and poison == 120 and poison_age > 2.9 * 86400
    close, old = pytest.approx(lag, abs=15), pytest.approx(poison_age, abs=15)
    overview = client.get("/api/v1/db/orders/overview").get_json()
    assert overview["outbox"]["lag_seconds"] == close and overview["outbox"]["poison"] == 120
    assert overview["outbox"]["poison_oldest_seconds"] == old and overview["keys"]["stuck"] == len(truth.stuck)
    backlog = client.get("/api/v1/db/orders/outbox").get_json()["backlog"]
    assert backlog["lag_seconds"] == close and backlog["pending_many_attempts"] == 120
    assert backlog["poison_oldest_seconds"] == old
    [item] = client.get("/api/v1/databases").get_json()["items"]
    assert item["outbox_lag_seconds"] == close and item["outbox_poison"] == 120
    assert item["outbox_poison_oldest_seconds"] == old and item["stuck"] == len(truth.stuck)
    samples = scrape(client, "orders")
    assert samples[("idemdash_outbox_lag_seconds", REF)] == close
    assert samples[("idemdash_outbox_poison", REF)] == 120
    assert samples[("idemdash_outbox_poison_oldest_seconds", REF)] == old
    assert samples[("idemdash_stuck", REF)] == len(truth.stuck)
    assert {scope: samples[("idemdash_stuck_keys", (("scope", scope),))] for scope in by_scope} == by_scope
    # the page says the lag in words, never days; /databases reads it in its background refresh, up to 15 s before
    words = {duration(lag + s) for s in range(-15, 16)}
    assert overview_page.select_one('[data-metric="outbox_lag"]').get_text(strip=True) in words
    assert overview_page.select_one('[data-metric="outbox_poison"]').get_text(strip=True) == "120"
    outbox_page = BeautifulSoup(client.get("/db/orders/outbox").data, "html.parser")
    assert outbox_page.select_one('[data-metric="lag"]').get_text(strip=True) in words
    cell = BeautifulSoup(client.get("/databases").data, "html.parser").select_one(
        '[data-database="orders"] [data-col="outbox_lag"]'
    )
    assert cell.contents[0].strip() in words
    assert cell.select_one('[data-col="outbox_poison"]')["data-value"] == "120"

    # -- who is alive: each worker's stuck, in flight, failed and succeeded of the last hour -----------------------
    workers = client.get("/api/v1/db/orders/workers?window=1h").get_json()["items"]
    assert workers[0]["name"] == BAD_WORKER
    columns = ("stuck", "in_flight", "failed_retryable", "failed_final", "succeeded")
    assert {w["name"]: tuple(w[c] for c in columns) for w in workers} == {
        name: (
            by_worker[name],
            truth.in_flight[name],
            truth.failed_retryable[name],
            truth.failed_final[name],
            truth.succeeded[name],
        )
        for name in set(by_worker)
        | set(truth.in_flight)
        | set(truth.succeeded)
        | set(truth.failed_retryable)
        | set(truth.failed_final)
    }
    row = BeautifulSoup(client.get("/db/orders/workers").data, "html.parser").select_one(
        f'#workers tr[data-worker="{BAD_WORKER}"]'
    )
    assert row.select_one('[data-col="stuck"]').get_text(strip=True) == "43"
    assert row.select_one('[data-col="failed"]').get_text(" ", strip=True).startswith("2")

    # -- the rates: what the workers did between the two snapshots -------------------------------------------------
    points = client.get("/api/v1/db/orders/overview?range=1h").get_json()["trends"]["points"]
    assert [(p["claims"], p["completions"], p["failures"]) for p in points] == [
        (0, 0, 0),
        (truth.claims, truth.completions, truth.failures),
    ]
    seconds = (after.taken_at - baseline.taken_at).total_seconds()
    assert points[1]["interval_seconds"] == pytest.approx(seconds)
    assert points[1]["claims_per_minute"] == pytest.approx(truth.claims * 60 / seconds)
    assert points[1]["failures_per_minute"] == pytest.approx(truth.failures * 60 / seconds)
    charts = BeautifulSoup(client.get("/db/orders/?range=1h").data, "html.parser")
    for key, count in (("claims", truth.claims), ("completions", truth.completions), ("failures", truth.failures)):
        now = charts.select_one(f"#trend-{key}_per_minute .spark-now").get_text(strip=True)
        assert now == per_minute(count * 60 / seconds), key

    # -- the operator parks the poison in bulk: one action, marked on the charts; no poison left anywhere ----------
    preview = client.post(
        "/api/v1/db/orders/outbox/park-bulk", json={"preview": True, "filter": {"event_type": POISON_TYPE}}
    ).get_json()
    assert preview["count"] == 120
    done = client.post(
        "/api/v1/db/orders/outbox/park-bulk",
        json={
            "filter": {"event_type": POISON_TYPE},
            "as_of": preview["as_of"],
            "previewed": preview["count"],
            "reason": "INC-42: legacy.unroutable has no route",
        },
    )
    assert done.status_code == 200 and done.get_json()["changed"] == 120, done.get_json()
    assert now_of(conn) is not None
    snapshots.run_snapshot(Target.from_settings(app_settings(plain)), min_gap_seconds=0)
    trends = client.get("/api/v1/db/orders/overview?range=1h").get_json()["trends"]
    [marker] = trends["markers"]
    assert marker["kind"] == "action" and marker["what"].endswith("parked 120 outbox rows (bulk)")
    assert marker["audit_id"] == done.get_json()["audit_id"]
    charts = BeautifulSoup(client.get("/db/orders/?range=1h").data, "html.parser")
    marks = charts.select("#trend-outbox_pending g.mark title")
    assert [m.get_text() for m in marks] == [
        f"{marker['at'][5:10]} {marker['at'][11:16]} operator action: {marker['what']}"
    ]
    assert client.get("/api/v1/db/orders/overview").get_json()["outbox"]["poison"] == 0
    assert scrape(client, "orders")[("idemdash_outbox_poison", REF)] == 0
