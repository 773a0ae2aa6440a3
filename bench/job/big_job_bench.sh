#!/usr/bin/env bash
# Ranks of any size (issue 29): RANKS synthetic ranks of SIZE_MB of JSON each (make_job.py,
# from a real DDP trace's events; 8 x 5 GB by default: every rank past simdjson's 4 GiB
# document limit), analysed by `tierscope analyze DIR` (every job report) with its wall
# time, CPU time and peak resident memory (GNU time); then, in the same run, a small job of
# HTA_SIZE_MB ranks that both of tierscope's paths can read (whole-file and streamed:
# answers compared byte for byte) and that HTA reads too (TraceAnalysis +
# get_temporal_breakdown, the largest size it manages here: 950 GB for 200 GB of JSON by
# HTA #250). Goals: peak below 4 GB, at least 250 MB/s of JSON per core (JSON over the
# CPU seconds used), the two paths' answers equal.
#   bash bench/job/big_job_bench.sh [RANKS=8] [SIZE_MB=5120] [HTA_SIZE_MB=256] [WORK_DIR]
# WORK_DIR (default: a temporary directory, removed after) needs RANKS x SIZE_MB of disk;
# a WORK_DIR given is kept, and ranks already there at the right size are reused.
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=${1:-8}
size=${2:-5120}
hta_size=${3:-256}
bin=build/release/tierscope
[ -x "$bin" ] || bash scripts/build.sh release
python=${TIERSCOPE_VENV:-$HOME/.cache/tierscope/venv}/bin/python
command -v /usr/bin/time >/dev/null || { echo "big_job_bench: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
if [ -n "${4:-}" ]; then
  work=$4
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
# Ranks still to make, and a streamed rank's args spilled to disk (under a third of its JSON).
need_mb=$((size / 2 + 1024))
[ -f "$work/big/done-$ranks-$size" ] || need_mb=$((need_mb + ranks * size))
[ -f "$work/small/done-8-$hta_size" ] || need_mb=$((need_mb + 8 * hta_size))
free_mb=$(df -Pm "$work" | awk 'NR == 2 {print $4}')
[ "$free_mb" -ge "$need_mb" ] || { echo "big_job_bench: $work has $free_mb MB free, needs $need_mb" >&2; exit 1; }
make_ranks() {  # make_ranks DIR RANKS SIZE_MB: two writers side by side, one per core
  local dir=$1 n=$2 mb=$3 even odd
  if [ -f "$dir/done-$n-$mb" ]; then echo "== reusing $n ranks of $mb MB in $dir"; return; fi
  echo "== making $n ranks of $mb MB in $dir"
  rm -rf "$dir"
  even=$(seq -s, 0 2 $((n - 1)))
  odd=$(seq -s, 1 2 $((n - 1)) || true)
  MAKE_JOB_RANKS=$even python3 bench/job/make_job.py "$dir" "$n" "$mb" >/dev/null &
  local p1=$!
  if [ -n "$odd" ]; then MAKE_JOB_RANKS=$odd python3 bench/job/make_job.py "$dir" "$n" "$mb" >/dev/null; fi
  wait "$p1"
  touch "$dir/done-$n-$mb"
}
measure() {  # measure NAME CMD...: prints "NAME wall_s cpu_s peak_MB"
  local name=$1; shift
  local t0 t1
  t0=$EPOCHREALTIME
  /usr/bin/time -o "$work/time.txt" -f "%M %U %S" "$@" >"$work/$name.out" 2>"$work/$name.err" || {
    echo "big_job_bench: $name failed:" >&2; tail -5 "$work/$name.err" >&2; return 1; }
  t1=$EPOCHREALTIME
  read -r kb user sys < <(tail -n 1 "$work/time.txt")
  echo "$name $(awk -v a="$t0" -v b="$t1" -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f %.2f", b - a, u + s }') $((kb / 1024))"
}
make_ranks "$work/big" "$ranks" "$size"
make_ranks "$work/small" 8 "$hta_size"
json_mb=$(du -cm "$work"/big/rank-*.json | tail -1 | cut -f1)
largest=$(stat -c %s "$work"/big/rank-*.json | sort -n | tail -1)
sync
echo "== tierscope analyze: $ranks ranks, $json_mb MB of JSON (largest rank $((largest / 1048576)) MB)"
read -r _ ts_s ts_cpu ts_mb < <(measure tierscope "$bin" analyze "$work/big" ${TIERSCOPE_MEMORY_BUDGET:+--memory-budget "$TIERSCOPE_MEMORY_BUDGET"})
grep -m1 "^read:" "$work/tierscope.out"
grep -m1 "\[straggler\]" "$work/tierscope.out" || echo "no straggler named"
echo "== both paths on 8 ranks of $hta_size MB: whole-file and streamed"
TIERSCOPE_STREAM=never "$bin" analyze "$work/small" --format json >"$work/whole.json"
read -r _ st_s st_cpu st_mb < <(TIERSCOPE_STREAM=always measure streamed "$bin" analyze "$work/small" --format json)
same=FAIL  # every answer; only the steps' timings may differ
python3 - "$work/whole.json" "$work/streamed.out" <<'PY' && same=PASS
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d.pop("seconds", None)
sys.exit(0 if a == b else 1)
PY
echo "== HTA TraceAnalysis + get_temporal_breakdown on the 8 x $hta_size MB job"
hta="not run (no HTA in $python)"
if "$python" -c "import hta" 2>/dev/null; then
  cat >"$work/hta_run.py" <<'PY'
import logging, sys, warnings
warnings.filterwarnings("ignore")
from hta.configs.config import logger
logger.setLevel(logging.ERROR)
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
print(ta.get_temporal_breakdown(visualize=False).to_string())
PY
  if line=$(measure hta "$python" "$work/hta_run.py" "$work/small"); then
    read -r _ hta_s hta_cpu hta_mb <<<"$line"
    hta=$(printf "%.2f s, %.2f CPU s, peak %d MB" "$hta_s" "$hta_cpu" "$hta_mb")
  else
    hta="failed (see above)"
  fi
fi
echo
awk -v r="$ranks" -v mb="$size" -v json="$json_mb" -v ts="$ts_s" -v cpu="$ts_cpu" -v tm="$ts_mb" \
    -v same="$same" -v hsz="$hta_size" -v hta="$hta" -v ss="$st_s" -v sm="$st_mb" 'BEGIN {
  printf "tierscope analyze, %d ranks x %d MB (%d MB of JSON): %.1f s wall, %.1f CPU s, peak %d MB\n", r, mb, json, ts, cpu, tm
  printf "  %.0f MB/s of JSON wall; %.0f MB/s per core (JSON / CPU seconds; goal >= 250: %s)\n", json / ts, json / cpu, (json / cpu >= 250 ? "PASS" : "FAIL")
  printf "  peak %d MB (goal < 4096: %s)\n", tm, (tm < 4096 ? "PASS" : "FAIL")
  printf "8 x %d MB: streamed %.2f s, peak %d MB; answers equal to the whole-file path: %s\n", hsz, ss, sm, same
  printf "HTA on 8 x %d MB: %s\n", hsz, hta
}'
