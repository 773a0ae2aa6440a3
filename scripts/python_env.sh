#!/usr/bin/env bash
# Creates (once) and updates the Python venv used by the tests and peers: torch,
# transformers and friends from PyPI. Prints the venv's python on the last line.
# The venv lives outside the checkout so clean clones reuse it; pip keeps its cache.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${TIERSCOPE_VENV:-$HOME/.cache/tierscope/venv}"
if [ ! -x "$venv/bin/python" ]; then
  echo "python_env: creating $venv" >&2
  python3 -m venv "$venv" >&2
fi
stamp="$venv/.tierscope-requirements.sha256"
want=$(sha256sum tests/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "python_env: installing tests/requirements.txt (torch is large; pip's cache is kept)" >&2
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
  "$venv/bin/python" -m pip install -q -r tests/requirements.txt >&2
  echo "$want" >"$stamp"
fi
echo "$venv/bin/python"
