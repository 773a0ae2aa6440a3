#!/usr/bin/env bash
# The main job: installs what is missing, builds, then runs `tierscope bench` on the
# built-in model in the study's four modes (64 samples x 128 tokens) and prints each
# RESULT_JSON line. Extra arguments go to every bench run (e.g. --threads 2).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release >/dev/null
for mode in serial-fp32 batch-fp32 batch-fp16 batch-bf16; do
  ./build/release/tierscope bench --mode "$mode" "$@"
done
