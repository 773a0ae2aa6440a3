#!/usr/bin/env bash
# The NVTX-range x kernel join at millions of ranges: nvtx_kern_sum (kernels projected onto
# the ranges open on their launching thread at launch, as nsys does) on traces of 0.5, 1
# and 2 million annotation ranges (bench/nvtx/make_ranges.py), timed against loading the
# same trace alone (`stats --report units`, which needs no join); the join's own time is
# the difference and should grow linearly. Then the same join as SQL in SQLite — what
# nsys users write against an export — on 20 and 40 thousand ranges, to show its
# quadratic growth, with tierscope's answer on those exports checked against SQLite's.
#   bash bench/nvtx/nvtx_bench.sh [RANGES...]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=build/release/tierscope
[ -x "$bin" ] || bash scripts/build.sh release
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(500000 1000000 2000000)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
seconds() {  # seconds CMD...: wall time of CMD, its output discarded
  local t0=$EPOCHREALTIME
  "$@" >"$work/out.txt" 2>"$work/err.txt" || { echo "nvtx_bench: failed: $*" >&2; tail -3 "$work/err.txt" >&2; exit 1; }
  awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'
}
printf '%-10s %8s %9s %9s %9s %12s\n' ranges "JSON MB" "load s" "join s" "total s" "join us/range"
prev=""
for n in "${sizes[@]}"; do
  python3 bench/nvtx/make_ranges.py "$work/t.json" "$n"
  mb=$(( $(stat -c %s "$work/t.json") / 1048576 ))
  load=$(seconds "$bin" stats "$work/t.json" --report units)
  total=$(seconds "$bin" stats "$work/t.json" --report nvtx_kern_sum --format csv)
  join=$(awk -v a="$load" -v b="$total" 'BEGIN { d = b - a; printf "%.2f", d < 0 ? 0 : d }')
  per=$(awk -v j="$join" -v n="$n" 'BEGIN { printf "%.3f", j * 1e6 / n }')
  printf '%-10s %8s %9s %9s %9s %12s\n' "$n" "$mb" "$load" "$join" "$total" "$per"
  rows=$(($(wc -l < "$work/out.txt") - 1))
  [ "$rows" -gt 0 ] || { echo "nvtx_bench: nvtx_kern_sum printed no rows" >&2; exit 1; }
done
echo
echo "SQLite, the join written by hand (index on NVTX_EVENTS(globalTid, start)):"
printf '%-10s %9s %9s\n' ranges "SQLite s" "tierscope s"
for n in 20000 40000; do
  python3 bench/nvtx/make_ranges.py "$work/s.json" "$n" --sqlite "$work/s.sqlite"
  ts=$(seconds "$bin" stats "$work/s.sqlite" --report nvtx_kern_sum --format json)
  cp "$work/out.txt" "$work/ours.json"
  sq=$(seconds python3 - "$work/s.sqlite" "$work/ours.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE INDEX r ON NVTX_EVENTS(globalTid, start)")
db.execute("CREATE INDEX l ON CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)")
rows = db.execute("""
  SELECT r.text, s.value, count(*), sum(k.end - k.start)
  FROM CUPTI_ACTIVITY_KIND_KERNEL k
  JOIN CUPTI_ACTIVITY_KIND_RUNTIME l ON l.correlationId = k.correlationId
  JOIN NVTX_EVENTS r ON r.globalTid = l.globalTid AND r.start <= l.start AND r.end >= l.end
  JOIN StringIds s ON s.id = k.shortName
  GROUP BY r.text, s.value""").fetchall()
ours = {}
for row in json.load(open(sys.argv[2]))["reports"][0]["rows"]:
    key = (row["Range"], row["Kernel Name"])
    ours[key] = ours.get(key, 0) + row["Kern Inst"]
sql = {(t, k): c for t, k, c, _ in rows}
assert sql == ours, ("tierscope and SQLite differ", sorted(set(sql.items()) ^ set(ours.items()))[:5])
PY
)
  printf '%-10s %9s %9s\n' "$n" "$sq" "$ts"
done
