"""page_bench before (ef1e4d3) / after: per size and mode, per request p50/p95 of each side; counts over 50 ms.

Run in this folder with the runs' JSON (`--json r3-<size>-<mode>-<side>-<round>.json`) beside it."""

import glob
import json
import sys


def nearest_rank(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def load(size: str, mode: str, side: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for name in sorted(glob.glob(f"r3-{size}-{mode}-{side}-*.json")):
        with open(name) as f:
            run = json.load(f)
        for request in (run.get("with_indexes") or {}).get("requests", []):
            out.setdefault(request["label"], []).extend(request["samples_ms"])
    return out


def report(size: str, mode: str) -> None:
    b, a = load(size, mode, "before"), load(size, mode, "after")
    if not a or not b:
        return
    rows = [
        (
            label,
            nearest_rank(b[label], 0.5),
            nearest_rank(b[label], 0.95),
            nearest_rank(a[label], 0.5),
            nearest_rank(a[label], 0.95),
        )
        for label in sorted(set(a) & set(b))
        if a[label] and b[label]
    ]
    over_before = [r for r in rows if r[2] > 50]
    over_after = [r for r in rows if r[4] > 50]
    print(
        f"## {size} {mode}: {len(rows)} common requests; over 50 ms p95: before {len(over_before)}, after "
        f"{len(over_after)}; sum p50 before {sum(r[1] for r in rows):.0f} ms, after {sum(r[3] for r in rows):.0f} ms"
    )
    for r in rows:
        if r[0].startswith(("/keys/", "/api/v1/keys/", "/key?", "/api/v1/key?")):
            print(f"   key page `{r[0]}`: before p50 {r[1]:.1f} p95 {r[2]:.1f}; after p50 {r[3]:.1f} p95 {r[4]:.1f}")
    for r in sorted(set(over_before) | set(over_after), key=lambda r: -r[4]):
        print(f"   over: `{r[0]}` before {r[1]:.1f}/{r[2]:.1f} after {r[3]:.1f}/{r[4]:.1f}")


for size in sys.argv[1:] or ["2M", "L"]:
    for mode in ("quiet", "churn"):
        report(size, mode)
