#!/usr/bin/env bash
# The main job: installs what is missing, builds tierscope (and its GPU plugin where the
# CUDA toolkit is installed; not the tests), then runs `tierscope lab` on the built-in
# model — the whole study in one command — writing results/ (summary.json, report.html,
# traces, kernel reports, batch sweep, validation). It says what it is doing at each
# stage. Extra arguments go to the lab (e.g. --quick, --threads 2, --out DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "[main 1/3] checking the Debian packages the build needs"
bash scripts/setup.sh
echo "[main 2/3] building tierscope (release; the compiler's progress follows)"
TIERSCOPE_SETUP_DONE=1 TIERSCOPE_BUILD_TARGET=main_job bash scripts/build.sh release
echo "[main 3/3] tierscope lab $* (progress on stderr, a line per step)"
# The lab's own last line names its report, wherever --out put it.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
./build/release/tierscope lab "$@" | tee "$log"
report=$(sed -n 's/^report: //p' "$log" | tail -n 1)
if [ -n "$report" ]; then
  echo "main: done; open $report (every number is in $(dirname "$report")/summary.json)"
else
  echo "main: done; the lab did not name its report (see its output above)"
fi
