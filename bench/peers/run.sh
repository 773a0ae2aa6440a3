#!/usr/bin/env bash
# Peers side by side, in one command from a clean checkout: builds tierscope, prepares the
# Python venv (tests/requirements.txt plus bench/peers/requirements.txt), then runs
# peers.py: tierscope's five modes, PyTorch eager (+ torch.compile) via transformers'
# AutoModel with its default (SDPA) and eager attention, and ONNX Runtime with its BERT
# graph optimizations (INT8: quantize_dynamic on the optimized graph), and OpenVINO (FP32
# forced, its default precision, NNCF INT8), on the same weights
# and inputs, for the built-in model and all-MiniLM-L6-v2. Each peer's figure is its best
# variant; every variant, and what it ran, goes to build/peers/peers.json. Extra
# arguments go to peers.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/setup.sh
bash scripts/build.sh release >/dev/null
python=$(bash scripts/python_env.sh | tail -n 1)
"$python" -m pip install -q -r bench/peers/requirements.txt
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$python" bench/peers/peers.py \
  --tierscope build/release/tierscope "$@"
