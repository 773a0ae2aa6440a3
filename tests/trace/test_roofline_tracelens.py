"""The per-op roofline (`stats --report op_roofline,op_sum`) against AMD TraceLens's own
reports for the field traces (../shared/corpus/reference/tracelens, its SOURCES.md):

- leaf-op kernel time per operator (TraceLens's ops_summary `total_direct_kernel_time`,
  tierscope's op_sum "Self device") within 1% of the trace's total;
- FLOPs and bytes per op and distinct shape equal to TraceLens's (GFLOPS, Data Moved in
  MiB) wherever both model the op, with the differences README ("Roofline") names: a
  reduction over given dims writes its real output (TraceLens writes one element); a
  `bool` tensor is one byte (TraceLens has no size for it);
- the kernel time under each modelled op and shape equal to the TraceLens perf sheet's
  (its subtree kernel time) within 1% of the trace's total;
- collectives (nccl_sum): count and time per collective and size equal TraceLens's
  coll_analysis, bus bandwidth by nccl-tests' formulas;
- every GEMM and attention FLOP count equal to a hand count from the trace's Input Dims
  (an independent count here, reading the Kineto JSON)."""
from __future__ import annotations

import ast
import csv
import gzip
import json
import math
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FIELD = REPO_ROOT.parent / "shared" / "corpus" / "traces" / "field"
REFERENCE = REPO_ROOT.parent / "shared" / "corpus" / "reference" / "tracelens"
TRACES = ["b200__eager_trace", "h100__gaunernst_bert-small-uncased__1016001",
          "hta__nccl_parser_config__nccl_data", "inference__sglang_decode__sglang_Qwen3-8B_decode",
          "inference__vllm_decode_full__graph_execution", "torch_compile_triton__trace"]
SHEETS = ["GEMM", "SDPA_fwd", "Normalization", "BinaryElementwise", "UnaryElementwise", "Reduce_fwd"]
MIB = 1024 * 1024
# Modelled ops that wrap a modelled child which launches their kernels: the child's row.
WRAPPERS = {"aten::layer_norm": "aten::native_layer_norm", "vllm::rocm_unquantized_gemm": "aten::mm",
            # SDPA's flash path: the kernels' op, in [B, N, H, d] rather than [B, H, N, d].
            "aten::_scaled_dot_product_flash_attention": "aten::_flash_attention_forward"}
# TraceLens's modelled rows with shapes that tierscope compares a trace (the NCCL trace's
# are reductions recorded without shapes).
MIN_COMPARED = {"b200__eager_trace": 17, "h100__gaunernst_bert-small-uncased__1016001": 8,
                "hta__nccl_parser_config__nccl_data": 0, "inference__sglang_decode__sglang_Qwen3-8B_decode": 5,
                "inference__vllm_decode_full__graph_execution": 8, "torch_compile_triton__trace": 4}


def shapes_text(dims) -> str:
    return "x".join("[" + ",".join(str(v) for v in d) + "]" for d in dims)


