"""tierscope's PyTorch workload: the study's bert_infer.py, run by `tierscope bench --engine
torch` (embedded in the binary, written to a temporary directory and run with the chosen
Python). It measures and records; every figure it reports (percentiles, the checksum,
FLOPs, the operator tables) is computed by tierscope from what it writes.

Usage: python torch_bench.py REQUEST.json, or python torch_bench.py --serve (a worker that
one tierscope process keeps for all its runs, so torch is imported once and the last model
reused): requests' paths come one a line on stdin, and each gets one line on fd 3, "ok",
"error MESSAGE", or "fatal MESSAGE" after which the worker exits (a failure inside torch
may leave it unusable) and tierscope starts a fresh one for the next run. A request names
the model directory, the mode, the device and the loop; the input ids come as raw
little-endian int64 [batch, seq_len] (tierscope's generator, so both engines see the same
tokens). It writes the last unit's last_hidden_state as raw float32 and a response JSON:
per-unit latencies, the peak memory and where it came from, the runtime's versions and the
device's name. A failure is one line, `torch workload: ...` on stderr (exit status 2) or
the error reply.
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
    if kind not in ("cpu", "cuda", "xpu", "npu", "musa"):
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


_models = {}  # (model_dir, dtype, device) -> model: the last one loaded, reused by the next run like it
_default_threads = None  # torch's own thread count, before any request set one


def load_model(torch, req):
    key = (req["model_dir"], req["dtype"], req["device"])
    if key not in _models:
        _models.clear()  # one model at a time: a sweep of another model frees the last
        _models[key] = _load_model(torch, req)
    return _models[key]


def _load_model(torch, req):
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


_peak_reset = False  # whether the last reset_peak_rss() took


def reset_peak_rss():
    """Resets the kernel's peak-RSS mark (VmHWM) so a run does not inherit an earlier one's."""
    global _peak_reset
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        _peak_reset = True
    except OSError:
        _peak_reset = False


def peak_rss():
    """The process's peak resident set, and what it covers."""
    if _peak_reset:
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024, "process peak RSS over the timed units (VmHWM: " \
                                                            "Python, torch and the model included)"
        except (OSError, ValueError, IndexError):
            pass
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "process peak RSS over the worker's life (ru_maxrss: every run before this one included)")


