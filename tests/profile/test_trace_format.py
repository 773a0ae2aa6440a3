"""Kineto Chrome trace written by `tierscope bench --profile --trace`.

The trace is read back by an independent parser (json/gzip) and by HolisticTraceAnalysis,
and checked against the exact event counts of the built-in 2-layer model, against itself
(launch <-> kernel <-> flow round trip) and against what tierscope printed.

Per forward of the built-in model: 12 kernel launches (embedding, layer_norm, then per layer
2 linears, 1 attention, 2 linear_add_layer_norm: the projections with their residual add and
LayerNorm), 12 aten::empty allocations. A batched work unit is
one forward; a serial work unit of batch B is B forwards, B aten::copy_ (one launch each) and
one more allocation for the output.
"""
from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from collections import Counter, defaultdict

# HTA rounds timestamps to whole microseconds unless told not to; our CPU "kernels" can be
# sub-microsecond. Must be set before hta is imported.
os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

import pytest

# HTA 0.5.0 under pandas 3 warns about every `inplace=` call it makes; that is HTA's business.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword:Warning")

# ----------------------------------------------------------------------------- expectations

FORWARD_OPS = {
    "aten::linear": 4,
    "aten::scaled_dot_product_attention": 2,
    "aten::embedding": 1,
    "aten::layer_norm": 1,
    "tierscope::linear_add_layer_norm": 4,
    "aten::empty": 12,
}
FORWARD_LAUNCHES = 12
FORWARD_ALLOCATIONS = 12

ANNOTATION = {"batch-fp32": "batched_bert_forward", "serial-fp32": "serial_bert_forward"}
MODES = list(ANNOTATION)

KERNEL_STREAM = 7
DEVICE_PID = 0
WORKER_TID0 = 100
TS_EPS = 0.0015  # us: ts and dur are each printed with 3 decimals

_SUMMARY_HEAD = re.compile(r"^Per work unit \((\S+), (\d+) units? recorded\):", re.M)
_SUMMARY_COUNTS = re.compile(r"launches (\d+), kernels (\d+), allocations (\d+)")


