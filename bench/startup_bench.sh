#!/usr/bin/env bash
# Start-up cost of commands that touch no GPU: `tierscope --help` and `tierscope analyze`
# of a small trace, with the CUDA build (the CUDA backend is a plugin opened only on
# --device cuda). Reports the best wall time and peak resident memory of N runs each,
# against the goal: under 30 ms and 30 MB. (The wall time includes /usr/bin/time's own
# start, a millisecond or so.)
#   bash bench/startup_bench.sh [tierscope binary, default build/release/tierscope] [runs, default 10]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/tierscope}
runs=${2:-10}
[ -x "$bin" ] || bash scripts/build.sh release
trace=../shared/corpus/traces/benchmark_result_2869224_1695835535_trace.json.gz
if [ ! -f "$trace" ]; then  # no corpus: a trace of tierscope's own engine
  trace=$(mktemp -d)/small.json.gz
  "$bin" bench --batch-size 2 --seq-len 8 --warmup 0 --iterations 1 --profile --trace "$trace" >/dev/null
fi
echo "binary: $bin ($(ldd "$bin" | grep -c '=>') shared libraries; CUDA runtime linked: $(ldd "$bin" | grep -cE 'libcudart|libcublas|libcupti'))"
status=0
measure() {  # measure NAME CMD...: best wall ms and peak RSS MB over $runs runs
  local name=$1; shift
  local best_ms="" best_kb=""
  for _ in $(seq "$runs"); do
    local tmp t0 t1 ms kb
    tmp=$(mktemp)
    t0=$EPOCHREALTIME
    local rc=0
    /usr/bin/time -o "$tmp" -f "%M" "$@" >/dev/null 2>&1 || rc=$?
    t1=$EPOCHREALTIME
    if [ "$rc" -ne 0 ]; then  # a command that fails fast measures nothing
      echo "startup_bench: '$*' failed (status $rc)" >&2
      rm -f "$tmp"
      exit 1
    fi
    kb=$(tail -n 1 "$tmp")
    rm -f "$tmp"
    ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')
    if [ -z "$best_ms" ] || awk -v a="$ms" -v b="$best_ms" 'BEGIN { exit !(a < b) }'; then best_ms=$ms; fi
    if [ -z "$best_kb" ] || [ "$kb" -lt "$best_kb" ]; then best_kb=$kb; fi
  done
  local mb=$((best_kb / 1024))
  local verdict=PASS
  if awk -v a="$best_ms" 'BEGIN { exit !(a >= 30) }' || [ "$mb" -ge 30 ]; then verdict=FAIL; status=1; fi
  printf "%-40s %6s ms %6s MB  %s (goal: < 30 ms, < 30 MB)\n" "$name" "$best_ms" "$mb" "$verdict"
}
command -v /usr/bin/time >/dev/null || { echo "startup_bench: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
measure "tierscope --help" "$bin" --help
measure "tierscope analyze $(basename "$trace")" "$bin" analyze "$trace"
exit $status
