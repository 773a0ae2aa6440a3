"""AMD rocprofv3's JSON (rocprofiler-sdk's `--output-format json`) read by every command
and the Python package: on the corpus's real result (43,915 kernel dispatches on an MI350X),
each kernel's count and total time equal what Python's json computes from the raw file,
and the device is the GPU agent the dispatches ran on; on a small hand-made result, HIP
calls join their kernels, copies and roctx ranges are read, grids are in workgroups as
Kineto's, and bad records are counted, not fatal; a truncated file is a one-line error."""
from __future__ import annotations

import collections
import gzip
import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REAL = REPO.parent / "shared" / "corpus" / "traces" / "vendors" / "rocprofv3" / "rocprof__908_results.json.gz"
SMALL = REPO / "tests" / "fuzz" / "corpus" / "kineto_fuzzer" / "rocprofv3.json"


def run(tierscope_bin, *args, check=True):
    p = subprocess.run([str(tierscope_bin), *map(str, args)], capture_output=True, text=True, timeout=300)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def reports(tierscope_bin, path) -> dict:
    doc = json.loads(run(tierscope_bin, "analyze", path, "--format", "json").stdout)
    return {r["name"]: r for r in doc["reports"]}


def python_kernels(path: Path):
    with gzip.open(path, "rt") as f:
        tool = json.load(f)["rocprofiler-sdk-tool"][0]
    names = {k["kernel_id"]: k["formatted_kernel_name"] for k in tool["kernel_symbols"]}
    per = collections.defaultdict(lambda: [0, 0])
    agents = collections.Counter()
    for r in tool["buffer_records"]["kernel_dispatch"]:
        d = r["dispatch_info"]
        per[names[d["kernel_id"]]][0] += 1
        per[names[d["kernel_id"]]][1] += r["end_timestamp"] - r["start_timestamp"]
        agents[d["agent_id"]["handle"]] += 1
    top = agents.most_common(1)[0][0]
    gpu = next(a for a in tool["agents"] if a["id"]["handle"] == top)
    return per, gpu["product_name"], gpu["cu_count"]


def test_a_real_result_has_every_kernels_count_and_time(tierscope_bin):
    assert REAL.exists(), f"corpus file missing: {REAL}"
    theirs, device, units = python_kernels(REAL)
    doc = json.loads(run(tierscope_bin, "analyze", REAL, "--format", "json").stdout)
    r = {x["name"]: x for x in doc["reports"]}
    rows = r["hip_gpu_kern_sum"]["rows"]
    ours = {row["Name"]: (row["Instances"], row["Total Time (ns)"]) for row in rows}
    assert len(ours) == len(theirs)
    for name, (count, total) in theirs.items():
        assert ours[name] == (count, total), name
    text = run(tierscope_bin, "analyze", REAL).stdout
    assert f"format: rocprofv3, runtime: hip, device: {device} ({units} compute units)" in text
    stats = {row["Item"]: row["Count"] for row in r["import_stats"]["rows"]}
    assert stats["timeline events kept"] == sum(c for c, _ in theirs.values())


def test_every_command_and_the_python_package_read_it(tierscope_bin, tmp_path):
    run(tierscope_bin, "stats", REAL, "--report", "hip_gpu_kern_sum,temporal_breakdown")
    same = run(tierscope_bin, "diff", REAL, REAL).stdout
    assert "launches 0 -> 0" in same and "device time 4.442 s -> 4.442 s" in same, same[:2000]
    run(tierscope_bin, "export", REAL, tmp_path / "out.sqlite")
    assert (tmp_path / "out.sqlite").stat().st_size > 0
    run(tierscope_bin, "analyze", REAL, "--critical-path")
    tierscope = pytest.importorskip("tierscope")
    t = tierscope.read_trace(REAL)
    assert t.format == "rocprofv3" and len(t) == 43915
    assert tierscope.report(t, "hip_gpu_kern_sum")["Instances"].sum() == 43915


def test_a_small_result_joins_calls_to_kernels_and_counts_bad_records(tierscope_bin, tmp_path):
    r = reports(tierscope_bin, SMALL)
    stats = {row["Item"]: row["Count"] for row in r["import_stats"]["rows"]}
    assert stats["entries read"] == 6
    assert stats["timeline events kept"] == 4
    assert stats["malformed entries skipped"] == 2
    kernels = r["hip_gpu_kern_sum"]["rows"]
    assert [(k["Name"], k["Instances"], k["Total Time (ns)"]) for k in kernels] == [
        ("Cijk_Ailk_Bljk_BBS_BH_MT64x64x32", 1, 3000)]
    # The HIP launch (correlation 5) is the kernel's; the copy has no call: one without.
    quality = {row["Check"]: row for row in r["trace_quality"]["rows"]}
    assert quality["kernel_without_launch"]["Count"] == 1
    # Grid in workgroups (65536 / 256 = 256), as Kineto writes it.
    hot = r["hot_kernels"]["rows"]
    assert (hot[0]["Grid"], hot[0]["Block"]) == ("[256,2,1]", "[256,1,1]")
    gpu = {row["Name"]: row for row in r["hip_gpu_sum"]["rows"]}
    assert gpu["MEMORY_COPY_HOST_TO_DEVICE"]["Total Time (ns)"] == 400
    ranges = {row["Range"]: row for row in r["nvtx_sum"]["rows"]}
    assert ranges["train_step"]["Total Time (ns)"] == 7600  # the roctx range, named by its message
    text = run(tierscope_bin, "analyze", SMALL).stdout
    assert "AMD Instinct MI300X (304 compute units)" in text


def test_a_truncated_result_is_a_one_line_error(tierscope_bin, tmp_path):
    data = gzip.open(REAL).read()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    p = run(tierscope_bin, "analyze", cut, check=False)
    assert p.returncode != 0
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "cut.json" in lines[0], p.stderr
    other = tmp_path / "other.json"
    other.write_text('{"rocprofiler-sdk-tool": {"not": "a list"}}')
    p = run(tierscope_bin, "analyze", other, check=False)
    assert p.returncode != 0 and "not a rocprofv3 result" in p.stderr


@pytest.mark.parametrize("where,value,says", [
    (("buffer_records", "kernel_dispatch"), {"a": 1}, "buffer_records.kernel_dispatch is not an array"),
    (("kernel_symbols",), "x", "kernel_symbols is not an array"),
    (("agents",), 7, "agents is not an array"),
    (("strings", "buffer_records"), {}, "strings.buffer_records is not an array"),
    (("strings",), 7, "strings is not an object"),
    (("strings", "marker_api"), "x", "strings.marker_api is not an array"),
    (("strings", "buffer_records", 0, "operations"), "x", "strings.buffer_records[].operations is not an array")])
def test_a_table_of_the_wrong_type_is_an_error_never_an_empty_result(tierscope_bin, tmp_path, where, value, says):
    # kernel_dispatch as an object once read as no dispatches at all ("events: 0", "no
    # problem found"); kernel_symbols as a string as every dispatch of an unknown kernel.
    doc = json.loads(SMALL.read_text())
    tool = doc["rocprofiler-sdk-tool"][0]
    node = tool
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    p = run(tierscope_bin, "analyze", bad, check=False)
    assert p.returncode == 2, (p.returncode, p.stdout[-500:])
    assert p.stderr.strip().splitlines() == [f"tierscope: error: {bad}: {says}"], p.stderr