def load_trace(path) -> dict:
    """The trace document, read with json (gzip first for .json.gz), independently of tierscope."""
    if str(path).endswith(".json.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def parse_unit_summary(stdout: str) -> dict:
    """The per-work-unit block tierscope prints after the key_averages table."""
    head = _SUMMARY_HEAD.search(stdout)
    assert head, f"no 'Per work unit (...)' summary in stdout:\n{stdout[-3000:]}"
    counts = _SUMMARY_COUNTS.search(stdout, head.end())
    assert counts, "no 'launches N, kernels N, allocations N' line after the summary head"
    return {"annotation": head.group(1), "units": int(head.group(2)),
            "launches": int(counts.group(1)), "kernels": int(counts.group(2)),
            "allocations": int(counts.group(3))}


def expected_per_unit(mode: str, batch: int) -> dict:
    """Exact per-work-unit counts: {'ops': {name: n}, 'launches', 'kernels', 'allocations'}."""
    if mode == "batch-fp32":
        return {"ops": dict(FORWARD_OPS), "launches": FORWARD_LAUNCHES,
                "kernels": FORWARD_LAUNCHES, "allocations": FORWARD_ALLOCATIONS}
    ops = {name: n * batch for name, n in FORWARD_OPS.items()}
    ops["aten::copy_"] = batch
    launches = FORWARD_LAUNCHES * batch + batch
    return {"ops": ops, "launches": launches, "kernels": launches,
            "allocations": FORWARD_ALLOCATIONS * batch + 1}


# ----------------------------------------------------------------------------- helpers


def of_cat(events, cat, ph="X"):
    return [e for e in events if e.get("ph") == ph and e.get("cat") == cat]


def unit_annotations(events):
    return sorted(of_cat(events, "user_annotation"), key=lambda e: e["ts"])


def inside(e, unit) -> bool:
    return unit["ts"] <= e["ts"] <= unit["ts"] + unit["dur"]


def unit_of(e, units):
    hits = [u for u in units if inside(e, u)]
    return hits[0] if len(hits) == 1 else None


def is_allocation(e) -> bool:
    return e.get("ph") == "i" and e.get("cat") == "cpu_instant_event" and e["args"]["Bytes"] > 0


def counts_per_unit(events) -> list[dict]:
    """For each unit annotation (in time order), what lies within its [ts, ts+dur]."""
    units = unit_annotations(events)
    out = []
    for u in units:
        ops, launches, kernels, allocs = Counter(), 0, 0, 0
        for e in events:
            if e is u or "ts" not in e or not inside(e, u):
                continue
            cat = e.get("cat")
            if e["ph"] == "X" and cat == "cpu_op":
                ops[e["name"]] += 1
            elif e["ph"] == "X" and cat == "cuda_runtime":
                launches += 1
            elif e["ph"] == "X" and cat == "kernel":
                kernels += 1
            elif is_allocation(e):
                allocs += 1
        out.append({"ops": dict(ops), "launches": launches, "kernels": kernels,
                    "allocations": allocs})
    return out


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def has_3_decimals(v: float) -> bool:
    return abs(v * 1000 - round(v * 1000)) < 1e-6 * max(1.0, abs(v))


def check_event_fields(e, problems: list, host_pid: int, threads: int):
    """Appends a description of every field the event's kind needs but lacks or gets wrong."""
    def bad(msg):
        problems.append(f"{msg}: {e}")

    ph = e.get("ph")
    if ph not in ("M", "X", "i", "s", "f"):
        return bad(f"unknown ph {ph!r}")
    if not isinstance(e.get("name"), str) or not e["name"]:
        return bad("missing name")
    if not is_int(e.get("pid")) or not is_int(e.get("tid")):
        return bad("pid/tid not integers")
    if ph == "M":
        args = e.get("args", {})
        if e["name"] in ("process_name", "thread_name"):
            if not isinstance(args.get("name"), str) or not args["name"]:
                bad("metadata without args.name")
        elif e["name"] == "process_labels":
            if not isinstance(args.get("labels"), str):
                bad("process_labels without args.labels")
        else:
            bad("unknown metadata name")
        return
    if not is_num(e.get("ts")) or e["ts"] < 0 or not has_3_decimals(e["ts"]):
        return bad("ts missing, negative or not microseconds with 3 decimals")
    if ph in ("s", "f"):
        if e.get("cat") != "ac2g" or not is_int(e.get("id")):
            bad("flow without cat ac2g / integer id")
        if ph == "f" and e.get("bp") != "e":
            bad("flow end without bp 'e'")
        return
    args = e.get("args")
    if not isinstance(args, dict):
        return bad("no args object")
    if ph == "i":
        if e.get("cat") != "cpu_instant_event" or e["name"] != "[memory]" or e.get("s") != "t":
            return bad("instant event is not a [memory] cpu_instant_event with s 't'")
        for k in ("Bytes", "Total Allocated", "Total Reserved", "Addr", "Device Type", "Device Id"):
            if not is_int(args.get(k)):
                bad(f"[memory] without integer {k!r}")
        if is_int(args.get("Bytes")) and args["Bytes"] == 0:
            bad("[memory] with 0 Bytes")
        if args.get("Total Allocated", 0) < 0 or args.get("Total Reserved", 0) < args.get(
                "Total Allocated", 0):
            bad("[memory] totals inconsistent")
        if e["pid"] != host_pid:
            bad("[memory] not on the host process")
        return
    # ph == "X"
    if not is_num(e.get("dur")) or e["dur"] < 0 or not has_3_decimals(e["dur"]):
        return bad("dur missing, negative or not microseconds with 3 decimals")
    cat = e.get("cat")
    if cat == "user_annotation":
        if e["name"] not in ANNOTATION.values() or e["pid"] != host_pid:
            bad("unexpected user_annotation")
    elif cat == "cpu_op":
        if e["pid"] != host_pid:
            bad("cpu_op not on the host process")
        if not is_int(args.get("External id")) or args["External id"] <= 0:
            bad("cpu_op without positive integer 'External id'")
        dims = args.get("Input Dims")
        if not isinstance(dims, list) or not all(
                isinstance(d, list) and all(is_int(x) and x >= 0 for x in d) for d in dims):
            return bad("cpu_op without 'Input Dims' (list of int lists)")
        if e["name"] == "aten::empty":
            # tierscope records the requested shape as a concrete input (no tensor inputs).
            ci = args.get("Concrete Inputs")
            if not isinstance(ci, list) or len(ci) != len(dims) or not ci[0].startswith("["):
                bad("aten::empty without 'Concrete Inputs' matching 'Input Dims'")
        else:
            types = args.get("Input type")
            if not isinstance(types, list) or len(types) != len(dims) or not all(
                    isinstance(t, str) for t in types):
                bad("cpu_op without 'Input type' matching 'Input Dims'")
            if not dims or not dims[0]:
                bad("cpu_op with an empty first input shape")
    elif cat == "cuda_runtime":
        if e["name"] != "cudaLaunchKernel" or e["pid"] != host_pid:
            bad("cuda_runtime is not a host cudaLaunchKernel")
        for k in ("External id", "correlation"):
            if not is_int(args.get(k)) or args[k] <= 0:
                bad(f"cuda_runtime without positive integer {k!r}")
    elif cat == "kernel":
        if e["pid"] != DEVICE_PID or e["tid"] != KERNEL_STREAM:
            bad("kernel not on pid 0 / tid 7")
        for k in ("External id", "correlation", "flops", "bytes"):
            if not is_int(args.get(k)) or args[k] < 0:
                bad(f"kernel without non-negative integer {k!r}")
        if args.get("stream") != KERNEL_STREAM or args.get("device") != 0:
            bad("kernel stream/device args wrong")
        for k in ("grid", "block"):
            v = args.get(k)
            if not (isinstance(v, list) and len(v) == 3 and all(is_int(x) and x > 0 for x in v)):
                bad(f"kernel {k} is not 3 positive integers")
    elif cat == "kernel_task":
        if e["pid"] != DEVICE_PID or not WORKER_TID0 <= e["tid"] < WORKER_TID0 + threads:
            bad(f"kernel_task not on pid 0 / tid {WORKER_TID0}..{WORKER_TID0 + threads - 1}")
        # Not "correlation": HTA would pair the span with the launch instead of the kernel.
        if "correlation" in args or not is_int(args.get("kernel correlation")):
            bad("kernel_task must carry its kernel's id as an integer 'kernel correlation'")
        if not is_num(args.get("tasks")) or args["tasks"] < 1:
            bad("kernel_task without tasks >= 1")
        busy = args.get("busy ns")
        if not is_num(busy) or busy < 0 or busy > e["dur"] * 1000 + 2:
            bad("kernel_task busy ns missing, negative or above its span")
    else:
        bad(f"unknown X category {cat!r}")


# ----------------------------------------------------------------------------- 1. format/counts


@pytest.mark.parametrize("mode", MODES)
def test_trace_top_level_has_kineto_fields(runs, mode):
    t = runs[mode].trace
    for key in ("deviceProperties", "distributedInfo", "baseTimeNanoseconds", "traceEvents"):
        assert key in t, f"trace lacks top-level {key!r}"
    assert isinstance(t["deviceProperties"], list) and t["deviceProperties"]
    assert t["deviceProperties"][0]["id"] == 0 and isinstance(t["deviceProperties"][0]["name"], str)
    assert t["distributedInfo"]["rank"] == 0 and t["distributedInfo"]["world_size"] == 1
    assert is_int(t["baseTimeNanoseconds"]) and t["baseTimeNanoseconds"] > 0
    assert isinstance(t["traceEvents"], list) and t["traceEvents"]


@pytest.mark.parametrize("mode", MODES)
def test_every_event_has_the_fields_its_kind_needs(runs, mode):
    events = runs[mode].events
    names = [e for e in events if e.get("ph") == "M" and e.get("name") == "process_name"]
    host = [e for e in names if e["pid"] != DEVICE_PID]
    assert len(host) == 1, f"expected one host process_name, got {host}"
    host_pid = host[0]["pid"]
    problems = []
    for e in events:
        check_event_fields(e, problems, host_pid, runs[mode].result["threads"])
    assert not problems, f"{len(problems)} malformed events, first ones:\n" + "\n".join(problems[:10])
    # Every (pid, tid) a device event uses is named by metadata.
    named_pids = {e["pid"] for e in names}
    named_threads = {(e["pid"], e["tid"]) for e in events
                     if e.get("ph") == "M" and e.get("name") == "thread_name"}
    for e in events:
        if e.get("ph") != "M":
            assert e["pid"] in named_pids, f"pid {e['pid']} has no process_name: {e}"
        if e.get("ph") == "X" and e["pid"] == DEVICE_PID:
            assert (e["pid"], e["tid"]) in named_threads, f"device thread has no thread_name: {e}"


@pytest.mark.parametrize("mode", MODES)
def test_host_events_lie_inside_one_unit_annotation(runs, mode):
    events = runs[mode].events
    units = unit_annotations(events)
    assert len(units) == runs[mode].result["profiled_units"] == 3
    assert {u["name"] for u in units} == {ANNOTATION[mode]}
    for a, b in zip(units, units[1:]):
        assert a["ts"] + a["dur"] <= b["ts"], f"unit annotations overlap: {a} {b}"
    stray = [e for e in events if e.get("ph") == "X" and e.get("cat") in (
        "cpu_op", "cuda_runtime", "kernel", "kernel_task") and unit_of(e, units) is None]
    assert not stray, f"{len(stray)} events outside every unit, e.g. {stray[:3]}"


@pytest.mark.parametrize("mode", MODES)
def test_counts_per_work_unit_are_exact(runs, mode):
    per_unit = counts_per_unit(runs[mode].events)
    want = expected_per_unit(mode, runs[mode].result["batch_size"])
    assert len(per_unit) == 3
    for i, got in enumerate(per_unit):
        assert got == want, f"{mode} unit {i}: counted {got}, expected {want}"


def test_serial_unit_is_batch_size_times_the_batched_forward(batch_run, serial_run):
    BATCH = serial_run.result["batch_size"]
    assert batch_run.result["batch_size"] == BATCH
    b = counts_per_unit(batch_run.events)
    s = counts_per_unit(serial_run.events)
    for bu, su in zip(b, s):
        for op in ("aten::linear", "aten::scaled_dot_product_attention"):
            assert su["ops"][op] == BATCH * bu["ops"][op], (op, su["ops"], bu["ops"])
        # launch-bound: serial issues ~B x the launches for the same samples
        assert su["launches"] >= BATCH * bu["launches"], (su["launches"], bu["launches"])
        assert su["launches"] == BATCH * (bu["launches"] + 1)


@pytest.mark.parametrize("mode", MODES)
def test_memory_total_allocated_tracks_bytes(runs, mode):
    mem = [e for e in runs[mode].events if e.get("cat") == "cpu_instant_event"]
    assert mem
    assert [e["ts"] for e in mem] == sorted(e["ts"] for e in mem)
    for prev, cur in zip(mem, mem[1:]):
        assert cur["args"]["Total Allocated"] == prev["args"]["Total Allocated"] + cur["args"]["Bytes"], (
            prev, cur)


# ----------------------------------------------------------------------------- 2. round trip


@pytest.mark.parametrize("mode", MODES)
def test_every_launch_has_one_kernel_and_one_flow_pair(runs, mode):
    events = runs[mode].events
    launches = of_cat(events, "cuda_runtime")
    kernels = defaultdict(list)
    for k in of_cat(events, "kernel"):
        kernels[k["args"]["correlation"]].append(k)
    flows = {"s": defaultdict(list), "f": defaultdict(list)}
    for e in events:
        if e.get("ph") in flows and e.get("cat") == "ac2g":
            flows[e["ph"]][e["id"]].append(e)
    ops_by_ext = {e["args"]["External id"]: e for e in of_cat(events, "cpu_op")}

    corrs = [l["args"]["correlation"] for l in launches]
    assert len(corrs) == len(set(corrs)), "correlation ids of launches are not unique"
    assert set(kernels) == set(corrs), (
        f"kernels without launch: {sorted(set(kernels) - set(corrs))[:10]}, "
        f"launches without kernel: {sorted(set(corrs) - set(kernels))[:10]}")
    assert set(flows["s"]) == set(flows["f"]) == set(corrs), "flow ids differ from correlations"

    for l in launches:
        c, ext = l["args"]["correlation"], l["args"]["External id"]
        assert len(kernels[c]) == 1, f"correlation {c}: {len(kernels[c])} kernels"
        k = kernels[c][0]
        assert k["args"]["External id"] == ext, f"correlation {c}: External id {ext} vs {k}"
        assert len(flows["s"][c]) == 1 and len(flows["f"][c]) == 1, f"correlation {c} flows"
        s, f = flows["s"][c][0], flows["f"][c][0]
        assert (s["pid"], s["tid"], s["ts"]) == (l["pid"], l["tid"], l["ts"]), (s, l)
        assert (f["pid"], f["tid"], f["ts"]) == (k["pid"], k["tid"], k["ts"]), (f, k)
        assert k["dur"] >= 0
        assert k["ts"] + TS_EPS >= l["ts"], f"kernel starts before its launch: {l} {k}"
        # The launch comes from inside the operator that owns its External id.
        op = ops_by_ext.get(ext)
        assert op is not None, f"launch External id {ext} names no cpu_op"
        assert op["ts"] <= l["ts"] and l["ts"] + l["dur"] <= op["ts"] + op["dur"] + TS_EPS, (op, l)


@pytest.mark.parametrize("mode", MODES)
def test_kernels_lie_within_their_unit(runs, mode):
    events = runs[mode].events
    units = unit_annotations(events)
    launch_by_corr = {l["args"]["correlation"]: l for l in of_cat(events, "cuda_runtime")}
    for k in of_cat(events, "kernel"):
        u = unit_of(launch_by_corr[k["args"]["correlation"]], units)
        assert u is not None
        assert u["ts"] <= k["ts"] and k["ts"] + k["dur"] <= u["ts"] + u["dur"] + TS_EPS, (
            f"kernel outside its unit [{u['ts']}, {u['ts'] + u['dur']}]: {k}")


@pytest.mark.parametrize("mode", MODES)
def test_kernel_task_spans_lie_within_their_kernel(runs, mode):
    events = runs[mode].events
    kernel_by_corr = {k["args"]["correlation"]: k for k in of_cat(events, "kernel")}
    seen = Counter()
    for t in of_cat(events, "kernel_task"):
        k = kernel_by_corr.get(t["args"]["kernel correlation"])
        assert k is not None, f"kernel_task names no kernel: {t}"
        assert t["name"] == k["name"]
        assert k["ts"] - TS_EPS <= t["ts"] and t["ts"] + t["dur"] <= k["ts"] + k["dur"] + TS_EPS, (t, k)
        seen[(t["args"]["kernel correlation"], t["tid"])] += 1
    assert seen and max(seen.values()) == 1, "more than one span per worker per kernel"
    assert {c for c, _ in seen} == set(kernel_by_corr), "a kernel has no worker span"


@pytest.mark.parametrize("mode", MODES)
def test_printed_summary_agrees_with_the_file(runs, mode):
    run = runs[mode]
    summary = parse_unit_summary(run.stdout)
    units = unit_annotations(run.events)
    per_unit = counts_per_unit(run.events)
    assert summary["annotation"] == ANNOTATION[mode]
    assert summary["units"] == len(units) == run.result["profiled_units"]
    assert run.result["profiled"] is True
    for key in ("launches", "kernels", "allocations"):
        from_file = {u[key] for u in per_unit}
        assert from_file == {summary[key]}, (
            f"{key}: tierscope printed {summary[key]} per unit, the file has {sorted(from_file)}")
    assert run.result["trace"] == str(run.trace_path)


# ----------------------------------------------------------------------------- 3. HTA


def _hta_trace_analysis():
    return pytest.importorskip("hta.trace_analysis").TraceAnalysis


def _hta_load(trace_path, tmp_path):
    """TraceAnalysis on a directory that holds only this trace."""
    TraceAnalysis = _hta_trace_analysis()
    d = tmp_path / "hta_trace"
    d.mkdir()
    shutil.copy(trace_path, d / trace_path.name)
    return TraceAnalysis(trace_dir=str(d))


def _kernel_stats(events):
    per = defaultdict(list)
    for k in of_cat(events, "kernel"):
        per[k["name"]].append(k["dur"])
    return per


def _check_kernel_breakdown(analyzer, events):
    _, kernels = analyzer.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0,
                                                   num_kernels=10_000)
    want = _kernel_stats(events)
    got = {row["name"]: row for _, row in kernels.iterrows()}
    assert set(got) == set(want), f"HTA kernels {sorted(got)} vs file {sorted(want)}"
    for name, durs in want.items():
        total = sum(durs)
        tol = max(1.0 * len(durs), 0.01 * total)
        assert abs(got[name]["sum (us)"] - total) <= tol, (
            f"{name}: HTA sum {got[name]['sum (us)']} us, file {total:.3f} us over {len(durs)}")
        if got[name]["mean (us)"] > 0:
            assert round(got[name]["sum (us)"] / got[name]["mean (us)"]) == len(durs), name


