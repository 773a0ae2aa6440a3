#!/usr/bin/env bash
# Configures and builds one CMake preset (release by default): scripts/build.sh [preset].
# TIERSCOPE_BUILD_TARGET builds one target instead of everything (main_job: the
# executable and its GPU plugin, without the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
[ -n "${TIERSCOPE_SETUP_DONE:-}" ] || bash scripts/setup.sh
if [ ! -f "build/$preset/build.ninja" ]; then
  cmake --preset "$preset" >/dev/null
elif [ CMakePresets.json -nt "build/$preset/CMakeCache.txt" ]; then
  # The preset changed (another compiler, a new option): configure that tree afresh.
  echo "build: CMakePresets.json changed; configuring build/$preset afresh"
  cmake --preset "$preset" --fresh >/dev/null
fi
cmake --build --preset "$preset" ${TIERSCOPE_BUILD_TARGET:+--target "$TIERSCOPE_BUILD_TARGET"}
