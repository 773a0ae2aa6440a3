#!/usr/bin/env bash
# A whole job against Holistic Trace Analysis: RANKS synthetic ranks of SIZE_MB of JSON
# each (bench/job/make_job.py, from a real DDP trace's events), then in the same run
#   tierscope analyze DIR                          (every report, stragglers, diagnosis)
#   HTA TraceAnalysis(trace_dir=DIR) + get_temporal_breakdown()
# with wall time and peak resident memory (GNU time; HTA's worker processes are counted by
# their own peak, the largest child's), and the goals: tierscope >= 10x faster end to end;
# its peak below 1.5 x the largest rank's JSON x the ranks it reads at once.
#   bash bench/job/job_bench.sh [RANKS=8] [SIZE_MB=256]
set -euo pipefail
cd "$(dirname "$0")/../.."
ranks=${1:-8}
size=${2:-256}
bin=build/release/tierscope
[ -x "$bin" ] || bash scripts/build.sh release
python=${TIERSCOPE_VENV:-$HOME/.cache/tierscope/venv}/bin/python
"$python" -c "import hta" 2>/dev/null || { echo "job_bench: HTA missing (run bash scripts/test.sh once: it makes the venv)" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "job_bench: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== making $ranks ranks of $size MB in $work"
python3 bench/job/make_job.py "$work/job" "$ranks" "$size" >/dev/null
largest=$(stat -c %s "$work"/job/rank-*.json | sort -n | tail -1)
measure() {  # measure NAME CMD...: prints "NAME seconds peak_MB"
  local name=$1; shift
  local t0 t1
  t0=$EPOCHREALTIME
  /usr/bin/time -o "$work/time.txt" -f "%M" "$@" >"$work/$name.out" 2>"$work/$name.err" || {
    echo "job_bench: $name failed:" >&2; tail -5 "$work/$name.err" >&2; exit 1; }
  t1=$EPOCHREALTIME
  echo "$name $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') $(( $(tail -n 1 "$work/time.txt") / 1024 ))"
}
sync
echo "== tierscope analyze"
read -r _ ts_s ts_mb < <(measure tierscope "$bin" analyze "$work/job")
grep -m1 "^read:" "$work/tierscope.out"
in_flight=$(sed -n 's/^read: \([0-9]*\) at a time.*/\1/p' "$work/tierscope.out")
grep -A2 "^[0-9]*\. \[straggler\]" "$work/tierscope.out" | head -3 || echo "no straggler named"
echo "== HTA TraceAnalysis + get_temporal_breakdown"
cat > "$work/hta_run.py" <<'PY'
import logging, sys, warnings
warnings.filterwarnings("ignore")
from hta.configs.config import logger
logger.setLevel(logging.ERROR)
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
print(ta.get_temporal_breakdown(visualize=False).to_string())
PY
read -r _ hta_s hta_mb < <(measure hta "$python" "$work/hta_run.py" "$work/job")
head -4 "$work/hta.out"
echo
awk -v r="$ranks" -v mb="$size" -v ts="$ts_s" -v tm="$ts_mb" -v hs="$hta_s" -v hm="$hta_mb" \
    -v big="$largest" -v k="$in_flight" 'BEGIN {
  printf "%-34s %9s %12s\n", "", "seconds", "peak RSS MB"
  printf "%-34s %9.2f %12d\n", "tierscope analyze DIR", ts, tm
  printf "%-34s %9.2f %12d\n", "HTA TraceAnalysis + temporal", hs, hm
  speed = hs / ts; limit = 1.5 * big / 1048576 * k
  printf "job: %d ranks x %d MB; speed-up x%.1f (goal >= 10: %s)\n", r, mb, speed, (speed >= 10 ? "PASS" : "FAIL")
  printf "tierscope peak %d MB vs 1.5 x %.0f MB x %d in flight = %.0f MB (%s)\n", tm, big / 1048576, k, limit, (tm <= limit ? "PASS" : "FAIL")
}'
