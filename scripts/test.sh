#!/usr/bin/env bash
# The test command: installs what is missing, builds (release), runs the C++ tests
# (ctest), then the Python suites (pytest, in a venv it creates and reuses): the
# Hugging Face golden tests and the trace-format tests (json, Holistic Trace Analysis).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release
(cd build/release && ctest --output-on-failure -j2)
python=$(bash scripts/python_env.sh | tail -n 1)
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TIERSCOPE_BIN="$PWD/build/release/tierscope" \
  "$python" -m pytest tests/model/golden tests/profile tests/trace -q
