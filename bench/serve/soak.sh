#!/usr/bin/env bash
# The serving soak, in one command from a clean checkout: builds tierscope, prepares the
# Python venv (tritonclient for the gRPC clients), then runs soak.py: minutes of mixed
# good, malformed, oversized, disconnecting and slow clients on HTTP and gRPC at once,
# loopback only, then SIGTERM. Extra arguments go to soak.py (--duration, --warmup).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/setup.sh
bash scripts/build.sh release >/dev/null
python=$(bash scripts/python_env.sh | tail -n 1)
"$python" bench/serve/soak.py --tierscope build/release/tierscope "$@"
