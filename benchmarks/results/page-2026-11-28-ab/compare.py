"""page_bench before (ef1e4d3) / after (HEAD): per size and mode, per request p50/p95 of each side; counts over 50 ms."""
import json, sys, glob
def p(s, q):
    s = sorted(s); return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]
def load(size, mode, side):
    out = {}
    for f in sorted(glob.glob(f"r3-{size}-{mode}-{side}-*.json")):
        d = json.load(open(f))
        sec = d.get("with_indexes") or {}
        for q in sec.get("requests", []):
            out.setdefault(q["label"], []).extend(q["samples_ms"])
    return out
for size in sys.argv[1:] or ["2M", "L"]:
    for mode in ("quiet", "churn"):
        b, a = load(size, mode, "before"), load(size, mode, "after")
        if not a or not b:
            continue
        common = sorted(set(a) & set(b))
        rows = [(l, p(b[l], .5), p(b[l], .95), p(a[l], .5), p(a[l], .95)) for l in common if a[l] and b[l]]
        ob = [r for r in rows if r[2] > 50]; oa = [r for r in rows if r[4] > 50]
        print(f"## {size} {mode}: {len(rows)} common requests; over 50 ms p95: before {len(ob)}, after {len(oa)}; "
              f"sum p50 before {sum(r[1] for r in rows):.0f} ms, after {sum(r[3] for r in rows):.0f} ms; "
              f"only after: {len(set(a)-set(b))}, only before: {len(set(b)-set(a))}")
        keyp = [r for r in rows if r[0].startswith(("/keys/", "/api/v1/keys/", "/key?", "/api/v1/key?"))]
        for r in keyp:
            print(f"   key page `{r[0]}`: before p50 {r[1]:.1f} p95 {r[2]:.1f}; after p50 {r[3]:.1f} p95 {r[4]:.1f}")
        for r in sorted(set(ob) | set(oa), key=lambda r: -r[4]):
            print(f"   over: `{r[0]}` before {r[1]:.1f}/{r[2]:.1f} after {r[3]:.1f}/{r[4]:.1f}")
        only_a = sorted(set(a) - set(b))
        for l in only_a:
            if p(a[l], .95) > 50:
                print(f"   over (after only): `{l}` {p(a[l], .5):.1f}/{p(a[l], .95):.1f}")
