#!/usr/bin/env bash
# Configures and builds one CMake preset (release by default): scripts/build.sh [preset]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
bash scripts/setup.sh
if [ ! -f "build/$preset/build.ninja" ]; then
  cmake --preset "$preset" >/dev/null
elif [ CMakePresets.json -nt "build/$preset/CMakeCache.txt" ]; then
  # The preset changed (another compiler, a new option): configure that tree afresh.
  echo "build: CMakePresets.json changed; configuring build/$preset afresh"
  cmake --preset "$preset" --fresh >/dev/null
fi
cmake --build --preset "$preset"