def reports(tierscope_bin, trace: Path) -> dict:
    run = subprocess.run([str(tierscope_bin), "stats", str(trace), "--report", "op_roofline,op_sum", "--format",
                          "json"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return {t["name"]: t["rows"] for t in json.loads(run.stdout)["reports"]}


def reports_of(tierscope_bin, trace: Path, name: str) -> list:
    run = subprocess.run([str(tierscope_bin), "stats", str(trace), "--report", name, "--format", "json"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)["reports"][0]["rows"]


def data(name: str) -> Path:
    path = REFERENCE / name
    if not path.exists():
        pytest.skip(f"corpus data missing: {path}")
    return path


@pytest.mark.parametrize("name", TRACES)
def test_leaf_op_kernel_time_agrees_with_tracelens(tierscope_bin, name):
    ours = reports(tierscope_bin, data(f"../../traces/field/{name}.json.gz"))["op_sum"]
    theirs = list(csv.DictReader(open(data(name) / "ops_summary.csv")))
    total = sum(float(r["total_direct_kernel_time_sum"]) for r in theirs) * 1000  # ns
    assert total > 0
    by_name = defaultdict(float)
    for r in ours:
        by_name[r["Name"]] += float(r["Self device (ns)"])
    for r in theirs:
        want = float(r["total_direct_kernel_time_sum"]) * 1000
        assert abs(by_name.get(r["name"], 0.0) - want) <= 0.01 * total, (r["name"], by_name.get(r["name"]), want)
    # and nothing of ours that TraceLens does not have, but the collectives: TraceLens leaves
    # them to its coll_analysis, tierscope keeps them under record_param_comms / nccl:*.
    names = {r["name"] for r in theirs}
    extra = sum(ns for n, ns in by_name.items()
                if n not in names and n != "record_param_comms" and not n.startswith("nccl:"))
    assert extra <= 0.01 * total, extra


def expected_bytes_differ(sheet: str, row: dict) -> bool:
    """Where README says our formula differs from TraceLens's on purpose."""
    types = ast.literal_eval(row["Input type_first"] or "[]")
    concrete = ast.literal_eval(row["Concrete Inputs_first"] or "[]")
    if "bool" in types:
        return True  # TraceLens has no size for bool: its bytes are empty
    if sheet == "Reduce_fwd" and row["name"] != "aten::cumsum" and len(concrete) > 1 and concrete[1] not in ("", "None"):
        return True  # a reduction over given dims: TraceLens writes one element
    return False


@pytest.mark.parametrize("name", TRACES)
def test_flops_bytes_and_time_per_shape_agree_with_tracelens(tierscope_bin, name):
    folder = data(name)
    ours = reports(tierscope_bin, data(f"../../traces/field/{name}.json.gz"))["op_roofline"]
    total_ns = sum(float(r["total_direct_kernel_time_sum"]) for r in csv.DictReader(open(folder / "ops_summary.csv")))
    total_ns *= 1000
    by_key = {(r["Name"], r["Input Dims"], r["Input Types"]): r for r in ours}
    # TraceLens splits a shape by its strides too: its rows are summed per name, dims and types.
    sheets = {}
    for sheet in SHEETS:
        path = folder / f"{sheet}.csv"
        if not path.exists():
            continue
        for row in csv.DictReader(open(path)):
            if not row["Input Dims_first"]:
                continue  # an op recorded without its shapes: no model on either side
            types = ",".join(t or "" for t in ast.literal_eval(row["Input type_first"] or "[]"))
            key = (row["name"], shapes_text(ast.literal_eval(row["Input Dims_first"] or "[]")), types)
            if key in sheets:
                sheets[key][1]["Kernel Time (µs)_sum"] = str(float(sheets[key][1]["Kernel Time (µs)_sum"]) +
                                                            float(row["Kernel Time (µs)_sum"]))
                sheets[key][1]["name_count"] = str(int(sheets[key][1]["name_count"]) + int(row["name_count"]))
            else:
                sheets[key] = (sheet, dict(row))
    compared = 0
    for key, (sheet, row) in sheets.items():
        if float(row["Kernel Time (µs)_sum"]) == 0:
            assert key not in by_key, key  # launched nothing: not a row of ours
            continue
        if key not in by_key:
            # TraceLens lists nested modelled ops each with the whole subtree's time
            # (aten::layer_norm over aten::native_layer_norm); tierscope counts the time
            # once, under the op nearest the kernels: only these wrappers may be missing,
            # and their child's row, of the same input, is here.
            assert key[0] in WRAPPERS, key
            # The child's row has the wrapper's FLOPs (its own layout of the same input).
            want_gflop = float(row["GFLOPS_first"] or 0)
            assert any(k[0] == WRAPPERS[key[0]] and math.isclose(r["GFLOP"], want_gflop, rel_tol=1e-9, abs_tol=1e-12)
                       for k, r in by_key.items() if r["GFLOP"] != "-"), key
            compared += 1
            continue
        r = by_key[key]
        compared += 1
        want_gflop = float(row["GFLOPS_first"])
        assert math.isclose(r["GFLOP"], want_gflop, rel_tol=1e-9, abs_tol=1e-12), (key, r["GFLOP"], want_gflop)
        if row["Data Moved (MB)_first"] and not expected_bytes_differ(sheet, row):
            want_bytes = float(row["Data Moved (MB)_first"]) * MIB
            assert math.isclose(r["MB"] * 1e6, want_bytes, rel_tol=1e-9), (key, r["MB"] * 1e6, want_bytes)
        want_ns = float(row["Kernel Time (µs)_sum"]) * 1000
        assert abs(r["Kernel (ns)"] - want_ns) <= 0.01 * total_ns, (key, r["Kernel (ns)"], want_ns)
        # Calls differ by design: TraceLens counts every call with these arguments,
        # tierscope the calls that launched device work (the time's denominator).
        assert 0 < r["Calls"] <= int(row["name_count"]), key
    assert compared >= MIN_COMPARED[name], f"{name}: only {compared} rows compared"


def hand_counts(trace: Path) -> dict:
    """GEMM and attention FLOPs of every op in the trace, counted from its Input Dims."""
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    launched = {e["args"].get("External id") for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    counts = {}
    for e in events:
        if e.get("cat") != "cpu_op":
            continue
        name, args = e.get("name"), e.get("args", {})
        dims = args.get("Input Dims")
        if not dims:
            continue
        flops = None
        if name == "aten::mm":
            (m, k), (_, n) = dims[0], dims[1]
            flops = 2 * m * n * k
        elif name == "aten::addmm":
            (m, k), (_, n) = dims[1], dims[2]
            flops = 2 * m * n * k + m * n
        elif name == "aten::bmm":
            (b, m, k), (_, _, n) = dims[0], dims[1]
            flops = 2 * b * m * n * k
        elif name == "aten::_scaled_dot_product_flash_attention":
            b, h, nq, d = dims[0]
            nkv, dv = dims[1][2], dims[2][3]
            causal = args.get("Concrete Inputs", [""] * 5)[4] == "True"
            flops = 2 * b * h * nq * nkv * (d + dv) // (2 if causal else 1)
        if flops is not None:
            key = (name, shapes_text(dims))
            # Whether this op (any call of it) launched device work itself.
            counts[key] = (flops, counts.get(key, (0, False))[1] or args.get("External id") in launched)
    return counts


@pytest.mark.parametrize("name", ["h100__gaunernst_bert-small-uncased__1016001", "torch_compile_triton__trace",
                                  "b200__eager_trace"])
def test_gemm_and_attention_flops_equal_a_hand_count(tierscope_bin, name):
    trace = data(f"../../traces/field/{name}.json.gz")
    hand = hand_counts(trace)
    ours = {(r["Name"], r["Input Dims"]): r for r in reports(tierscope_bin, trace)["op_roofline"]}
    matched = 0
    for key, (flops, launched) in hand.items():
        # Every GEMM that launched its kernels has its row; attention's row may come from its
        # child's kernels (flash), so it is compared where it is there.
        assert key in ours or not launched or "attention" in key[0], key
        if key in ours:
            matched += 1
            assert ours[key]["GFLOP"] * 1e9 == pytest.approx(flops, rel=1e-12), key
    assert matched >= 3, (name, matched, sorted(hand))


@pytest.mark.parametrize("name", ["hta__nccl_parser_config__nccl_data", "b200__eager_trace"])
def test_collective_bandwidth_agrees_with_tracelens_and_nccl_tests(tierscope_bin, name):
    # Count and time per collective and size equal TraceLens's coll_analysis; the bus
    # bandwidth is nccl-tests' formula, counted again here from the kernels' own args.
    trace = data(f"../../traces/field/{name}.json.gz")
    ours = reports_of(tierscope_bin, trace, "nccl_sum")
    theirs = list(csv.DictReader(open(data(name) / "coll_analysis.csv")))
    by_size = defaultdict(lambda: [0, 0.0])
    for r in ours:
        es = {"Float": 4, "Long": 8, "BFloat16": 2, "Half": 2}[r["Dtype"]]
        by_size[(r["Collective"], round(r["Size (MB)"] * 1e6 / es))][0] += r["Count"]
        by_size[(r["Collective"], round(r["Size (MB)"] * 1e6 / es))][1] += r["Total (ns)"]
    for row in theirs:
        nelems = int(row["Out msg nelems"] if "allgather" in row["Collective name"] else row["In msg nelems"])
        count, ns = by_size[(row["Collective name"], nelems)]
        assert count == int(row["operation_count"]), row
        assert ns == pytest.approx(float(row["dur_sum"]) * 1000, rel=1e-6), row
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    factor = {"allreduce": lambda n: 2 * (n - 1) / n, "broadcast": lambda n: 1.0,
              "_allgather_base": lambda n: (n - 1) / n}
    for r in ours:
        kernels = [e for e in events if e.get("cat") == "kernel" and e["args"].get("Collective name") == r["Collective"]
                   and e["args"].get("dtype") == r["Dtype"]]
        es = {"Float": 4, "Long": 8, "BFloat16": 2}[r["Dtype"]]
        same = [e for e in kernels if abs(max(e["args"]["In msg nelems"], e["args"]["Out msg nelems"]
                                              if "allgather" in r["Collective"] else 0) * es - r["Size (MB)"] * 1e6) < 1]
        assert len(same) == r["Count"]
        algbw = sum(r["Size (MB)"] * 1e6 for _ in same) / sum(e["dur"] * 1000 for e in same)
        n = same[0]["args"]["Group size"]
        assert r["Busbw (GB/s)"] == pytest.approx(algbw * factor[r["Collective"]](n), rel=1e-6)


# Categories both tools name alike; tierscope's softmax / embedding and the categories of a
# graph replay's kernels (named from the kernels, where TraceLens has the launch as "other")
# have no TraceLens counterpart.
SAME_CATEGORIES = ["GEMM", "CONV_fwd", "CONV_bwd", "NORM_fwd", "NORM_bwd", "elementwise", "reduce",
                   "multi_tensor_apply"]


@pytest.mark.parametrize("name", TRACES)
def test_op_categories_agree_with_tracelens(tierscope_bin, name):
    # An op's category is its name's family even with no shapes recorded: the NCCL trace's
    # convolutions and batch norms (no Input Dims) are CONV_* and NORM_*, not the GEMM or
    # "other" their top kernels would say, and ATen's own elementwise, reduction and
    # multi-tensor kernels name the ops no family covers, as TraceLens names them.
    folder = data(name)
    ours = defaultdict(float)
    for r in reports(tierscope_bin, data(f"../../traces/field/{name}.json.gz"))["op_roofline"]:
        if r["Name"] not in ("cudaGraphLaunch", "hipGraphLaunch"):
            ours[r["Category"]] += r["Kernel (ns)"]
    theirs = {r["op category"]: float(r["total_direct_kernel_time_ms"]) * 1e6
              for r in csv.DictReader(open(folder / "ops_summary_by_category.csv"))}
    total = sum(theirs.values())
    assert total > 0
    compared = 0
    for category in SAME_CATEGORIES:
        if category in theirs:
            compared += 1
            assert abs(ours[category] - theirs[category]) <= 0.001 * total, (category, ours[category], theirs[category])
    assert compared >= {"hta__nccl_parser_config__nccl_data": 8, "h100__gaunernst_bert-small-uncased__1016001": 4,
                        "b200__eager_trace": 2}.get(name, 1), (name, sorted(theirs))


def device_work(trace: Path) -> dict:
    """Durations (ns) of the trace's memsets and of its symmetric-memory (multimem) all-reduce kernels,
    counted here from the Kineto JSON."""
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    out = {"memset": 0.0, "symmetric_memory": 0.0}
    for e in events:
        if e.get("ph") != "X":
            continue
        if e.get("cat") == "gpu_memset":
            out["memset"] += e["dur"] * 1000
        elif e.get("cat") == "kernel" and "multimem_all_reduce" in e.get("name", ""):
            out["symmetric_memory"] += e["dur"] * 1000
    return out


@pytest.mark.parametrize("name", TRACES + ["mi210__gpu_only_trace__gpu_only_trace"])
def test_gpu_timeline_agrees_with_tracelens(tierscope_bin, name):
    # Busy, idle and computation time equal TraceLens's gpu_timeline to the microsecond,
    # but for the two differences README names: a memset is memory to tierscope (and HTA),
    # computation to TraceLens; c10d's symmetric-memory all-reduce kernels are communication
    # to tierscope, computation to TraceLens (it takes only nccl* kernels as communication).
    trace = data(f"../../traces/field/{name}.json.gz")
    theirs = {r["type"]: float(r["time ms"]) * 1e6 for r in csv.DictReader(open(data(name) / "gpu_timeline.csv"))}
    ours = reports_of(tierscope_bin, trace, "temporal_breakdown")
    assert len(ours) == 1
    row = ours[0]
    assert abs(row["Span (ns)"] - theirs["total_time"]) <= 1000
    assert abs(row["Idle (ns)"] - theirs["idle_time"]) <= 1000
    assert abs(row["Span (ns)"] - row["Idle (ns)"] - theirs["busy_time"]) <= 1000
    moved = device_work(trace)
    want = theirs["computation_time"] - moved["memset"] - moved["symmetric_memory"]
    assert abs(row["Compute (ns)"] - want) <= 1000, (row["Compute (ns)"], theirs["computation_time"], moved)
