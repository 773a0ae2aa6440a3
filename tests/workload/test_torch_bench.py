"""`tierscope bench --engine torch`: the study's workload through PyTorch and transformers
(the test venv's), on the same inputs as the native engine. Its RESULT_JSON has the native
bench's keys, its output agrees with the native engine's (the checksum), every mode runs on
the CPU, the profile shows the study's pattern from torch's own operators (aten::linear 832
serial -> 13 batched per 64-sample unit of the 2-layer model, attention 128 -> 2), and a
missing device, Python or model is one line naming it. sweep, validate and kernel take the
same --engine torch."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

FAST = ["--iterations", "2", "--warmup", "1", "--threads", "2"]


def bench(tierscope_bin, *args, check=True, env=None):
    proc = subprocess.run([str(tierscope_bin), "bench", *args], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, env={**os.environ, **env} if env else None)
    if not check:
        return proc
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("RESULT_JSON="), proc.stdout
    return json.loads(line[len("RESULT_JSON="):]), proc.stdout


def torch_bench(tierscope_bin, *args, check=True):
    return bench(tierscope_bin, "--engine", "torch", "--python", sys.executable, *args, check=check)


@pytest.fixture(scope="module")
def native_fp32(tierscope_bin):
    return bench(tierscope_bin, *FAST)[0]


def test_result_has_the_native_keys_and_the_same_output(tierscope_bin, native_fp32):
    torch_result, _ = torch_bench(tierscope_bin, *FAST)
    assert set(torch_result) == set(native_fp32)
    assert torch_result["engine"] == "torch" and native_fp32["engine"] == "native"
    import torch
    import transformers

    assert torch_result["runtime"]["torch"] == torch.__version__
    assert torch_result["runtime"]["transformers"] == transformers.__version__
    assert torch_result["runtime"]["python_executable"] == sys.executable
    assert torch_result["device"].startswith("cpu: ") and "(2 threads)" in torch_result["device"]
    assert torch_result["threads"] == 2
    # The same tokens through the same weights: the checksums agree to FP32 rounding.
    assert abs(torch_result["checksum"] - native_fp32["checksum"]) < 1e-6, (torch_result, native_fp32)
    assert torch_result["checksum"] != 0
    assert torch_result["flops_per_sample"] == native_fp32["flops_per_sample"] > 0
    for key in ("samples_per_s", "latency_p50_ms", "total_s", "weight_memory_mb"):
        assert torch_result[key] > 0, key
    assert torch_result["latency_min_ms"] <= torch_result["latency_p50_ms"] <= torch_result["latency_max_ms"]
    assert torch_result["memory_source"] and native_fp32["memory_source"]


@pytest.mark.parametrize("mode,tolerance", [("serial-fp32", 1e-6), ("batch-bf16", 3e-5), ("batch-fp16", 3e-5),
                                            ("batch-int8", 2e-5)])
def test_every_mode_runs_on_the_cpu_and_agrees_with_the_native_engine(tierscope_bin, native_fp32, mode, tolerance,
                                                                     bf16_variants):
    # The checksum is about 1.1e-3 for this model; the two engines' roundings (and INT8
    # schemes: torch's per-tensor activations, ours per row) move it by less than
    # `tolerance` in the same mode. torch rounds every activation to 16 bits (about 2e-5
    # from FP32 in BF16), as the native engine does where it computes in BF16 (its BF16
    # dot kernels); where it does not (FP16 always; BF16's "fp32" variant) it keeps the
    # activations in FP32 over 16-bit weights, within 1.5e-5 of FP32. Every BF16 variant
    # this CPU runs is checked, each forced in turn; so for INT8, whose attention computes
    # in BF16 on the dot kernels (torch's dynamic quantization keeps it in FP32).
    result, _ = torch_bench(tierscope_bin, "--mode", mode, *FAST)
    variants = bf16_variants if mode in ("batch-bf16", "batch-int8") else [None]
    for variant in variants:
        native, _ = bench(tierscope_bin, "--mode", mode, *FAST,
                          env={"TIERSCOPE_BF16_KERNELS": variant} if variant else None)
        assert result["mode"] == mode and result["dtype"] == native["dtype"]
        assert abs(result["checksum"] - native["checksum"]) < tolerance, (mode, variant, result["checksum"],
                                                                         native["checksum"])
        if mode == "batch-fp16" or (mode == "batch-bf16" and variant == "fp32"):  # FP32 activations: weights rounded
            assert abs(native["checksum"] - native_fp32["checksum"]) < 1.5e-5, (mode, variant, native, native_fp32)
    assert abs(result["checksum"] - native_fp32["checksum"]) < 0.05 * abs(native_fp32["checksum"])


def unit_counts(stdout: str) -> dict:
    m = re.search(r"operator calls: (.*)", stdout)
    assert m, stdout
    return {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())}


def test_the_profile_shows_the_studys_pattern_from_torchs_operators(tierscope_bin, tmp_path):
    trace = tmp_path / "serial.json"
    _, serial = torch_bench(tierscope_bin, "--mode", "serial-fp32", "--profile", "--profile-units", "1",
                            "--trace", str(trace), *FAST)
    _, batch = torch_bench(tierscope_bin, "--profile", "--profile-units", "1", *FAST)
    assert "Per work unit (serial_bert_forward, 1 units recorded)" in serial
    assert "Per work unit (batched_bert_forward, 1 units recorded)" in batch
    s, b = unit_counts(serial), unit_counts(batch)
    assert (s["aten::linear"], b["aten::linear"]) == (832, 13)
    assert (s["aten::scaled_dot_product_attention"], b["aten::scaled_dot_product_attention"]) == (128, 2)
    assert "aten::addmm" in batch  # torch's own table rows, read back from its Kineto trace
    assert json.loads(trace.read_text())["traceEvents"], "the trace was kept where --trace said"
    analyze = subprocess.run([str(tierscope_bin), "analyze", str(trace)], capture_output=True, text=True,
                             timeout=300)
    assert analyze.returncode == 0, analyze.stderr
    assert "serial_bert_forward" in analyze.stdout


def test_all_minilm_l6_v2_runs_and_agrees_with_the_native_engine(tierscope_bin, minilm_dir):
    native, _ = bench(tierscope_bin, "--model", str(minilm_dir), *FAST)
    result, _ = torch_bench(tierscope_bin, "--model", str(minilm_dir), *FAST)
    assert result["runtime"]["model_type"] == "bert"
    assert abs(result["checksum"] - native["checksum"]) < 1e-5 * max(1.0, abs(native["checksum"]))
    assert result["flops_per_sample"] == native["flops_per_sample"]


@pytest.mark.parametrize("args,message", [
    (["--device", "cuda:99"], r"--engine torch: --device cuda:99: (torch .* sees no cuda device|\d+ cuda device)"),
    (["--device", "npu"], r"--engine torch: --device npu: torch_npu is not installed"),
    (["--device", "tpu"], r"--engine torch: --device tpu: not a device"),
    (["--graph"], r"--engine torch runs the model in PyTorch: --graph"),
])
def test_what_torch_cannot_run_is_one_line(tierscope_bin, args, message):
    proc = torch_bench(tierscope_bin, *args, *FAST, check=False)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and re.search(message, lines[0]), proc.stderr


def test_a_missing_python_or_model_is_one_line(tierscope_bin, tmp_path):
    proc = subprocess.run([str(tierscope_bin), "bench", "--engine", "torch", "--python", str(tmp_path / "nopython"),
                           *FAST], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines() == [
        f"tierscope: error: --engine torch: cannot run {tmp_path / 'nopython'}: No such file or directory (name a "
        "Python with torch and transformers by --python or TIERSCOPE_PYTHON)"]
    (tmp_path / "config.json").write_text('{"model_type": "bert", "vocab_size": 1000}')
    proc = torch_bench(tierscope_bin, "--model", str(tmp_path), *FAST, check=False)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "transformers cannot load it" in lines[0], proc.stderr


def test_sweep_validate_and_kernel_take_the_engine(tierscope_bin, tmp_path):
    py = ["--engine", "torch", "--python", sys.executable, "--threads", "2"]
    sweep = subprocess.run([str(tierscope_bin), "sweep", *py, "--batch-sizes", "1,8", "--iterations", "2",
                            "--warmup", "1", "--out", str(tmp_path / "sweep")], capture_output=True, text=True,
                           timeout=600)
    assert sweep.returncode == 0, sweep.stderr
    points = json.loads((tmp_path / "sweep" / "batch_sweep.json").read_text())["points"]
    assert [p["batch"] for p in points] == [1, 8] and all(p["samples_per_s"] > 0 for p in points)
    val = subprocess.run([str(tierscope_bin), "validate", *py, "--batch-size", "8", "--seq-len", "32", "--out",
                          str(tmp_path / "val")], capture_output=True, text=True, timeout=600)
    assert val.returncode == 0, val.stdout + val.stderr
    v = json.loads((tmp_path / "val" / "validation.json").read_text())
    assert v["engine"] == "torch" and v["pass"] and v["fp16"]["cosine"] > 0.9999
    kernel = subprocess.run([str(tierscope_bin), "kernel", *py, "-k", "addmm"], capture_output=True, text=True,
                            timeout=600)
    assert kernel.returncode != 0
    assert kernel.stderr.strip().splitlines() == [
        "tierscope: error: --engine torch on the CPU: PyTorch records operators there, not kernels, so tier 3 has no "
        "kernel to inspect (the native engine's kernels replay: --engine native)"]


def test_a_worker_that_never_answers_is_stopped_at_the_timeout(tierscope_bin, tmp_path):
    # A hung device or driver: the "Python" starts and never replies. --timeout stops it
    # and the run ends with one line naming the limit, instead of waiting for ever.
    silent = tmp_path / "silent-python"
    pid_file = tmp_path / "worker.pid"
    silent.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")
    silent.chmod(0o755)
    start = time.monotonic()
    proc = subprocess.run([str(tierscope_bin), "bench", "--engine", "torch", "--python", str(silent), "--timeout", "1",
                           *FAST], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and time.monotonic() - start < 30
    assert proc.stderr.strip().splitlines() == [
        f"tierscope: error: --engine torch: {silent} gave no reply within 1 s and was stopped (--timeout sets the "
        "limit, 0 none)"]
    pid = int(pid_file.read_text())
    stat = Path(f"/proc/{pid}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
