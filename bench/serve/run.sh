#!/usr/bin/env bash
# Dynamic batching served live, in one command from a clean checkout: builds tierscope,
# then runs serve_bench.py (offline batched throughput vs `tierscope serve` with and
# without batching, under `tierscope load`; then packed against bucketed batching on a
# skewed mix of 8-256 tokens, with the serving-without-padding goal). Extra arguments go
# to serve_bench.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/setup.sh
bash scripts/build.sh release >/dev/null
python3 bench/serve/serve_bench.py --tierscope build/release/tierscope "$@"
