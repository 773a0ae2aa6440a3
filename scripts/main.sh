#!/usr/bin/env bash
# The main job: installs what is missing, builds, then runs `tierscope lab` on the
# built-in model — the whole study in one command — writing results/ (summary.json,
# report.html, traces, kernel reports, batch sweep, validation). Extra arguments go to
# the lab (e.g. --quick, --threads 2, --out DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release >/dev/null
./build/release/tierscope lab "$@"
