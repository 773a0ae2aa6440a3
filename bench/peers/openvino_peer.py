"""OpenVINO as a peer of bench/peers/peers.py, run the way its documentation recommends for
a PyTorch model on the CPU: ov.convert_model on the Hugging Face model (transformers'
default attention), the shapes made static ([batch, seq], OpenVINO's advice for the CPU
plugin), compiled for "CPU" with the LATENCY performance hint (one synchronous request,
as every other peer here is timed) and INFERENCE_NUM_THREADS set to the run's threads;

  * FP32 forced: INFERENCE_PRECISION_HINT=f32;
  * its default: no precision hint (BF16 on CPUs with AVX512_BF16/AMX, else FP32); the
    precision it picked is read back from the compiled model and names the row's mode;
  * INT8: NNCF post-training quantization (nncf.quantize, model_type=TRANSFORMER) on a
    calibration set of 4 batches of 8 samples drawn from another seed than the timed batch,
    then compiled like the FP32 model (its default precision for what stays in float).
"""
from __future__ import annotations

import numpy as np
import torch


def _encoder(model):
    class Encoder(torch.nn.Module):  # positional inputs, one output, for the converter
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return Encoder(model).eval()


def _compile(core, model, threads: int, precision: str | None):
    config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads}
    if precision is not None:
        config["INFERENCE_PRECISION_HINT"] = precision
    compiled = core.compile_model(model, "CPU", config)
    picked = compiled.get_property("INFERENCE_PRECISION_HINT")  # an ov.Type: "f32", "bf16", "f16"
    return compiled, picked.get_type_name() if hasattr(picked, "get_type_name") else str(picked)


def _static(model, batch: int, seq: int):
    model.reshape({i: [batch, seq] for i in range(len(model.inputs))})
    return model


def openvino_rows(model_dir: str, ids: torch.Tensor, calib_ids: torch.Tensor, ref: np.ndarray, a, rows: list,
                  acc: dict, row, compare, accuracy, describe, failed, timed) -> None:
    """Appends OpenVINO's rows (FP32 forced, default, NNCF INT8) to `rows`; the helpers are
    peers.py's, passed in so both files share one definition of each (`describe` marks an
    output far from FP32 as a MISMATCH, which no goal takes as the peer's figure)."""
    try:
        import openvino as ov
    except ImportError:
        rows.append(row("openvino", "-", float("nan"), "not installed (bench/peers/requirements.txt)",
                        "openvino/-", "-", {}))
        return
    from transformers import AutoModel

    ver = ov.__version__.split("-")[0]
    core = ov.Core()
    hf = AutoModel.from_pretrained(model_dir).eval()
    impl = hf.config._attn_implementation
    mask = torch.ones_like(ids)
    feed = {0: ids.numpy(), 1: mask.numpy()}
    base = {"converted_from": f"transformers AutoModel, attn={impl} (its default)", "shapes": "static",
            "performance_hint": "LATENCY", "threads": a.threads}
    try:
        with torch.no_grad():
            converted = ov.convert_model(_encoder(hf), example_input=(ids[:2], mask[:2]))
    except Exception as e:  # noqa: BLE001 - a conversion failure is reported, not hidden
        rows.append(row(f"openvino {ver}", "batch-fp32", float("nan"), failed(e), "openvino/batch-fp32", "f32", base))
        return

    def run(model, precision: str | None, variant: str, int8: bool) -> None:
        cfg = {**base, "precision_hint": precision or "(default)"}
        try:
            compiled, picked = _compile(core, _static(model, a.batch_size, a.seq_len), a.threads, precision)
            cfg["inference_precision"] = picked
            request = compiled.create_infer_request()
            out = request.infer(feed)[0][:4]
            mode = "batch-int8" if int8 else ("batch-bf16" if picked == "bf16" else
                                              "batch-fp16" if picked == "f16" else "batch-fp32")
            if int8 or mode != "batch-fp32":
                acc8 = accuracy(ref, out)
                check = describe(acc8)
                acc[f"openvino {variant}"] = acc8
            else:
                check = compare(ref, out)
            t = timed(lambda: request.infer(feed), a.iterations)
            rows.append(row(f"openvino {ver}", mode, a.batch_size / t, check, f"openvino/{mode}", variant, cfg))
        except Exception as e:  # noqa: BLE001
            rows.append(row(f"openvino {ver}", "batch-int8" if int8 else "batch-fp32", float("nan"), failed(e),
                            f"openvino/{'batch-int8' if int8 else 'batch-fp32'}", variant, cfg))

    run(converted.clone(), "f32", "f32 (INFERENCE_PRECISION_HINT)", int8=False)
    run(converted.clone(), None, "default precision", int8=False)
    try:
        import nncf

        calib = [{0: calib_ids[i:i + 8].numpy(), 1: np.ones_like(calib_ids[i:i + 8].numpy())}
                 for i in range(0, calib_ids.shape[0], 8)]
        quantized = nncf.quantize(converted.clone(), nncf.Dataset(calib), model_type=nncf.ModelType.TRANSFORMER,
                                  subset_size=len(calib))
    except Exception as e:  # noqa: BLE001 - NNCF missing or failing is reported
        rows.append(row(f"openvino {ver}", "batch-int8", float("nan"), failed(e), "openvino/batch-int8",
                        "nncf.quantize", base))
        return
    run(quantized, None, "nncf.quantize (TRANSFORMER)", int8=True)
