"""The DBOS application `idemdash demo --profile dbos` runs as its workload, one process per executor (DBOS is one
per process; workload/dbos_demo.py starts, kills and replaces them):

    python -m idemdash.workload.dbos_app run|leftovers

``run`` keeps the shop busy: orders enqueued on queue ``orders`` every second and run by this executor step by step
(reserve stock, charge the card, ship), a few of them ERROR (a declined card); refunds started directly that wait for
an approval, sent to most, the rest CANCELLED; now and then a monthly report enqueued on queue ``reports``, which no
executor serves (ENQUEUED for good). ``leftovers`` is an older application version's executor: it starts a few orders,
says ``ready`` on stdout once each is inside its second step, and waits there to be killed.

Environment: IDEMDASH_DBOS_URL (the demo database, a libpq URL or conninfo), IDEMDASH_DBOS_SCHEMA (DBOS's system
schema), IDEMDASH_DBOS_VERSION (application version), IDEMDASH_DBOS_EXECUTOR (executor ID), IDEMDASH_DBOS_RATE
(orders a second, on average).
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time

from dbos import DBOS, DBOSConfig
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import URL

APP_NAME = "idemdash-demo"
ORDERS, REPORTS = "orders", "reports"
DECLINED = 0.05  # orders whose card is declined (ERROR)
CANCELLED = 0.3  # refunds whose approval never comes (CANCELLED by the application)
STOP_SECONDS = 3  # a stopped executor's wait for its workflows under way
LEFTOVERS = 3  # orders the older version's executor leaves inside a step
_hang = threading.Event()  # leftovers: steps wait here until the process is killed
_inside = threading.Semaphore(0)


def sqlalchemy_url(dsn: str) -> str:
    """The demo database's libpq URL or conninfo as the URL DBOS takes (SQLAlchemy's; a socket directory as
    ``host``)."""
    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    query: dict[str, str] = {k: params[k] for k in ("host", "port") if k in params}
    return URL.create(
        "postgresql",
        username=params.get("user"),
        password=params.get("password"),
        database=params.get("dbname"),
        query=query,
    ).render_as_string(hide_password=False)


@DBOS.step()
def reserve_stock(order: int) -> str:
    time.sleep(random.uniform(0.1, 0.6))
    return f"reserved {order}"


@DBOS.step()
def charge_card(order: int) -> str:
    if _hang.is_set():
        _inside.release()
        time.sleep(3600)
    time.sleep(random.uniform(0.2, 1.2))
    if random.random() < DECLINED:
        raise RuntimeError(f"PaymentDeclined: card expired (order {order})")
    return f"charged {order}"


@DBOS.step()
def ship(order: int) -> str:
    time.sleep(random.uniform(0.1, 0.4))
    return f"shipped {order}"


@DBOS.workflow(name="checkout")
def checkout(order: int) -> str:
    reserve_stock(order)
    charge_card(order)
    return ship(order)


@DBOS.workflow(name="refund")
def refund(order: int) -> str:
    reserve_stock(order)
    approval = DBOS.recv("approval", timeout_seconds=60)
    return f"refunded {order}: {approval}"


@DBOS.workflow(name="monthly_report")
def monthly_report(month: str) -> str:
    return f"report {month}"


def _launch() -> None:
    config: DBOSConfig = {
        "name": APP_NAME,
        "system_database_url": sqlalchemy_url(os.environ["IDEMDASH_DBOS_URL"]),
        "dbos_system_schema": os.environ.get("IDEMDASH_DBOS_SCHEMA", "dbos"),
        "application_version": os.environ["IDEMDASH_DBOS_VERSION"],
        "executor_id": os.environ["IDEMDASH_DBOS_EXECUTOR"],
    }
    DBOS(config=config)
    DBOS.listen_queues([ORDERS])  # never REPORTS: its workflows wait for an executor that never comes
    DBOS.launch()
    DBOS.register_queue(ORDERS, worker_concurrency=8)


def _refunds(stop: threading.Event) -> None:
    """A refund every few seconds; the application approves most a moment later and cancels the rest."""
    while not stop.wait(random.uniform(2, 6)):
        handle = DBOS.start_workflow(refund, random.randrange(100_000))
        if stop.wait(random.uniform(0.5, 2)):
            return
        if random.random() < CANCELLED:
            DBOS.cancel_workflow(handle.workflow_id)
        else:
            DBOS.send(handle.workflow_id, "approved", "approval")


def run() -> None:
    rate = float(os.environ.get("IDEMDASH_DBOS_RATE", "3"))
    stop = threading.Event()
    threading.Thread(target=_refunds, args=(stop,), daemon=True).start()
    while True:  # until the demo stops (SIGTERM) or kills (SIGKILL) this process
        for _ in range(random.randint(0, round(2 * rate))):
            DBOS.enqueue_workflow(ORDERS, checkout, random.randrange(100_000))
        if random.random() < 0.02:
            DBOS.enqueue_workflow(REPORTS, monthly_report, time.strftime("%Y-%m"))
        time.sleep(1)


def leftovers() -> None:
    _hang.set()
    for order in range(LEFTOVERS):
        DBOS.start_workflow(checkout, order)
    for _ in range(LEFTOVERS):
        _inside.acquire()
    print("ready", flush=True)
    time.sleep(3600)


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main() -> None:
    signal.signal(signal.SIGTERM, _stop)  # the demo stops its executors with SIGTERM
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the demo's to handle: it sends SIGTERM
    _launch()
    try:
        {"run": run, "leftovers": leftovers}[sys.argv[1]]()
    except SystemExit:
        pass
    finally:  # the workflows under way get a moment to finish; any that do not stay PENDING for the next launch
        DBOS.destroy(workflow_completion_timeout_sec=STOP_SECONDS)
    os._exit(0)  # a refund's thread may still wait in recv: DBOS has recorded everything


if __name__ == "__main__":
    main()
