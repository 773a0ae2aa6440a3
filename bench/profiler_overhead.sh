#!/usr/bin/env bash
# Profiler overhead: the same bench with the profiler off and on, alternated REPS
# times, median samples/s of each. Usage: bench/profiler_overhead.sh [REPS] [bench flags]
# e.g. bench/profiler_overhead.sh 5 --threads 2
set -euo pipefail
cd "$(dirname "$0")/.."
reps="${1:-5}"
shift || true
bin=./build/release/tierscope
[ -x "$bin" ] || bash scripts/build.sh release >/dev/null
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
sps() { "$bin" bench "$@" | sed -n 's/^RESULT_JSON=//p' | python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_per_s"])'; }
printf "%-12s %12s %12s %10s\n" mode "off (s/s)" "on (s/s)" overhead
for mode in serial-fp32 batch-fp32; do
  off=(); on=()
  for _ in $(seq "$reps"); do
    off+=("$(sps --mode "$mode" --iterations 10 "$@")")
    on+=("$(sps --mode "$mode" --iterations 10 --profile "$@")")
  done
  m_off=$(printf "%s\n" "${off[@]}" | median)
  m_on=$(printf "%s\n" "${on[@]}" | median)
  awk -v m="$mode" -v a="$m_off" -v b="$m_on" 'BEGIN {printf "%-12s %12.1f %12.1f %9.1f%%\n", m, a, b, 100*(a-b)/a}'
done
