"""Instructions a request costs in the worker, counted by valgrind's callgrind: deterministic to within 0.1 %, where
wall time on a shared machine moves by a third between sittings. Prints a table, one row a path.

The app runs in-process (Flask's test client) as a gunicorn worker of `idemdash serve` would: IDEMDASH_AUTH=none
from this machine, no session cookie sent back (as wrk sends none), the garbage collector frozen after the warm-up
(gunicorn_config.post_worker_init). Each path is counted twice, after ``--warmup`` requests with and without
``--requests`` more, and the difference divided: what importing and building the app cost is left out.

    python -m benchmarks.request_instructions --url "postgresql://postgres@/idemdash_demo?host=/tmp/demo" \\
        / "/keys?status=stuck" /api/v1/overview

Needs ``valgrind`` on the PATH. PostgreSQL's own work is not counted (it runs in its own processes); the table says
how many statements a request ran (psycopg's ``Cursor.execute``) beside its instructions.
"""

from __future__ import annotations

import argparse
import gc
import re
import shutil
import subprocess
import sys


def _serve(url: str, path: str, warmup: int, requests: int) -> int:
    """The child: build the app, warm it, freeze the collector, then ask ``requests`` more; the statements run."""
    import psycopg

    from idemdash.dashboard import create_app

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": "request-instructions", "AUTH": "none"})
    client = app.test_client(use_cookies=False)
    for _ in range(warmup):
        client.get(path)
    gc.collect()
    gc.freeze()
    ran = 0
    execute = psycopg.Cursor.execute

    def counted(self, *args, **kwargs):
        nonlocal ran
        ran += 1
        return execute(self, *args, **kwargs)

    psycopg.Cursor.execute = counted  # type: ignore[method-assign]
    for _ in range(requests):
        answer = client.get(path)
        if answer.status_code != 200:
            raise SystemExit(f"{path}: {answer.status_code}")
    return ran


def _instructions(url: str, path: str, warmup: int, requests: int) -> int:
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        "-m",
        "benchmarks.request_instructions",
        "--child",
        "--url",
        url,
        "--warmup",
        str(warmup),
        "--requests",
        str(requests),
        path,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"valgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the database (IDEMDASH_DATABASE_URL)")
    parser.add_argument("--warmup", type=int, default=25)
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    if args.child:
        print(f"statements {_serve(args.url, args.paths[0], args.warmup, args.requests)}")
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    print("| request | instructions a request | statements a request |")
    print("|---|---:|---:|")
    for path in args.paths:
        base = _instructions(args.url, path, args.warmup, 0)
        more = _instructions(args.url, path, args.warmup, args.requests)
        child = subprocess.run(
            [sys.executable, "-m", "benchmarks.request_instructions", "--child", "--url", args.url]
            + ["--warmup", str(args.warmup), "--requests", str(args.requests), path],
            capture_output=True,
            text=True,
            check=True,
        )
        statements = int(child.stdout.split()[-1]) / args.requests
        print(f"| `{path}` | {(more - base) / args.requests / 1e6:.2f}M | {statements:g} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
