#!/usr/bin/env python3
"""Calibration against GEMM libraries: `tierscope device --recalibrate` (FP32 FMA, BF16 dot
and triad peaks) next to what PyTorch's SGEMM (oneDNN/MKL or OpenBLAS inside the wheel)
and tierscope's own GEMM (from a `tierscope kernel` replay) reach on this machine, at the
study's shapes (8192 x 128 x 384/512). A GEMM above the calibrated peak would mean the
calibration is wrong. Usage: bench/calibration_check.py [THREADS]"""
import json
import os
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = os.path.join(root, "build", "release", "tierscope")
threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2


def sh(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


dev = json.loads(sh(binary, "device", "--threads", str(threads), "--recalibrate", "--format", "json"))
peaks = dev["peaks"]
print(f"device: {dev['name']}  features: {dev['features']}")
print(f"calibrated FP32 FMA: {peaks['fp32_gflops_1t']:8.1f} GFLOP/s 1 thread, "
      f"{peaks['fp32_gflops']:8.1f} on {peaks['threads']}")
if peaks["bf16_dot"]:
    print(f"calibrated BF16 dot: {peaks['bf16_gflops_1t']:8.1f} GFLOP/s 1 thread, "
          f"{peaks['bf16_gflops']:8.1f} on {peaks['threads']}")
else:
    print("calibrated BF16 dot: not available on this CPU")
print(f"calibrated triad:    {peaks['mem_gbps_1t']:8.1f} GB/s 1 thread, {peaks['mem_gbps']:8.1f} on {peaks['threads']}")

rows = []
try:
    import torch

    for n_threads in (1, threads):
        torch.set_num_threads(n_threads)
        for n in (384, 512):
            a = torch.randn(8192, 128)
            b = torch.randn(128, n)
            for _ in range(3):
                a @ b
            best = float("inf")
            for _ in range(10):
                t = time.perf_counter()
                a @ b
                best = min(best, time.perf_counter() - t)
            rows.append((f"torch {torch.__version__} mm 8192x128x{n}", n_threads, 2 * 8192 * 128 * n / best / 1e9))
except ImportError:
    print("(torch not installed: no library comparison)")

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "k.json")
    sh(binary, "kernel", "--mode", "batch-fp32", "--threads", str(threads), "-k", "regex:sgemm",
       "-c", "8", "--cache-control", "none", "-o", out)
    report = json.load(open(out))
    for r in report["reports"]:
        sol = {m["name"]: m.get("value") for s in r["sections"] for m in s["metrics"]}
        rows.append((f"tierscope {r['kernel']} {r['grid']}", threads, sol["Achieved FLOP/s"]))

peak_at = {1: peaks["fp32_gflops_1t"], threads: peaks["fp32_gflops"]}
print(f"\n{'GEMM':58s} {'threads':>7s} {'GFLOP/s':>9s} {'% of peak':>9s}")
for name, t, g in rows:
    print(f"{name:58s} {t:7d} {g:9.1f} {100 * g / peak_at[t]:8.1f}%")
