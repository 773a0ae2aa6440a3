#!/usr/bin/env bash
# The FP32 micro-kernels' ceiling on this CPU, in one command from a clean checkout:
# builds tierscope's release tree, then runs bench/cpu/micro_kernel_ceiling (one thread,
# operands in L1, against the calibrated one-thread FMA peak).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/setup.sh
bash scripts/build.sh release >/dev/null
build/release/micro_kernel_ceiling "$@"
