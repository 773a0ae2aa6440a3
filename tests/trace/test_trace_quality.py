"""trace_quality on the corpus: each defect injected into a clean field trace gives the exact
count (counted again here, independently, from the JSON); the clean traces pass every check;
the vLLM CUDA-graph trace is flagged; and analyze leads with the verdict, marks the tables a
failed check affects and draws no finding from a rule that rests on it."""
from __future__ import annotations

import copy
import gzip
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FIELD = REPO_ROOT.parent / "shared" / "corpus" / "traces" / "field"
CLEAN = FIELD / "h100__gaunernst_bert-small-uncased__1016001.json.gz"


def load(path: Path) -> dict:
    if not path.exists():
        pytest.skip(f"corpus trace missing: {path}")
    with gzip.open(path, "rt") as f:
        return json.load(f)


def quality(tierscope_bin, doc_or_path, tmp_path) -> dict:
    path = doc_or_path
    if isinstance(doc_or_path, dict):
        path = tmp_path / "injected.json.gz"
        with gzip.open(path, "wt") as f:
            json.dump(doc_or_path, f)
    run = subprocess.run([str(tierscope_bin), "stats", str(path), "--report", "trace_quality", "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return {r["Check"]: (r["Status"], r["Count"]) for r in json.loads(run.stdout)["reports"][0]["rows"]}


def kernels(doc):
    return [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]


def failures(q: dict) -> dict:
    return {name: v for name, v in q.items() if v[0] != "pass"}


@pytest.mark.parametrize("name", ["h100__gaunernst_bert-small-uncased__1016001", "torch_compile_triton__trace",
                                  "hta__trace_filter__sampled_rank-0"])
def test_clean_traces_pass_every_check(tierscope_bin, tmp_path, name):
    path = FIELD / f"{name}.json.gz"
    load(path)
    assert failures(quality(tierscope_bin, path, tmp_path)) == {}


def test_the_vllm_cuda_graph_trace_is_flagged(tierscope_bin, tmp_path):
    path = FIELD / "inference__vllm_decode_full__graph_execution.json.gz"
    doc = load(path)
    graph_corr = {e["args"]["correlation"] for e in doc["traceEvents"] if e.get("name") == "hipGraphLaunch"}
    replayed = sum(1 for e in doc["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                   and e.get("args", {}).get("correlation") in graph_corr)
    q = quality(tierscope_bin, path, tmp_path)
    assert replayed > 400 and q["graph_replay"] == ("warn", replayed)


def test_duplicated_kernels_are_counted(tierscope_bin, tmp_path):
    doc = load(CLEAN)
    ks = kernels(doc)
    doc["traceEvents"] += [copy.deepcopy(k) for k in ks[10:13]]
    q = quality(tierscope_bin, doc, tmp_path)
    assert q["duplicates"] == ("FAIL", 3) and q["stream_overlap"] == ("FAIL", 3)


def test_a_kernel_overrunning_the_next_on_its_stream(tierscope_bin, tmp_path):
    # Into the next kernel by half of it: under 1% of the kernel time overlapped, a warning
    # (a PDL prologue's size); over the next twenty: a failure, each overlap counted.
    doc = load(CLEAN)
    ks = sorted((k for k in kernels(doc) if k["args"]["stream"] == 7), key=lambda k: k["ts"])
    a, b = ks[20], ks[21]
    a["dur"] = (b["ts"] - a["ts"]) + b["dur"] / 2  # ends inside the next one
    assert failures(quality(tierscope_bin, doc, tmp_path)) == {"stream_overlap": ("warn", 1)}
    a["dur"] = ks[41]["ts"] - a["ts"] + 0.001  # ends just inside the 21st after it
    assert failures(quality(tierscope_bin, doc, tmp_path)) == {"stream_overlap": ("FAIL", 21)}


def test_an_event_far_longer_than_the_whole_capture_fails_and_no_finding_rests_on_it(tierscope_bin, tmp_path):
    # The last kernel made 1e12 us (11.6 days) long in a capture of seconds: once read as
    # "in use 99.999%" with a finding that "explains 1000000.000 s".
    doc = load(CLEAN)
    ks = sorted(kernels(doc), key=lambda k: k["ts"])
    starts = [e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X" and "ts" in e]
    span_s = (max(starts) - min(starts)) / 1e6
    ks[-1]["dur"] = 1e12
    assert failures(quality(tierscope_bin, doc, tmp_path)).get("endless_events") == ("FAIL", 1)
    # Ten times the span of the starts (and a minute) is still a duration some event may have.
    ks[-1]["dur"] = max(9 * span_s, 59) * 1e6
    assert "endless_events" not in failures(quality(tierscope_bin, doc, tmp_path))
    # A real long last kernel (a collective stuck on a slow rank): its synchronisation ends
    # with it, so it is long, not endless.
    ks[-1]["dur"] = 1e12
    doc["traceEvents"].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1,
                               "ts": ks[-1]["ts"] - 5, "dur": 1e12 + 7})
    assert "endless_events" not in failures(quality(tierscope_bin, doc, tmp_path))
    doc["traceEvents"].pop()
    path = tmp_path / "endless.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    run = subprocess.run([str(tierscope_bin), "analyze", str(path), "--format", "json"], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    findings = json.loads(run.stdout).get("findings", [])
    assert not any(f.get("rule") in ("hot_kernel", "gpu_util_low", "gaps_large") for f in findings), findings


def test_clocks_that_disagree(tierscope_bin, tmp_path):
    doc = load(CLEAN)
    launch = {e["args"]["correlation"]: e for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime"
              and "correlation" in e.get("args", {})}
    moved = 0
    for k in kernels(doc)[30:32]:
        k["ts"] = launch[k["args"]["correlation"]]["ts"] - 1.0
        moved += 1
    q = quality(tierscope_bin, doc, tmp_path)
    assert q["clock_skew"] == ("FAIL", moved)


def test_stats_diff_and_whatif_mark_what_rests_on_a_failed_check(tierscope_bin, tmp_path):
    # Only analyze marked: stats printed a 9000 s kernel as 100% of the device, diff's
    # headline "12.5 ms -> 9000 s" and whatif's measured step with no word of the check.
    doc = load(CLEAN)
    kernels(doc)[-1]["dur"] = 9e9
    path = tmp_path / "endless.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)

    def run(*args):
        p = subprocess.run([str(tierscope_bin), *map(str, args)], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return p.stdout

    stats = json.loads(run("stats", path, "--report", "hot_kernels,in_use,cuda_api_sum", "--format", "json"))
    marked = {r["name"]: any(n.startswith("MARKED") for n in r.get("notes", [])) for r in stats["reports"]}
    assert marked == {"hot_kernels": True, "in_use": True, "cuda_api_sum": True}, marked
    hot = stats["reports"][0]["rows"][0]
    assert hot["Failed check"] == "endless_events", hot
    clean = json.loads(run("stats", CLEAN, "--report", "hot_kernels,in_use", "--format", "json"))
    assert not any(n.startswith("MARKED") for r in clean["reports"] for n in r.get("notes", []))
    d = json.loads(run("diff", CLEAN, path, "--format", "json"))
    assert d["quality"]["failed"] and d["headline"][0].startswith("MARKED: checks failed on the new trace (endless")
    assert not json.loads(run("diff", CLEAN, CLEAN, "--format", "json"))["quality"]["failed"]
    text = run("diff", CLEAN, path)
    assert "FAILED: endless_events" in text.splitlines()[3], text[:600]
    w = json.loads(run("whatif", path, "--change", "gemm=0.5", "--format", "json"))
    assert any(n.startswith("MARKED: trace quality checks failed (endless_events)") for n in w.get("notes", [])), w
    # A kernel placed 11.6 days before its launch (clock_skew) stretches the device's window:
    # in-use, gaps and the idle shares are marked, not only the launch statistics.
    doc = load(CLEAN)
    kernels(doc)[5]["ts"] -= 1e12
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    stats = json.loads(run("stats", path, "--report", "in_use,gaps,temporal_breakdown,kernel_launch_stats",
                           "--format", "json"))
    assert all(any(n.startswith("MARKED") for n in r.get("notes", [])) for r in stats["reports"]), stats["reports"]
    # A kernel a microsecond before its launch, inside the trace's window, leaves the window
    # as it was: only the launch statistics are marked.
    doc = load(CLEAN)
    launch = {e["args"]["correlation"]: e for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime"
              and "correlation" in e.get("args", {})}
    k = kernels(doc)[30]
    k["ts"] = launch[k["args"]["correlation"]]["ts"] - 1.0
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    stats = json.loads(run("stats", path, "--report", "in_use,kernel_launch_stats", "--format", "json"))
    marks = [any(n.startswith("MARKED") for n in r.get("notes", [])) for r in stats["reports"]]
    assert marks == [False, True], stats["reports"]
    # Work recorded a millisecond or more before its own launch (though after the trace's
    # first) lands where the device was idle: in-use is marked again.
    k = max((e for e in kernels(doc) if e["args"].get("correlation") in launch),
            key=lambda e: launch[e["args"]["correlation"]]["ts"])
    k["ts"] = launch[k["args"]["correlation"]]["ts"] - 1200.0
    assert k["ts"] > min(e["ts"] for e in launch.values())
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    stats = json.loads(run("stats", path, "--report", "in_use", "--format", "json"))
    assert any(n.startswith("MARKED") for n in stats["reports"][0].get("notes", [])), stats["reports"]


def test_missing_kernels_missing_launches_and_a_trace_cut_short(tierscope_bin, tmp_path):
    doc = load(CLEAN)
    events = doc["traceEvents"]
    ks = sorted(kernels(doc), key=lambda k: k["ts"])
    gone = {k["args"]["correlation"] for k in ks[5:7]} | {k["args"]["correlation"] for k in ks[-3:]}
    doc["traceEvents"] = [e for e in events if not (e.get("cat") == "kernel" and e["args"]["correlation"] in gone)]
    # An independent count: launches with no kernel left, and of those, the ones after the
    # last remaining device event's end (cut short).
    device = [e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    last_end = max(e["ts"] + e["dur"] for e in device)
    launches = [e for e in doc["traceEvents"] if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and "LaunchKernel" in e["name"]
                and e["args"].get("correlation") in gone]
    cut = sum(1 for e in launches if e["ts"] > last_end)
    q = quality(tierscope_bin, doc, tmp_path)
    assert q["launch_without_kernel"][1] == len(launches) - cut and q["cut_short"][1] == cut
    assert len(launches) == 5 and cut >= 1

    doc = load(CLEAN)
    strip = {k["args"]["correlation"] for k in kernels(doc)[40:44]}
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not (e.get("cat") == "cuda_runtime"
                                                                 and e.get("args", {}).get("correlation") in strip)]
    assert quality(tierscope_bin, doc, tmp_path)["kernel_without_launch"] == ("warn", 4)


def test_copies_as_kernels_graph_launches_without_kernels_and_skipped_entries(tierscope_bin, tmp_path):
    doc = load(CLEAN)
    # ROCm 7.1's names for a copy and a fill recorded as kernels.
    for k, name in zip(kernels(doc)[:2], ["__amd_rocclr_copyBuffer.kd", "__amd_rocclr_fillBufferAligned.kd"]):
        k["name"] = name
    ts = kernels(doc)[50]["ts"]
    doc["traceEvents"].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1,
                               "ts": ts, "dur": 3.0, "args": {"correlation": 987654321}})
    doc["traceEvents"] += [{"ph": "X", "cat": "kernel", "name": 5, "ts": "x"}, {"ph": "X", "cat": "cpu_op"}]
    q = quality(tierscope_bin, doc, tmp_path)
    assert q["copies_as_kernels"] == ("warn", 2)
    assert q["graph_kernels_missing"] == ("FAIL", 1)
    assert q["import_skipped"] == ("warn", 2)


@pytest.mark.parametrize("stream", ["never", "always"])
def test_kernels_without_their_grid_are_counted_by_key(tierscope_bin, tmp_path, stream):
    # Counted from the args' keys the importer noted (the text is not searched again, and a
    # streamed trace's args are spilled): a "grid" that is a value, not a key, is no grid.
    doc = load(CLEAN)
    ks = kernels(doc)
    for k in ks[:7]:
        k.get("args", {}).pop("grid", None)
    ks[7]["args"] = {k: v for k, v in ks[7].get("args", {}).items() if k != "grid"} | {"note": "grid"}
    missing = sum(1 for k in kernels(doc) if "grid" not in k.get("args", {}))
    assert missing >= 8
    path = tmp_path / "gridless.json"
    path.write_text(json.dumps(doc))
    run = subprocess.run([str(tierscope_bin), "stats", str(path), "--report", "trace_quality", "--format", "json"],
                         capture_output=True, text=True, timeout=120, env=os.environ | {"TIERSCOPE_STREAM": stream})
    assert run.returncode == 0, run.stderr
    q = {r["Check"]: (r["Status"], r["Count"]) for r in json.loads(run.stdout)["reports"][0]["rows"]}
    assert q["kernel_grid_missing"] == ("warn", missing)


def test_an_empty_trace_is_not_said_to_pass_its_checks(tierscope_bin, tmp_path):
    path = tmp_path / "empty.json"
    path.write_text('{"traceEvents": []}')
    run = subprocess.run([str(tierscope_bin), "analyze", str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    verdict = "trace quality: the trace holds no timeline event: no check passed, and there is nothing to analyse"
    lines = run.stdout.splitlines()
    assert lines[4] == verdict, run.stdout  # the verdict, and the note under the checks' table
    assert lines.count(verdict) == 2 and "checks passed" not in run.stdout
    q = quality(tierscope_bin, path, tmp_path)
    assert q and all(status == "n/a" for status, _ in q.values()), q
    # No rule ran, so no clean bill either.
    assert run.stdout.rstrip().endswith("Diagnosis: none: the trace holds no timeline event."), run.stdout[-300:]
    assert "no problem found" not in run.stdout


def test_an_empty_trace_is_nothing_to_predict_or_compare(tierscope_bin, tmp_path):
    empty, other = tmp_path / "empty.json", tmp_path / "empty2.json"
    for path in (empty, other):
        path.write_text('{"traceEvents": []}')
    if not CLEAN.exists():
        pytest.skip(f"corpus trace missing: {CLEAN}")
    cases = [  # (arguments, what the one line says, the input it names)
        (("whatif", empty, "--change", "gemm=0.5"), "nothing to re-time", str(empty)),
        (("diff", empty, CLEAN), "holds no timeline event", str(empty)),
        (("diff", CLEAN, empty), "holds no timeline event", str(empty)),
        (("whatif", empty, other, "--change", "gemm=0.5"), "nothing to re-time", "job of 2 rank"),
    ]
    for args, why, names in cases:
        p = subprocess.run([str(tierscope_bin), *map(str, args)], capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1, (args, p.stdout[-500:], p.stderr)
        assert why in p.stderr and names in p.stderr, (args, p.stderr)


def test_analyze_leads_with_the_verdict_and_withholds_what_rests_on_a_failure(tierscope_bin, tmp_path):
    doc = load(CLEAN)
    ts = kernels(doc)[50]["ts"]
    doc["traceEvents"].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1,
                               "ts": ts, "dur": 3.0, "args": {"correlation": 987654321}})
    path = tmp_path / "graph.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    text = subprocess.run([str(tierscope_bin), "analyze", str(path)], capture_output=True, text=True, timeout=120).stdout
    assert text.splitlines()[4].startswith("trace quality: 14 of 15 checks passed; FAILED: graph_kernels_missing 1")
    out = json.loads(subprocess.run([str(tierscope_bin), "analyze", str(path), "--format", "json"],
                                    capture_output=True, text=True, timeout=120).stdout)
    rules = [f["rule"] for f in out["findings"]]
    assert "gpu_util_low" not in rules and rules[0] == "trace_quality"
    assert "gpu_util_low" in out["findings"][0]["evidence"][0]
    in_use = next(r for r in out["reports"] if r["name"] == "in_use")
    assert any(n.startswith("MARKED: trace quality") for n in in_use.get("notes", []))
    # The same trace without the defect: the rule fires, nothing is marked.
    clean = json.loads(subprocess.run([str(tierscope_bin), "analyze", str(CLEAN), "--format", "json"],
                                      capture_output=True, text=True, timeout=120).stdout)
    assert "gpu_util_low" in [f["rule"] for f in clean["findings"]]
    assert not any(n.startswith("MARKED") for r in clean["reports"] for n in r.get("notes", []))


def test_a_jobs_ranks_each_get_their_verdict(tierscope_bin, tmp_path):
    # Two ranks of the clean trace, rank 1 with three kernels recorded twice: its row says
    # FAILED, a note gives its line, and its findings withhold the rules that rest on it.
    doc = load(CLEAN)
    job = tmp_path / "job"
    job.mkdir()
    with gzip.open(job / "rank-0.json.gz", "wt") as f:
        json.dump(doc, f)
    doc["traceEvents"] += [copy.deepcopy(k) for k in kernels(doc)[10:13]]
    with gzip.open(job / "rank-1.json.gz", "wt") as f:
        json.dump(doc, f)
    out = json.loads(subprocess.run([str(tierscope_bin), "analyze", str(job), "--format", "json"],
                                    capture_output=True, text=True, timeout=120).stdout)
    ranks = {r["rank"]: r for r in out["ranks"]}
    assert ranks[0]["quality"] == "trace quality: 15 of 15 checks passed"
    assert ranks[1]["quality"].startswith("trace quality: 13 of 15 checks passed; FAILED: stream_overlap 3, duplicates 3")
    assert ranks[1]["findings"][0]["rule"] == "trace_quality"
    assert "launch_bound" not in [f["rule"] for f in ranks[1]["findings"]]
    assert "launch_bound" in [f["rule"] for f in ranks[0]["findings"]]
    table = next(r for r in out["reports"] if r["name"] == "ranks")
    assert [row["Quality"] for row in table["rows"]] == ["pass", "FAILED: stream_overlap, duplicates"]


def test_kernels_out_of_their_launch_order_on_a_stream(tierscope_bin, tmp_path):
    # Two neighbours on a stream trade start times (each keeps its length): the later launch
    # now runs first. Counted again here from the JSON: adjacent pairs whose correlation falls.
    doc = load(CLEAN)
    ks = sorted((k for k in kernels(doc) if k["args"]["stream"] == 7), key=lambda k: k["ts"])
    a, b = ks[30], ks[31]
    a["ts"], b["ts"] = b["ts"] + b["dur"] - a["dur"], a["ts"]
    order = sorted((k for k in kernels(doc) if k["args"]["stream"] == 7), key=lambda k: (k["ts"], k["dur"]))
    falls = sum(1 for p, n in zip(order, order[1:]) if n["args"]["correlation"] < p["args"]["correlation"])
    q = quality(tierscope_bin, doc, tmp_path)
    pairs = sum(1 for k in kernels(doc) if k["args"].get("correlation")) - len({k["args"]["stream"] for k in kernels(doc)})
    # One swap in the 60 pairs of this small trace: above 1% of them, a failure (a race of
    # two launching threads is a swap in thousands: a warning).
    assert falls == 1 and pairs < 100 and q["out_of_order"] == ("FAIL", 1)


def test_ranges_left_open_at_the_end(tierscope_bin, tmp_path):
    doc = load(CLEAN)
    end = max(e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X")
    doc["traceEvents"] += [{"ph": "B", "name": f"range{i}", "pid": 1, "tid": 1, "ts": end + i} for i in range(3)]
    doc["traceEvents"] += [{"ph": "E", "pid": 1, "tid": 1, "ts": end + 10}]
    q = quality(tierscope_bin, doc, tmp_path)
    assert q["open_at_end"] == ("warn", 2)


def test_the_rows_resting_on_failed_events_are_marked_one_by_one(tierscope_bin, tmp_path):
    # Three kernels recorded twice: in each affected table, exactly the rows of those kernels
    # (kernel tables) and of the ops that launched them and the ops around those (operator
    # tables) say which checks failed; every other row says "-".
    doc = load(CLEAN)
    dup = kernels(doc)[10:13]
    doc["traceEvents"] += [copy.deepcopy(k) for k in dup]
    path = tmp_path / "dup.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    out = json.loads(subprocess.run([str(tierscope_bin), "analyze", str(path), "--format", "json", "--wide"],
                                    capture_output=True, text=True, timeout=120).stdout)
    reports = {r["name"]: r for r in out["reports"]}
    kern = reports["cuda_gpu_kern_sum"]
    marked = {r["Name"]: r["Failed check"] for r in kern["rows"] if r["Failed check"] != "-"}
    assert marked == {k["name"]: "duplicates,stream_overlap" for k in dup}
    # The ops: each duplicated kernel's External id names its op; the op and its ancestors
    # (by time on its thread) are the rows marked in op_sum.
    ops = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]
    want = set()
    for k in dup:
        for op in (o for o in ops if o["args"].get("External id") == k["args"]["External id"]):
            want |= {o["name"] for o in ops if o["tid"] == op["tid"] and o["ts"] <= op["ts"]
                     and o["ts"] + o["dur"] >= op["ts"] + op["dur"]}
    op_sum = {r["Name"] for r in reports["op_sum"]["rows"] if r["Failed check"] != "-"}
    assert want and op_sum == want & {r["Name"] for r in reports["op_sum"]["rows"]}
    clean = json.loads(subprocess.run([str(tierscope_bin), "analyze", str(CLEAN), "--format", "json"],
                                      capture_output=True, text=True, timeout=120).stdout)
    assert not any("Failed check" in r.get("columns", []) for r in clean["reports"])
