#!/usr/bin/env bash
# The analysis page's size and drawing time (issue 31's goals: a page of at most a few MB,
# drawn in under 2 s, for a 1 GB trace and a 64-rank job): `tierscope analyze --html` on
# every corpus trace and job, a synthetic Kineto trace of SIZE_MB (bench/make_synthetic_
# trace.py) and a synthetic 64-rank job (bench/job/make_job.py), each page loaded in
# headless Chromium. "draw" is the page's own script time (performance.now(), from its
# first line to the last chart: data-draw-ms); "load" is Chromium's whole run, start-up
# included. Goals: page <= 5 MB and draw <= 2000 ms.
#   bash bench/page/run.sh [SIZE_MB=1024]
set -euo pipefail
cd "$(dirname "$0")/../.."
size=${1:-1024}
bin=build/release/tierscope
[ -x "$bin" ] || bash scripts/build.sh release
command -v chromium >/dev/null || { echo "bench/page: chromium is not installed (apt-get install chromium)"; exit 1; }
corpus=../shared/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
inputs=("$corpus"/traces/*.json.gz "$corpus"/traces/field/*.json.gz "$corpus"/traces/vendors/rocprofv3/*.json.gz
        "$corpus"/nsys/*.sqlite "$corpus"/traces/vendors/t4_p2p_job "$corpus"/traces/vendors/ascend_2rank)
echo "bench/page: writing a ${size} MB synthetic trace and a 64-rank job"
python3 bench/make_synthetic_trace.py "$work/synthetic.json" "$size" >/dev/null
python3 bench/job/make_job.py "$work/job64" 64 0.5 3 >/dev/null
inputs+=("$work/synthetic.json" "$work/job64")
printf '%-58s %10s %9s %9s %9s %s\n' "input" "input MB" "page MB" "draw ms" "load s" "goals"
fails=0
for in in "${inputs[@]}"; do
  name=$(basename "$in")
  page="$work/$name.html"
  t0=$EPOCHREALTIME
  "$bin" analyze "$in" --html "$page" 2>/dev/null
  t1=$EPOCHREALTIME
  dom=$(chromium --headless --no-sandbox --disable-gpu --user-data-dir="$work/profile" \
        --window-size=1280,2400 --dump-dom "file://$page" 2>/dev/null)
  t2=$EPOCHREALTIME
  draw=$(grep -o 'data-draw-ms="[0-9]*"' <<<"$dom" | grep -o '[0-9]*' || echo "?")
  in_mb=$(du -sm --apparent-size "$in" | cut -f1)
  page_mb=$(awk -v b="$(stat -c %s "$page")" 'BEGIN { printf "%.2f", b / 1e6 }')
  ok="ok"
  if awk -v m="$page_mb" 'BEGIN { exit !(m > 5) }' || [ "$draw" = "?" ] || [ "$draw" -gt 2000 ]; then ok="MISSED"; fails=$((fails + 1)); fi
  printf '%-58s %10s %9s %9s %9.1f %s (analyze %.1f s)\n' "${name:0:58}" "$in_mb" "$page_mb" "$draw" \
    "$(echo "$t2 - $t1" | bc)" "$ok" "$(echo "$t1 - $t0" | bc)"
done
echo "bench/page: $fails page(s) missed a goal (page <= 5 MB, draw <= 2000 ms)"
