"""IDEMDASH_AUTH=basic against guessing: an unknown user name costs what a known one does (no timing oracle), and
failed sign-ins are throttled per client address and per user name (429 with Retry-After; docs/security.md,
Failed sign-ins)."""

from __future__ import annotations

import time

import pytest
from werkzeug.security import generate_password_hash

from idemdash.dashboard import throttle
from idemdash.dashboard.accounts import PasswordCheck, parse_users
from idemdash.dashboard.throttle import SignInThrottle
from tests.test_auth import _fast_hash, basic


@pytest.fixture(scope="module")
def database_url(shared_database_url):
    return shared_database_url  # these tests read nothing


def test_an_unknown_user_name_costs_what_a_known_one_does():
    # a work factor a few milliseconds long, unlike werkzeug's default method (scrypt), which the stand-in had
    method = "pbkdf2:sha256:20000"
    check = PasswordCheck(parse_users(f"alice:operator:{generate_password_hash('right', method=method)}\n"))

    def fastest(name: str) -> float:
        times = []
        for attempt in range(5):
            start = time.perf_counter()
            assert check.check(name, f"wrong-{attempt}") is None
            times.append(time.perf_counter() - start)
        return min(times)

    known, unknown = fastest("alice"), fastest("mallory")
    assert unknown < 3 * known + 0.005, f"unknown user {unknown * 1000:.1f} ms, known user {known * 1000:.1f} ms"
    assert known < 3 * unknown + 0.005, f"unknown user {unknown * 1000:.1f} ms, known user {known * 1000:.1f} ms"


@pytest.fixture
def basic_app(make_app, tmp_path):
    users = tmp_path / "users"
    users.write_text(f"alice:operator:{_fast_hash('alice-pw')}\nbob:viewer:{_fast_hash('bob-pw')}\n", encoding="utf-8")
    return make_app(AUTH="basic", USERS_FILE=str(users))


def _from(address: str) -> dict:
    return {"environ_base": {"REMOTE_ADDR": address}}


def _throttled(answer) -> int:
    assert answer.status_code == 429, (answer.status_code, answer.get_data(as_text=True)[:300])
    assert "too many failed sign-ins" in answer.get_json()["error"]
    wait = int(answer.headers["Retry-After"])
    assert 0 < wait <= throttle.WINDOW_SECONDS
    return wait


def test_failed_sign_ins_are_throttled_per_name_and_per_address(basic_app):
    client = basic_app.test_client()
    me = "/api/v1/overview"
    for attempt in range(throttle.PER_NAME):
        assert client.get(me, headers=basic("alice", f"guess-{attempt}"), **_from("10.0.0.1")).status_code == 401
    # alice's name is throttled: the right password too, and from any address, without the password being checked
    _throttled(client.get(me, headers=basic("alice", "alice-pw"), **_from("10.0.0.1")))
    _throttled(client.get(me, headers=basic("alice", "alice-pw"), **_from("10.0.0.2")))
    # another name from another address is not
    assert client.get(me, headers=basic("bob", "bob-pw"), **_from("10.0.0.2")).status_code == 200
    # an unknown name is throttled exactly like a known one: the throttle does not tell which names exist
    for attempt in range(throttle.PER_NAME):
        assert client.get(me, headers=basic("mallory", f"g{attempt}"), **_from("10.0.0.3")).status_code == 401
    _throttled(client.get(me, headers=basic("mallory", "g"), **_from("10.0.0.4")))

    # per address: many names, each under its own limit, from one address
    for attempt in range(throttle.PER_ADDRESS):
        assert client.get(me, headers=basic(f"user{attempt}", "x"), **_from("10.0.0.9")).status_code == 401
    _throttled(client.get(me, headers=basic("bob", "bob-pw"), **_from("10.0.0.9")))
    # a throttled address still gets its probes, and pages in HTML say so too
    assert client.get("/healthz", headers=basic("bob", "x"), **_from("10.0.0.9")).status_code == 200
    page = client.get("/keys", headers=basic("bob", "bob-pw"), **_from("10.0.0.9"))
    assert page.status_code == 429 and page.headers["Retry-After"] and b"too many failed sign-ins" in page.data


def test_behind_a_trusted_proxy_the_address_it_forwarded_is_counted(basic_app):
    client = basic_app.test_client()
    for attempt in range(throttle.PER_ADDRESS):
        forwarded = {"X-Forwarded-For": f"198.51.100.7, 203.0.113.{attempt % 2}"}  # the proxy appended the last
        client.get("/api/v1/overview", headers={**basic(f"u{attempt}", "x"), **forwarded})  # from 127.0.0.1
    # twenty failures split over two client addresses: neither is over its limit, nor is the proxy's own address
    ok = client.get("/api/v1/overview", headers={**basic("bob", "bob-pw"), "X-Forwarded-For": "203.0.113.0"})
    assert ok.status_code == 200
    # from an address that is not a trusted proxy, X-Forwarded-For is the client's own say and not believed
    for attempt in range(throttle.PER_ADDRESS):
        client.get(
            "/api/v1/overview",
            headers={**basic(f"v{attempt}", "x"), "X-Forwarded-For": f"192.0.2.{attempt}"},
            **_from("10.7.7.7"),
        )
    _throttled(client.get("/api/v1/overview", headers=basic("bob", "bob-pw"), **_from("10.7.7.7")))


def test_failures_age_out_of_the_window():
    now = [1000.0]
    gate = SignInThrottle(per_address=3, per_name=2, window=60, clock=lambda: now[0])
    gate.failed("10.0.0.1", "alice")
    now[0] += 20
    gate.failed("10.0.0.1", "alice")
    assert gate.retry_after("10.0.0.2", "alice") == 40  # until the first failure leaves the window
    assert gate.retry_after("10.0.0.1", "bob") is None  # two of three for the address
    now[0] += 40
    assert gate.retry_after("10.0.0.2", "alice") is None
    now[0] += 20
    assert gate.retry_after("10.0.0.1", "alice") is None
    assert gate._failures == {}  # nothing kept for what has aged out
