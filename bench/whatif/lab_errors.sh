#!/usr/bin/env bash
# What-if's prediction errors on the lab's levers: `tierscope lab` with REPEATS final runs
# per mode (the measured side; one run each drifts tens of percent on a shared machine),
# then each lever's predicted and measured speedup and the error from summary.json. The
# goal (issue 28): every error within 15%.
#
#   bench/whatif/lab_errors.sh [REPEATS] [extra lab flags, e.g. --batch-size 64 --seq-len 128]
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${TIERSCOPE_BIN:-$repo/build/release/tierscope}"
repeats="${1:-3}"
shift || true
out="$(mktemp -d)/results"
"$bin" lab --quick --repeats "$repeats" --out "$out" "$@" >"$out.log" 2>&1 || { tail -5 "$out.log"; exit 1; }
python3 - "$out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"{s['machine']['device']}; batch {s['workload']['batch_size']}, seq_len {s['workload']['seq_len']}; "
      f"measured: the median of {s['headline']['pooled_runs'] // 2} step-4 runs per mode")
print(f"{'lever':12} {'what-if':14} {'predicted':>9} {'measured':>9} {'error %':>8}")
worst = 0.0
for p in s["predictions"]:
    if "error" in p:
        print(f"{p['lever']:12} {p['change']:14} {p['error']}")
        continue
    m = p["measured_speedup"]
    e = p.get("error_pct")
    worst = max(worst, abs(e)) if e is not None else worst
    print(f"{p['lever']:12} {p['change']:14} {p['predicted_speedup']:9.2f} {m if m is None else f'{m:9.2f}'} "
          f"{'—' if e is None else f'{e:8.1f}'}")
print(f"worst |error| {worst:.1f}% (goal: 15%)")
PY
