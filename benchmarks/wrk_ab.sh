#!/bin/bash
# wrk A/B of two checkouts on the same data: `idemdash serve --workers 2` from each (as it starts by default), each
# on its own copy of one data set on one server, `wrk -t2 -c4|64 -d$DURATION` on `/`, the stuck list and the overview
# API, the two checkouts alternating, $ROUNDS rounds; prints each run, then a table of the medians.
#
#   BEFORE_DIR=/tmp/before AFTER_DIR=. HOST=/tmp/pb/pgdata BEFORE_DB=pb_before AFTER_DB=pb_after \
#       bash benchmarks/wrk_ab.sh 3 10s
#
# Each checkout needs its own venv (.venv) with idemdash installed; both databases migrated by their checkout
# (`idemdash migrate`) and vacuumed alike (a table whose visibility map is not set turns index-only counts into heap
# reads, which is the data's state, not the code's).
set -u
ROUNDS=${1:-3}; DURATION=${2:-10s}
BEFORE_DIR=${BEFORE_DIR:-/tmp/before}; AFTER_DIR=${AFTER_DIR:-.}; HOST=${HOST:-/tmp/pb/pgdata}
BEFORE_DB=${BEFORE_DB:-pb_before}; AFTER_DB=${AFTER_DB:-pb_after}
OUT=$(mktemp -d)
start() { # side dir db port
  (cd "$2" && IDEMDASH_DATABASE_URL="postgresql://postgres@/$3?host=$HOST" exec .venv/bin/idemdash serve \
      --bind "127.0.0.1:$4" --workers 2 > "$OUT/serve-$1.log" 2>&1) &
  echo $! > "$OUT/pid-$1"
  for _ in $(seq 60); do curl -sf -o /dev/null "http://127.0.0.1:$4/healthz" && return 0; sleep 1; done
  echo "the $1 server did not start: $OUT/serve-$1.log"; exit 1
}
start before "$BEFORE_DIR" "$BEFORE_DB" 8101
start after "$AFTER_DIR" "$AFTER_DB" 8102
trap 'kill $(cat "$OUT/pid-before") $(cat "$OUT/pid-after") 2>/dev/null' EXIT
for port in 8101 8102; do for url in / "/keys?status=stuck" /api/v1/overview; do
  for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$port$url"; done; done; done
echo "uptime start: $(uptime)"
for round in $(seq "$ROUNDS"); do
  for connections in 4 64; do
    for url in / "/keys?status=stuck" /api/v1/overview; do
      for side in before after; do
        port=8101; [ $side = after ] && port=8102
        rps=$(wrk -t2 -c"$connections" -d"$DURATION" --latency "http://127.0.0.1:$port$url" \
              | tee -a "$OUT/wrk-$side.log" | awk '/Requests\/sec/ {print $2}')
        echo "$round $connections $url $side $rps"
      done
    done
  done
done | tee "$OUT/runs.txt"
echo "uptime end: $(uptime)"
python3 - "$OUT/runs.txt" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 5 and p[0].isdigit():
        runs[(p[1], p[2], p[3])].append(float(p[4]))
print("| request | connections | before, requests/s (median, runs) | after | after / before |")
print("|---|---:|---:|---:|---:|")
for c in ("4", "64"):
    for u in ("/", "/keys?status=stuck", "/api/v1/overview"):
        b, a = runs[(c, u, "before")], runs[(c, u, "after")]
        mb, ma = statistics.median(b), statistics.median(a)
        print(f"| `{u}` | {c} | {mb:.1f} ({', '.join(f'{x:.0f}' for x in b)}) | "
              f"{ma:.1f} ({', '.join(f'{x:.0f}' for x in a)}) | {ma / mb:.2f}x |")
PY