@pytest.mark.parametrize("mode", MODES)
def test_hta_kernel_breakdown_matches_the_file(runs, mode, tmp_path):
    analyzer = _hta_load(runs[mode].trace_path, tmp_path)
    _check_kernel_breakdown(analyzer, runs[mode].events)


def test_hta_loads_a_gzip_trace(bench, tmp_path):
    _hta_trace_analysis()
    run = bench.run("serial-fp32", suffix=".json.gz")
    analyzer = _hta_load(run.trace_path, tmp_path)
    _check_kernel_breakdown(analyzer, run.events)


def test_hta_links_each_kernel_to_its_launch(serial_run, tmp_path):
    """HTA's CPU<->GPU correlation must pair each kernel with its cudaLaunchKernel, so that
    get_cuda_kernel_launch_stats has one row per launch."""
    analyzer = _hta_load(serial_run.trace_path, tmp_path)
    n_launches = len(of_cat(serial_run.events, "cuda_runtime"))
    df = analyzer.t.get_trace(0)
    sym = analyzer.t.symbol_table.get_sym_table()
    cat = df["cat"].map(lambda i: sym[i])
    kernels = df[cat == "kernel"]
    linked = cat.loc[kernels["index_correlation"]].value_counts().to_dict()
    assert linked == {"cuda_runtime": len(kernels)}, (
        f"HTA links the {len(kernels)} kernels to {linked} (expected cuda_runtime only)")
    stats = analyzer.get_cuda_kernel_launch_stats(visualize=False)
    rows = sum(len(v) for v in stats.values())
    assert rows == n_launches, f"launch stats: {rows} rows for {n_launches} launches"


# ----------------------------------------------------------------------------- 5. window


def test_profile_window_records_only_the_requested_units(bench):
    run = bench.run("batch-fp32", iterations=5,
                    extra=("--profile-skip", 2, "--profile-units", 2))
    units = unit_annotations(run.events)
    assert len(units) == 2, f"{len(units)} unit annotations in the file"
    assert run.result["profiled_units"] == 2
    assert parse_unit_summary(run.stdout)["units"] == 2
    for got in counts_per_unit(run.events):
        assert got == expected_per_unit("batch-fp32", run.result["batch_size"])
    stray = [e for e in run.events if e.get("ph") == "X" and e.get("cat") != "user_annotation"
             and unit_of(e, units) is None]
    assert not stray, f"events recorded outside the window: {stray[:3]}"


def test_profile_window_that_never_opens_still_succeeds(bench):
    run = bench.run("batch-fp32", iterations=5, extra=("--profile-skip", 10))
    assert "window never opened" in run.stdout + run.proc.stderr
    assert run.result["profiled_units"] == 0
    assert not [e for e in run.events if e.get("ph") != "M"], "events recorded with no window"
    assert load_trace(run.trace_path)["traceEvents"] == run.events
