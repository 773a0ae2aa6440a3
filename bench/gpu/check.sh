#!/usr/bin/env bash
# The GPU check of issue 9, in one script: builds tierscope with the CUDA backend (or uses
# TIERSCOPE_BIN / build/cuda/tierscope when it is already built), then on cuda:0 runs the
# GPU unit tests (CUDA vs CPU: FP32 max abs <= 1e-3, FP16/BF16 cosine >= 0.9999), the
# device properties and calibrated peaks, the four bench modes at batch 64 x seq 128,
# tier-1/2 traces of one serial and one batched work unit with their reports and diff,
# tier 3 (the hottest GEMM of each replayed, with its real cuBLASLt kernel, grid,
# registers and occupancy), the CUDA-graph path (serial and batched), a serving run
# under `tierscope load`, the batch sweep 1..256, one quick lab run on the native engine and
# one through PyTorch (lab --engine torch: nsys and ncu steps when present); summary.txt
# gathers the closing note's numbers. Everything goes under OUT (default results/gpu;
# $OUT on the device machine). Each step's failure is recorded and the script goes on.
# Each step is bounded (STEP_LIMIT, CHECK_DEADLINE below) so the whole check ends inside about
# 8 minutes of device time.
#
# On the device machine (no network, none of the Debian libraries): make the bundle here
# first (bash bench/gpu/bundle.sh) and carry .gpu_bundle; this script then uses it, with
# the device's own CUDA libraries. What comes back from $OUT is at most 8 files, so the
# outputs go to results/gpu and are packed into $OUT/gpu_check.tar.gz, with steps.txt and
# summary.txt beside it.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${GPU_CHECK_DIR:-results/gpu}
rm -rf "$out"
mkdir -p "$out"
if [ -z "${TIERSCOPE_BIN:-}" ] && [ -x .gpu_bundle/tierscope ]; then
  export TIERSCOPE_BIN=$PWD/.gpu_bundle/tierscope
  libs=$PWD/.gpu_bundle/lib
  if [ ! -d "$libs" ] && [ -f .gpu_bundle/lib.tar.xz ]; then
    tar -xJf .gpu_bundle/lib.tar.xz -C .gpu_bundle 2>/dev/null ||
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        .gpu_bundle/lib.tar.xz .gpu_bundle
  fi
  # cuBLASLt and CUPTI of CUDA 13: the toolkit's, else a pip wheel's.
  for name in libcublasLt.so.13 libcupti.so.13; do
    dir=$(find /usr/local/cuda/ /usr/local/cuda-13*/ /usr/lib/x86_64-linux-gnu /opt /usr/local/lib \
            -name "$name" 2>/dev/null | head -n 1 | xargs -r dirname)
    [ -n "$dir" ] && libs=$libs:$dir
  done
  export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# Nsight Compute where the image has it off the PATH (/opt/nvidia/nsight-compute/VERSION/ncu).
if ! command -v ncu >/dev/null 2>&1; then
  ncu_bin=$(find /opt/nvidia /usr/local/cuda*/ -maxdepth 3 -name ncu -type f 2>/dev/null | head -n 1)
  [ -n "$ncu_bin" ] && export PATH=$PATH:$(dirname "$ncu_bin")
fi
# The device's time is short: each step stops at STEP_LIMIT seconds (default 90), and steps
# not begun by CHECK_DEADLINE seconds into the script (default 330) are skipped and recorded.
deadline=${CHECK_DEADLINE:-330}
log() { echo "== $*" | tee -a "$out/steps.txt"; }
# CHECK_ONLY=REGEX reruns only the steps whose names match (e.g. CHECK_ONLY='lab_torch|kernel_').
wanted() { [ -z "${CHECK_ONLY:-}" ] || [[ $1 =~ ^(${CHECK_ONLY})$ ]]; }
run() {  # run NAME CMD...: output to $out/NAME.txt, status to steps.txt
  local name=$1; shift
  wanted "$name" || return 0
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "$name skipped (past the ${deadline}s deadline)" | tee -a "$out/steps.txt"
    return 1
  fi
  local t0=$SECONDS
  timeout "${STEP_LIMIT:-90}" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  echo "$name rc=$rc $((SECONDS - t0))s" | tee -a "$out/steps.txt"
  return $rc
}