def state_bytes(value):
    """The bytes of every tensor in a state dict, quantize_dynamic's packed Linear weights
    (a tuple of quantized tensors under _packed_params) included."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, dict):
        return sum(state_bytes(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(state_bytes(v) for v in value)
    return 0


def export_trace(profiler, path):
    if path.endswith(".gz"):  # tierscope's traces are gzipped JSON; torch writes plain JSON
        import gzip
        import shutil

        profiler.export_chrome_trace(path[:-3])
        with open(path[:-3], "rb") as src, gzip.open(path, "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(path[:-3])
    else:
        profiler.export_chrome_trace(path)


def timed_units(torch, req, unit, sync, module, dev, profiler, window, scope, state):
    """The warm-up, then the timed units: per-unit latencies (ms), the total (s, without the
    profiler's own start and stop) and the last unit's output."""
    latencies, out, toggles = [], None, 0.0
    with torch.inference_mode():
        for _ in range(req["warmup"]):
            unit()
        sync()
        reset_peak_rss()
        if module is not None and hasattr(module, "reset_peak_memory_stats"):
            module.reset_peak_memory_stats(dev)
        t0 = time.perf_counter()
        for i in range(req["iterations"]):
            if profiler is not None:
                # The window tierscope's own profiler keeps: it opens at a unit boundary once
                # `skip` units and `delay_s` seconds have passed, for `units` units or
                # `duration_s` seconds (0: no limit).
                t = time.perf_counter()
                if not state["recording"] and state["recorded"] == 0 and i >= window["skip"] and \
                        t - t0 - toggles >= window["delay_s"]:
                    profiler.start()
                    state["recording"], opened = True, time.perf_counter()
                elif state["recording"] and ((window["units"] and state["recorded"] >= window["units"]) or
                                             (window["duration_s"] and t - opened >= window["duration_s"])):
                    profiler.stop()
                    state["recording"] = False
                toggles += time.perf_counter() - t
            s = time.perf_counter()
            if state["recording"]:
                with torch.profiler.record_function(scope):
                    out = unit()
                state["recorded"] += 1
            else:
                out = unit()
            sync()
            latencies.append((time.perf_counter() - s) * 1e3)
        sync()
        total = time.perf_counter() - t0 - toggles
    return latencies, total, out


def run(req):
    torch, module = load_device(req["device"])
    global _default_threads
    if _default_threads is None:
        _default_threads = torch.get_num_threads()
    # Each request's own: a worker keeps no thread count from the request before.
    torch.set_num_threads(req["threads"] if req["threads"] > 0 else _default_threads)
    model = load_model(torch, req)
    B, S = req["batch_size"], req["seq_len"]
    with open(req["ids_path"], "rb") as f:
        raw = f.read()
    if len(raw) != 8 * B * S:
        raise WorkloadError(f"{req['ids_path']}: {len(raw)} bytes, not {B} x {S} int64 ids")
    ids = torch.frombuffer(bytearray(raw), dtype=torch.int64).reshape(B, S).to(req["device"])
    serial = req["serial"]
    scope = "serial_bert_forward" if serial else "batched_bert_forward"

    dev = torch.device(req["device"])

    def sync():
        if module is not None:
            module.synchronize(dev)

    # A tokenizer's batch always carries its attention mask: the model gets one (all ones:
    # the ids fill every position), as bench/peers' PyTorch peer and ONNX Runtime do.
    mask = torch.ones_like(ids)

    def unit():
        if serial:
            return torch.cat([model(input_ids=ids[i:i + 1], attention_mask=mask[i:i + 1]).last_hidden_state
                              for i in range(B)])
        return model(input_ids=ids, attention_mask=mask).last_hidden_state

    profiler, window = None, req.get("profile")
    if window is not None:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        if dev.type == "cuda":
            activities.append(ProfilerActivity.CUDA)
        elif dev.type == "xpu":
            activities.append(ProfilerActivity.XPU)
        profiler = profile(activities=activities, record_shapes=window["record_shapes"],
                           profile_memory=window["profile_memory"])
    time.sleep(req["pre_delay_s"])
    state = {"recording": False, "recorded": 0}
    try:
        latencies, total, out = timed_units(torch, req, unit, sync, module, dev, profiler, window, scope, state)
    finally:
        if state["recording"]:
            profiler.stop()  # a failed unit leaves no profiler running for the next request
    if profiler is not None and state["recorded"] > 0:
        export_trace(profiler, req["trace_path"])
    if module is not None and hasattr(module, "max_memory_allocated"):
        peak, source = int(module.max_memory_allocated(dev)), f"torch.{dev.type}.max_memory_allocated"
    else:
        # The CPU has no allocator statistics in torch: the process's peak resident set.
        peak, source = peak_rss()
    out = out.float().contiguous().cpu()
    with open(req["output_path"], "wb") as f:
        f.write(out.numpy().tobytes())
    recorded = state["recorded"]
    weights = state_bytes(model.state_dict())
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
        "device_name": module.get_device_name(dev) if module is not None and hasattr(module, "get_device_name")
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


def serve_one(path):
    """Runs the request at `path`: (None, False), or the one-line error and whether the
    worker must go (a failure inside torch may leave it unusable: a sticky CUDA error)."""
    try:
        with open(path) as f:
            req = json.load(f)
        resp = run(req)
    except WorkloadError as e:
        return str(e), False
    except ImportError as e:
        return (f"{sys.executable} cannot import {e.name}: install torch and transformers there, or name another "
                f"Python with --python / TIERSCOPE_PYTHON"), False
    except Exception as e:  # a failure inside torch: its traceback on stderr, then one line
        import traceback

        traceback.print_exc()
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return f"{type(e).__name__}: {first}", True
    with open(req["response_path"], "w") as f:
        json.dump(resp, f)
    return None, False


def main():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if sys.argv[1:] != ["--serve"]:
        error, _ = serve_one(sys.argv[1])
        if error is not None:
            print(f"torch workload: {error}", file=sys.stderr)
            return 2
        return 0
    replies = os.fdopen(3, "w")
    for line in sys.stdin:
        error, fatal = serve_one(line.strip())
        replies.write("ok\n" if error is None else ("fatal " if fatal else "error ") + " ".join(error.split()) + "\n")
        replies.flush()
        if fatal:
            return 2  # tierscope starts a fresh worker for the next run
    return 0


if __name__ == "__main__":
    sys.exit(main())
