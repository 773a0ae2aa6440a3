"""The analyzer's reports against counts computed independently with Python's json:
on every real corpus trace, on the corpus diff pair, on traces of tierscope's own
engine, and on fresh traces recorded with PyTorch's profiler running the study's serial
and batched BERT on the CPU (checked against the profiler's own key_averages())."""
from __future__ import annotations

import collections
import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "traces"
BIN = Path(os.environ.get("TIERSCOPE_BIN", REPO / "build" / "release" / "tierscope"))
CORPUS_FILES = [
    "benchmark_result_2869224_1695835535_trace.json.gz",
    "mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "control.json.gz",
    "test.json.gz",
    "df_index_resolver.json.gz",
    "worker0.1623143089861.pt.trace.json.gz",
]
KERNEL_CATS = {"kernel"}
OP_CATS = {"cpu_op", "operator"}


def run(*args, check=True):
    assert BIN.exists(), f"tierscope binary missing: {BIN}"
    p = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=600)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def load_events(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        d = json.load(f)
    return d["traceEvents"] if isinstance(d, dict) else d


def report(doc, name):
    for r in doc["reports"]:
        if r["name"] == name:
            return r
    raise AssertionError(f"report {name} missing: {[r['name'] for r in doc['reports']]}")


def python_kernels(events):
    """Kernel count and total ns per name, as a reader of the raw file computes them."""
    out = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        if isinstance(e, dict) and str(e.get("cat", "")).lower() in KERNEL_CATS and e.get("ph") == "X":
            out[e["name"]][0] += 1
            out[e["name"]][1] += float(e["dur"]) * 1000.0
    return out


def python_ops(events):
    return collections.Counter(
        e["name"] for e in events
        if isinstance(e, dict) and str(e.get("cat", "")).lower() in OP_CATS and e.get("ph") == "X")


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_kernel_and_operator_reports_match_python_on_corpus(name):
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"corpus trace {path} absent")
    doc = json.loads(run("stats", str(path), "--report", "cuda_gpu_kern_sum,op_sum", "--format", "json").stdout)
    events = load_events(path)
    want = python_kernels(events)
    kern = {r["Name"]: r for r in report(doc, doc["reports"][0]["name"])["rows"]}
    assert set(kern) == set(want)
    for k, (n, total) in want.items():
        assert kern[k]["Instances"] == n, k
        assert abs(kern[k]["Total Time (ns)"] - total) <= max(1.0 * n, 1e-6 * total), k
    ops = collections.Counter()
    for r in report(doc, "op_sum")["rows"]:
        ops[r["Name"]] += r["Calls"]
    for op, n in python_ops(events).items():
        assert ops[op] == n, op


def per_unit_ops(events):
    steps = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
             if isinstance(e, dict) and str(e.get("name", "")).startswith("ProfilerStep#")
             and e.get("cat") == "user_annotation"]
    counts = collections.Counter()
    for e in events:
        if isinstance(e, dict) and e.get("cat") == "cpu_op":
            t = float(e["ts"])
            if any(b <= t <= end for b, end in steps):
                counts[e["name"]] += 1
    return {k: v / len(steps) for k, v in counts.items()}, len(steps)


def test_diff_pair_gives_the_expected_operator_deltas():
    base, new = CORPUS / "control.json.gz", CORPUS / "test.json.gz"
    if not base.exists() or not new.exists():
        pytest.skip("corpus diff pair absent")
    doc = json.loads(run("diff", str(base), str(new), "--format", "json").stdout)
    assert doc["per_unit"] is True
    rows = {r["Operator"]: r for r in report(doc, "diff_operators")["rows"]}
    b_ops, b_units = per_unit_ops(load_events(base))
    n_ops, n_units = per_unit_ops(load_events(new))
    assert b_units > 0 and n_units > 0
    for op in ("aten::copy_", "aten::linear"):
        assert rows[op]["Base"] == pytest.approx(b_ops.get(op, 0)), op
        assert rows[op]["New"] == pytest.approx(n_ops.get(op, 0)), op
    # The direction the corpus notes describe: many more copies, fewer linears.
    assert rows["aten::copy_"]["New"] > rows["aten::copy_"]["Base"]
    assert rows["aten::linear"]["New"] < rows["aten::linear"]["Base"]


def test_analyze_survives_every_corpus_trace_in_every_format(tmp_path):
    present = [CORPUS / name for name in CORPUS_FILES[:3] if (CORPUS / name).exists()]
    if not present:
        pytest.skip(f"no corpus traces at {CORPUS}")
    for path in present:
        for fmt in ("text", "json", "csv"):
            p = run("analyze", str(path), "--format", fmt)
            assert p.stdout
            if fmt == "json":
                doc = json.loads(p.stdout)
                assert "findings" in doc and doc["reports"]