steps() {
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
{ echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"; [ -n "${TIERSCOPE_BIN:-}" ] && ldd "$TIERSCOPE_BIN" \
    "$(dirname "$TIERSCOPE_BIN")/libtierscope_cuda.so"; } \
  >"$out/ldd.txt" 2>&1
bin=${TIERSCOPE_BIN:-}
if [ -z "$bin" ]; then
  if [ ! -x build/cuda/tierscope ]; then
    log "building with CUDA"
    run configure cmake -S . -B build/cuda -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DTIERSCOPE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 || exit 1
    run build cmake --build build/cuda -j"$(nproc)" || exit 1
  fi
  bin=build/cuda/tierscope
fi
tests=$(dirname "$bin")/tests
# The test binaries sit below the plugin's directory: tell them where it is.
export TIERSCOPE_GPU_PLUGIN
TIERSCOPE_GPU_PLUGIN=$(cd "$(dirname "$bin")" && pwd)/libtierscope_cuda.so

run device "$bin" device --device cuda
run device_json "$bin" device --device cuda --format json
[ -x "$tests/backend_test" ] && run gpu_tests "$tests/backend_test" --gtest_filter='*Cuda*:*Device*:*BackendOps*cuda*'
for mode in serial-fp32 batch-fp32 batch-fp16 batch-bf16; do
  run "bench_$mode" "$bin" bench --device cuda --mode "$mode" --batch-size 64 --seq-len 128 \
    --warmup 3 --iterations 20
done
# The graph path: the same units captured once and replayed (launch-bound tiny model).
for mode in serial-fp32 batch-fp32; do
  run "bench_graph_$mode" "$bin" bench --device cuda --graph --mode "$mode" --batch-size 64 \
    --seq-len 128 --warmup 3 --iterations 20
done
run trace_serial "$bin" bench --device cuda --mode serial-fp32 --profile --profile-units 1 \
  --trace "$out/serial.json.gz"
run trace_batch "$bin" bench --device cuda --mode batch-fp32 --profile --profile-units 1 \
  --trace "$out/batch.json.gz"
run analyze_serial "$bin" analyze "$out/serial.json.gz"
run analyze_batch "$bin" analyze "$out/batch.json.gz"
run diff "$bin" diff "$out/serial.json.gz" "$out/batch.json.gz"
run hot_kernels "$bin" stats "$out/serial.json.gz" --report units,in_use,hot_kernels
run hot_kernels_batch "$bin" stats "$out/batch.json.gz" --report units,in_use,hot_kernels
# Tier 3: the hottest GEMM of one serial and one batched unit, replayed 10 passes.
for mode in serial-fp32 batch-fp32 batch-fp16; do
  run "kernel_$mode" "$bin" kernel --device cuda --mode "$mode" --batch-size 64 --seq-len 128 \
    --warmup 1 --iterations 1 -k regex:gemm -c 1 -s 4 -o "$out/kernel_$mode.json"
done
# Serving on the GPU: the server with dynamic batching under a short closed-loop load.
if wanted serve_load; then
"$bin" serve --device cuda --port 0 >"$out/serve_stdout.txt" 2>"$out/serve_stderr.txt" &
serve_pid=$!
for _ in $(seq 100); do
  grep -q listening "$out/serve_stdout.txt" 2>/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || break  # it exited: see serve_stderr.txt
  sleep 0.2
done
url=$(grep -o 'http://[0-9.:]*' "$out/serve_stdout.txt" | head -n 1)
if [ -n "$url" ]; then
  run serve_load "$bin" load --url "$url" --mode closed --concurrency 64 --duration 10 \
    --warmup 2 --lengths fixed:128 --json "$out/serve_load.json"
else
  echo "serve_load rc=1 (the server did not start)" | tee -a "$out/steps.txt"
fi
kill -TERM "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null
fi
run sweep "$bin" sweep --device cuda --batch-sizes 1,2,4,8,16,32,64,128,256 --out "$out/sweep"
run lab "$bin" lab --device cuda --quick --out "$out/lab"
# The same study through PyTorch on the GPU (the device image's torch, this python3):
# tier 2 through nsys and tier 3 through ncu when they are on PATH (issue 26).
# PyTorch's Python runs without the bundle's LD_LIBRARY_PATH (the toolkit's cuBLASLt and
# CUPTI 13 would shadow the wheel's own); each run (and profiler run) is stopped at 240 s.
clean_python=$out/python-clean.sh
printf '#!/bin/sh\nexec env -u LD_LIBRARY_PATH %s "$@"\n' "${TORCH_PYTHON:-python3}" >"$clean_python"
chmod +x "$clean_python"
STEP_LIMIT=150 run lab_torch "$bin" lab --engine torch --python "$clean_python" --device cuda --quick \
  --timeout 90 --out "$out/lab_torch"
}

# The closing note's numbers in one place: samples/s per mode (and the graph path), the
# sweep, launches per unit and device in-use from tier 2, and tier 3's hot kernel grids.
# Written, and copied to $OUT, however the script ends (a step past the device's limit
# loses only what it had not done).
finish() {
grep -h RESULT_JSON "$out"/bench_*.txt >"$out/results.jsonl" 2>/dev/null || true
{
  echo "== samples/s (batch 64 x seq 128)"
  for f in "$out"/bench_*.txt; do
    printf '%-28s %s\n' "$(basename "$f" .txt)" \
      "$(grep -o '"samples_per_s":[0-9.e+]*' "$f" | cut -d: -f2)"
  done
  echo "== sweep"; cat "$out/sweep/batch_sweep.txt" 2>/dev/null
  echo "== tier 2: units, in-use, hot kernels"
  cat "$out/hot_kernels.txt" "$out/hot_kernels_batch.txt" 2>/dev/null
  echo "== lab --engine torch --device cuda (headline, diagnosis, profiler steps)"
  python3 - "$out/lab_torch/summary.json" <<'PY' 2>&1 || true
import json, sys
s = json.load(open(sys.argv[1]))
h = s["headline"]
print(f"baseline {h['baseline_samples_per_s']:.1f} samples/s, batch x{h['batch_speedup']:.2f}, "
      f"final {h['final_mode']} at {h['final_batch_size']}: {h['final_samples_per_s']:.1f} (x{h['final_speedup']:.2f})")
for line in s["diagnosis"]:
    print("  " + line)
for st in s.get("profilers", {}).get("steps", []):
    print(f"  {st['tool']} {st['run']}: {st['status']} {st.get('note', '')}")
PY
  echo "== tier 3"
  grep -h -E "^  [^ ]|Grid Size|Block Size|Device Kernel|# SMs|Waves|Registers|Occupancy|Duration  |Compute Throughput|Memory Throughput|Bound By|NOTE|higher tier|justified|Near its" \
    "$out"/kernel_*.txt 2>/dev/null
} >"$out/summary.txt" 2>&1
log "done; outputs in $out"
if [ -n "${OUT:-}" ] && [ "$OUT" != "$out" ]; then
  tar -czf "$OUT/gpu_check.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
  cp "$out/steps.txt" "$out/summary.txt" "$OUT/"
fi
}
trap finish EXIT
trap 'exit 143' TERM INT
steps
