#!/usr/bin/env bash
# The test command: installs what is missing, builds (release), runs the C++ tests
# (ctest), then the Python suites (pytest, in a venv it creates and reuses): the
# Hugging Face golden tests, the trace-format tests (json, Holistic Trace Analysis) and
# the lab end to end (--quick, schema, report.html in headless Chromium), and WordPiece
# tokenization against Hugging Face's tokenizer, the server over HTTP (tests/serve), and
# the Python package (pip install ., tests/python).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release
# Headless Chromium renders the lab's report.html in tests/lab (Debian's package).
if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null \
    || { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends chromium >/dev/null; }
fi
(cd build/release && ctest --output-on-failure -j2)
python=$(bash scripts/python_env.sh | tail -n 1)
# The Python package (pyproject.toml: scikit-build-core + nanobind) into the same venv;
# only the analyzer's libraries compile, in build/python (ccache shares their objects).
echo "test: pip install . (the tierscope Python package)"
"$python" -m pip install -q --no-build-isolation .
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TIERSCOPE_BIN="$PWD/build/release/tierscope" \
  "$python" -m pytest tests/layout tests/model/golden tests/profile tests/trace tests/analysis tests/lab tests/text tests/serve \
  tests/workload tests/python tests/bench -q
