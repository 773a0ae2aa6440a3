"""tierscope's PyTorch workload: the study's bert_infer.py, run by `tierscope bench --engine
torch` (embedded in the binary, written to a temporary directory and run with the chosen
Python). It measures and records; every figure it reports (percentiles, the checksum,
FLOPs, the operator tables) is computed by tierscope from what it writes.

Usage: python torch_bench.py REQUEST.json. The request names the model directory, the
mode, the device and the loop; the input ids come as raw little-endian int64 [batch,
seq_len] (tierscope's generator, so both engines see the same tokens). It writes the last
unit's last_hidden_state as raw float32 and a response JSON: per-unit latencies, the
peak memory and where it came from, the runtime's versions and the device's name. A
failure is one line on stderr, `torch workload: ...`, and exit status 2.
"""
import json
import os
import platform
import resource
import sys
import time


class WorkloadError(Exception):
    pass


def load_device(device):
    """torch and its device module (torch.cuda, torch.xpu, ...), the vendor's extension imported."""
    import torch

    kind, _, index = device.partition(":")
    if kind not in ("cpu", "cuda", "xpu", "npu", "musa", "mps"):
        raise WorkloadError(f"--device {device}: not a device (cpu, cuda[:N], xpu, npu, musa)")
    if kind == "cpu":
        if index:
            raise WorkloadError(f"--device {device}: the CPU takes no index")
        return torch, None
    extension = {"npu": "torch_npu", "musa": "torch_musa"}.get(kind)
    if extension:
        try:
            __import__(extension)
        except ImportError as e:
            raise WorkloadError(f"--device {device}: {extension} is not installed in {sys.executable} ({e})")
    module = getattr(torch, kind, None)
    if module is None or not module.is_available():
        raise WorkloadError(f"--device {device}: torch {torch.__version__} in {sys.executable} sees no {kind} device")
    if index:
        if not index.isdigit() or int(index) >= module.device_count():
            raise WorkloadError(f"--device {device}: {module.device_count()} {kind} device(s) here")
    return torch, module


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_model(torch, req):
    from transformers import AutoModel

    try:
        model = AutoModel.from_pretrained(req["model_dir"], local_files_only=True)
    except Exception as e:  # transformers raises OSError, ValueError, KeyError ... for a directory it cannot load
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise WorkloadError(f"--model {req['model_dir']}: transformers cannot load it: {first}")
    model.eval()
    dtype = req["dtype"]
    if dtype == "int8":
        if req["device"] != "cpu":
            raise WorkloadError("batch-int8 is PyTorch's dynamic quantization: CPU only")
        model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    elif dtype in ("float16", "bfloat16"):
        model = model.to(getattr(torch, dtype))
    return model.to(req["device"])


def run(req):
    torch, module = load_device(req["device"])
    if req["threads"] > 0:
        torch.set_num_threads(req["threads"])
    model = load_model(torch, req)
    B, S = req["batch_size"], req["seq_len"]
    with open(req["ids_path"], "rb") as f:
        raw = f.read()
    if len(raw) != 8 * B * S:
        raise WorkloadError(f"{req['ids_path']}: {len(raw)} bytes, not {B} x {S} int64 ids")
    ids = torch.frombuffer(bytearray(raw), dtype=torch.int64).reshape(B, S).to(req["device"])
    serial = req["serial"]
    scope = "serial_bert_forward" if serial else "batched_bert_forward"

    def sync():
        if module is not None:
            module.synchronize()

    def unit():
        if serial:
            return torch.cat([model(input_ids=ids[i:i + 1]).last_hidden_state for i in range(B)])
        return model(input_ids=ids).last_hidden_state

    profiler, window = None, req.get("profile")
    if window is not None:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        if req["device"].startswith("cuda"):
            activities.append(ProfilerActivity.CUDA)
        elif req["device"].startswith("xpu"):
            activities.append(ProfilerActivity.XPU)
        profiler = profile(activities=activities, record_shapes=window["record_shapes"],
                           profile_memory=window["profile_memory"])
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    time.sleep(req["pre_delay_s"])
    latencies, out, recording, recorded = [], None, False, 0
    with torch.inference_mode():
        for _ in range(req["warmup"]):
            unit()
        sync()
        if module is not None and hasattr(module, "reset_peak_memory_stats"):
            module.reset_peak_memory_stats()
        t0 = time.perf_counter()
        for i in range(req["iterations"]):
            if profiler is not None:
                # The window tierscope's own profiler keeps: it opens at a unit boundary once
                # `skip` units and `delay_s` seconds have passed, for `units` units or
                # `duration_s` seconds (0: no limit).
                elapsed = time.perf_counter() - t0
                if not recording and recorded == 0 and i >= window["skip"] and elapsed >= window["delay_s"]:
                    profiler.start()
                    recording, opened = True, time.perf_counter()
                elif recording and ((window["units"] and recorded >= window["units"]) or
                                    (window["duration_s"] and time.perf_counter() - opened >= window["duration_s"])):
                    profiler.stop()
                    recording = False
            s = time.perf_counter()
            if recording:
                with torch.profiler.record_function(scope):
                    out = unit()
                recorded += 1
            else:
                out = unit()
            sync()
            latencies.append((time.perf_counter() - s) * 1e3)
        sync()
        total = time.perf_counter() - t0
    if recording:
        profiler.stop()
    if profiler is not None and recorded > 0:
        profiler.export_chrome_trace(req["trace_path"])
    if module is not None and hasattr(module, "max_memory_allocated"):
        peak, source = int(module.max_memory_allocated()), f"torch.{req['device'].split(':')[0]}.max_memory_allocated"
    else:
        # The CPU has no allocator statistics in torch: the process's peak resident set
        # growth from before the warm-up.
        peak = max(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_before)
        source = "process peak RSS growth from warm-up on"
    out = out.float().contiguous().cpu()
    with open(req["output_path"], "wb") as f:
        f.write(out.numpy().tobytes())
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    weights += sum(b.numel() * b.element_size() for b in model.buffers())
    import transformers

    return {
        "latencies_ms": latencies,
        "total_s": total,
        "peak_bytes": peak,
        "memory_source": source,
        "weight_bytes": weights,
        "threads": torch.get_num_threads(),
        "output_shape": list(out.shape),
        "profiled_units": recorded,
        "device_name": module.get_device_name() if module is not None and hasattr(module, "get_device_name")
        else cpu_name(),
        "runtime": {
            "python": platform.python_version(),
            "python_executable": sys.executable,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "model_type": getattr(model.config, "model_type", ""),
            "attn_implementation": getattr(model.config, "_attn_implementation", ""),
        },
    }


def main():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        with open(sys.argv[1]) as f:
            req = json.load(f)
        resp = run(req)
    except WorkloadError as e:
        print(f"torch workload: {e}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"torch workload: {sys.executable} cannot import {e.name}: install torch and transformers there, or "
              f"name another Python with --python / TIERSCOPE_PYTHON", file=sys.stderr)
        return 2
    except Exception as e:  # a failure inside torch: its traceback, then the one line tierscope reports
        import traceback

        traceback.print_exc()
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        print(f"torch workload: {type(e).__name__}: {first}", file=sys.stderr)
        return 2
    with open(req["response_path"], "w") as f:
        json.dump(resp, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