def test_truncated_and_garbage_traces_fail_cleanly(tmp_path):
    src = CORPUS / "benchmark_result_2869224_1695835535_trace.json.gz"
    if not src.exists():
        pytest.skip("corpus absent")
    raw = gzip.open(src, "rb").read()
    (tmp_path / "cut.json").write_bytes(raw[: len(raw) // 2])
    (tmp_path / "garbage.json").write_bytes(b"\x00\x01 not json at all")
    (tmp_path / "cut.json.gz").write_bytes(src.read_bytes()[:5000])
    for f in ("cut.json", "garbage.json", "cut.json.gz"):
        p = run("analyze", str(tmp_path / f), check=False)
        assert p.returncode != 0
        assert str(tmp_path / f) in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    p = run("analyze", str(tmp_path / "missing.json"), check=False)
    assert p.returncode == 2


@pytest.fixture(scope="module")
def engine_traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("engine")
    env = dict(os.environ, TIERSCOPE_CACHE_DIR=str(d / "cache"))
    out = {}
    for mode in ("serial-fp32", "batch-fp32"):
        path = d / f"{mode}.json.gz"
        subprocess.run([str(BIN), "bench", "--mode", mode, "--batch-size", "8", "--seq-len", "16",
                        "--warmup", "1", "--iterations", "2", "--threads", "2", "--profile",
                        "--trace", str(path)], check=True, capture_output=True, env=env, timeout=300)
        out[mode] = path
    return out


def test_engine_trace_goes_through_the_same_reports(engine_traces):
    doc = json.loads(run("analyze", str(engine_traces["batch-fp32"]), "--format", "json").stdout)
    assert doc["unit"] == "batched_bert_forward" and doc["units"] == 2
    units = {r["Event"]: r["Per unit"] for r in report(doc, "units")["rows"]}
    # 12 launches a forward: the projections run their residual add and LayerNorm.
    assert units["launches"] == 12 and units["kernels"] == 12 and units["aten::linear"] == 4
    assert units["tierscope::linear_add_layer_norm"] == 4
    kern = report(doc, "cuda_gpu_kern_sum")["rows"]
    assert sum(r["Instances"] for r in kern) == 24


def test_engine_serial_vs_batched_diff_shows_the_study_pattern(engine_traces):
    doc = json.loads(run("diff", str(engine_traces["serial-fp32"]), str(engine_traces["batch-fp32"]),
                         "--format", "json").stdout)
    assert doc["per_unit"] is True
    head = doc["headline"]
    assert "launches 104 -> 12 per work unit" in head
    assert "aten::linear 32 -> 4" in head
    serial = json.loads(run("analyze", str(engine_traces["serial-fp32"]), "--format", "json").stdout)
    rules = {f["rule"] for f in serial["findings"]}
    # Every finding carries its numbers.
    for f in serial["findings"]:
        assert f["evidence"] and f["threshold"] and f["next_step"]
    assert rules  # the serial run always trips at least one rule on this engine


@pytest.fixture(scope="module")
def torch_traces(tmp_path_factory):
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from torch.profiler import ProfilerActivity, profile, record_function
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = BertModel(BertConfig(vocab_size=30522, hidden_size=128, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=512)).eval()
    ids = torch.randint(100, 30522, (8, 16), generator=torch.Generator().manual_seed(2026))
    d = tmp_path_factory.mktemp("torch")
    out = {}
    with torch.inference_mode():
        for mode in ("serial", "batched"):
            with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
                for _ in range(2):
                    with record_function(f"{mode}_bert_forward"):
                        if mode == "serial":
                            torch.cat([model(input_ids=ids[i:i + 1]).last_hidden_state for i in range(8)])
                        else:
                            model(input_ids=ids)
            path = d / f"{mode}.json"
            prof.export_chrome_trace(str(path))
            out[mode] = (path, {e.key: e.count for e in prof.key_averages()})
    return out


def test_pytorch_profiler_traces_match_key_averages(torch_traces):
    for mode, (path, counts) in torch_traces.items():
        doc = json.loads(run("stats", str(path), "--report", "op_sum", "--format", "json").stdout)
        ops = collections.Counter()
        for r in report(doc, "op_sum")["rows"]:
            ops[r["Name"]] += r["Calls"]
        for name in ("aten::linear", "aten::layer_norm", "aten::embedding", "aten::empty", "aten::addmm"):
            if name in counts:
                assert ops[name] == counts[name], (mode, name, ops[name], counts[name])


def test_pytorch_serial_vs_batched_diff_is_linear_in_samples(torch_traces):
    doc = json.loads(run("diff", str(torch_traces["serial"][0]), str(torch_traces["batched"][0]),
                         "--format", "json").stdout)
    rows = {r["Operator"]: r for r in report(doc, "diff_operators")["rows"]}
    assert doc["per_unit"] is True
    assert rows["aten::linear"]["Base"] == 8 * rows["aten::linear"]["New"]


NCU_CSV = '''==PROF== Connected to process 1234 (/usr/bin/python3)
==PROF== Profiling "ampere_sgemm_32x32": 0%....50%....100% - 8 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1234","python3","host","ampere_sgemm_32x32_sliced1x4_tn","1","7","(256, 1, 1)","(1, 1, 1)","0","8.0","GPU Speed Of Light Throughput","Duration","usecond","1,012.35"
"0","1234","python3","host","ampere_sgemm_32x32_sliced1x4_tn","1","7","(256, 1, 1)","(1, 1, 1)","0","8.0","GPU Speed Of Light Throughput","Memory Throughput","%","n/a"
"0","1234","python3","host","ampere_sgemm_32x32_sliced1x4_tn","1","7","(256, 1, 1)","(1, 1, 1)","0","8.0","Launch Statistics","Waves Per SM","","0.01"
'''


def test_nsight_compute_csv_goes_through_analyze_and_stats(tmp_path):
    path = tmp_path / "hot.csv"
    path.write_text(NCU_CSV)
    doc = json.loads(run("analyze", str(path), "--format", "json").stdout)
    row = doc["reports"][0]["rows"][0]
    assert row["Grid"] == "(1, 1, 1)" and row["Block"] == "(256, 1, 1)"
    assert row["Duration"] == pytest.approx(1012.35)
    assert row["Memory Throughput"] == "n/a"
    assert row["DRAM Throughput"] == "(not in this CSV)"
    assert row["Waves Per SM"] == pytest.approx(0.01)
    assert "ampere_sgemm_32x32_sliced1x4_tn" in run("stats", str(path), "--report", "any").stdout
