"""Stuck keys over time in `idemdash demo`: starts the demo on a fresh data directory, reads /api/v1/overview every
``--every`` seconds for ``--minutes`` and prints a Markdown table (docs/demo.md shows one).

    python -m benchmarks.demo_steady --minutes 15 --every 60
    python -m benchmarks.demo_steady --minutes 5 --every 20 -- --incident-every 60 --oncall-after 60 --oncall-every 15

Arguments after ``--`` go to `idemdash demo`.
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _overview(port: int) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/overview", timeout=10) as response:
            return json.load(response)
    except OSError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=15)
    parser.add_argument("--every", type=float, default=60, help="seconds between samples")
    parser.add_argument("demo_args", nargs="*", help="after --: passed to idemdash demo")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="idemdash-demo-steady-") as tmp:
        port = _free_port()
        log = Path(tmp) / "demo.log"
        with log.open("w") as out:
            demo = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "idemdash",
                    "demo",
                    "--port",
                    str(port),
                    "--data-dir",
                    str(Path(tmp) / "pgdata"),
                    *args.demo_args,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + 120
            while _overview(port) is None:
                if demo.poll() is not None or time.monotonic() > deadline:
                    print(log.read_text(), file=sys.stderr)
                    return 1
                time.sleep(1)
            started = time.monotonic()
            print("| minute | stuck | processing | failed_retryable (24 h) | outbox pending |")
            print("|---:|---:|---:|---:|---:|")
            while True:
                elapsed = time.monotonic() - started
                overview = _overview(port)
                if overview is not None:
                    keys = overview["keys"]
                    print(
                        f"| {elapsed / 60:.1f} | {keys['stuck']} | {keys['processing']} | "
                        f"{keys.get('failed_retryable', '')} | {overview['outbox']['pending']} |",
                        flush=True,
                    )
                if elapsed >= args.minutes * 60:
                    break
                time.sleep(max(0.0, started + (int(elapsed / args.every) + 1) * args.every - time.monotonic()))
        finally:
            demo.send_signal(signal.SIGINT)
            demo.wait(60)
        events = [line for line in log.read_text().splitlines() if "incident" in line or "on-call" in line]
        print("\n" + "\n".join(events))
    return 0


if __name__ == "__main__":
    sys.exit(main())
