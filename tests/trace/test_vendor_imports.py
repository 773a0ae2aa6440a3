"""Other vendors' profilers (issue 29), checked against independent counts: the real 2-rank
Huawei Ascend job (torch_npu's trace_view.json with its kernel_details.csv, counted by
Python's json and csv), and rocprofv3's CSV files and rocpd SQLite database (written here in
their documented layouts, counted by Python's csv and sqlite3: the corpus has no real one).
Each is read by analyze, stats, diff, export and the Python package; a broken file is a
one-line error."""
from __future__ import annotations

import csv
import gzip
import json
import sqlite3
import subprocess
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ASCEND = REPO.parent / "shared" / "corpus" / "traces" / "vendors" / "ascend_2rank"
RANKS = [ASCEND / f"rank{r}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" for r in (0, 1)]


def run(tierscope_bin, *args):
    return subprocess.run([str(tierscope_bin), *map(str, args)], capture_output=True, text=True, timeout=300)


def report(tierscope_bin, path, name):
    p = run(tierscope_bin, "stats", path, "--report", name, "--format", "json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["reports"][0]


def ns(us) -> int:
    return int((Decimal(str(us)) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def ascend_counts(out_dir: Path) -> dict:
    """What trace_view.json holds, read by Python's json: device tasks by process and task
    type, collectives, the tasks they stand for, and kernel_details.csv's rows."""
    with gzip.open(out_dir / "trace_view.json.gz", "rt") as f:
        d = json.load(f)
    procs = {e["pid"]: e["args"]["name"] for e in d if e.get("ph") == "M" and e.get("name") == "process_name"}
    xs = [e for e in d if e.get("ph") == "X"]
    hccl = [e for e in xs if procs[e["pid"]] == "HCCL"]
    colls = [e for e in hccl if "task type" not in e.get("args", {})]
    c = {"kernels": 0, "kernel_ns": 0, "copies": 0, "syncs": 0, "hccl_tasks": 0}
    coll_ids = {e["args"].get("connection_id") for e in colls}
    launched = set(coll_ids)
    for e in xs:
        if procs[e["pid"]] != "Ascend Hardware":
            continue
        t = e["args"].get("Task Type", "")
        if e["args"].get("connection_id") in coll_ids:
            c["hccl_tasks"] += 1  # its collective stands for it
            continue
        launched.add(e["args"].get("connection_id"))
        if t.startswith("PLACE_HOLDER"):
            pass
        elif t.startswith(("EVENT_RECORD", "EVENT_WAIT")) or e["name"] in ("EVENT_RECORD", "EVENT_WAIT"):
            c["syncs"] += 1
        elif e["name"] == "MEMCPY_ASYNC":
            c["copies"] += 1
        else:
            c["kernels"] += 1
            c["kernel_ns"] += ns(e["dur"])
    # CANN calls that made another call on their thread and launched nothing themselves.
    calls = {}
    for e in xs:
        if procs[e["pid"]] == "CANN":
            calls.setdefault(e["tid"], []).append((Decimal(e["ts"]), Decimal(str(e["dur"])), e))
    library = 0
    for lst in calls.values():
        lst.sort(key=lambda x: (x[0], -x[1]))
        stack, marked = [], set()
        for ts, dur, e in lst:
            while stack and stack[-1][0] + stack[-1][1] < ts + dur:
                stack.pop()
            if stack and id(stack[-1][2]) not in marked and stack[-1][2]["args"].get("connection_id") not in launched:
                marked.add(id(stack[-1][2]))
                library += 1
            stack.append((ts, dur, e))
    c["cann_library"] = library
    c["collectives"] = len(colls)
    c["collective_ns"] = sum(ns(e["dur"]) for e in colls)
    c["cann"] = sum(1 for e in xs if procs[e["pid"]] == "CANN")
    flows = {}
    for e in d:
        if e.get("cat") == "async_npu" and e.get("ph") in ("s", "f"):
            flows.setdefault(e["id"], set()).add(e["ph"])
    c["flows"] = sum(1 for v in flows.values() if v == {"s", "f"})
    with open(out_dir / "kernel_details.csv", newline="") as f:
        c["details"] = sum(1 for _ in csv.DictReader(f))
    return c


@pytest.fixture(scope="module")
def ascend():
    for r in RANKS:
        if not (r / "trace_view.json.gz").is_file():
            pytest.fail(f"the Ascend corpus job is missing: {r}")
    return [ascend_counts(r) for r in RANKS]


def test_ascend_ranks_read_as_python_counts_them(tierscope_bin, ascend):
    for out_dir, want in zip(RANKS, ascend):
        stats = report(tierscope_bin, out_dir / "trace_view.json.gz", "import_stats")
        rows = {r["Item"].strip(): r["Count"] for r in stats["rows"]}
        assert rows["ascend: hardware tasks read as kernels"] == want["kernels"]
        assert rows["ascend: hardware tasks read as copies"] == want["copies"]
        assert rows["ascend: hardware tasks read as syncs (event record / wait)"] == want["syncs"]
        assert rows["ascend: HCCL collectives read as communication kernels"] == want["collectives"]
        key = "ascend: HCCL tasks on a hardware stream, joined to their collective by connection_id, left out"
        assert rows[key] == want["hccl_tasks"]
        assert rows["ascend: CANN API calls read as runtime calls"] == want["cann"] - want["cann_library"]
        assert rows["ascend: CANN API calls that made other calls (library calls), read as other"] == want["cann_library"]
        assert rows["ascend: device tasks joined to their operator by async_npu flows"] == want["flows"]
        assert rows["ascend: kernel_details.csv rows joined to their kernel"] == want["details"]
        kern = report(tierscope_bin, out_dir / "trace_view.json.gz", "cann_gpu_kern_sum")
        total = sum(r["Total Time (ns)"] for r in kern["rows"])
        assert total == want["kernel_ns"] + want["collective_ns"]
        assert sum(r["Instances"] for r in kern["rows"]) == want["kernels"] + want["collectives"]


def test_ascend_job_is_a_job_with_its_ranks_and_its_collectives(tierscope_bin, ascend):
    p = run(tierscope_bin, "analyze", ASCEND, "--format", "json")
    assert p.returncode == 0, p.stderr
    job = json.loads(p.stdout)
    assert [(r["rank"], r["rank_from"]) for r in job["ranks"]] == [(0, "profiler_info"), (1, "profiler_info")]
    # step_trace_time.csv's Computing (µs) is the kernels' busy time, as the temporal
    # breakdown's compute: torch_npu's own summary agrees to the µs.
    breakdown = next(t for t in job["reports"] if t["name"] == "temporal_breakdown")
    for row, out_dir in zip(breakdown["rows"], RANKS):
        with open(out_dir / "step_trace_time.csv", newline="") as f:
            computing_us = float(next(csv.DictReader(f))["Computing"])
        assert abs(row["Compute (ns)"] / 1000 - computing_us) < 1.0, (row, computing_us)


def test_ascend_folders_as_torch_npu_names_them_are_a_job(tierscope_bin, ascend, tmp_path):
    import shutil
    for r, src in enumerate(RANKS):
        shutil.copytree(src.parent, tmp_path / "job" / f"node{r}_31337{r}_20250109_ascend_pt")
    p = run(tierscope_bin, "analyze", tmp_path / "job", "--format", "json")
    assert p.returncode == 0, p.stderr
    assert [(r["rank"], r["rank_from"]) for r in json.loads(p.stdout)["ranks"]] == [(0, "profiler_info"), (1, "profiler_info")]


def test_ascend_diff_export_and_python_read_it(tierscope_bin, ascend, tmp_path):
    a, b = (r / "trace_view.json.gz" for r in RANKS)
    p = run(tierscope_bin, "diff", a, b, "--format", "json")
    assert p.returncode == 0, p.stderr
    p = run(tierscope_bin, "export", a, tmp_path / "a.sqlite")
    assert p.returncode == 0, p.stderr
    with sqlite3.connect(tmp_path / "a.sqlite") as db:
        kernels = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert kernels == ascend[0]["kernels"] + ascend[0]["collectives"]
    tierscope = pytest.importorskip("tierscope")
    t = tierscope.read_trace(a)
    kern = tierscope.report(t, "cann_gpu_kern_sum")
    assert int(kern["Instances"].sum()) == ascend[0]["kernels"] + ascend[0]["collectives"]


# rocprofv3 CSV: ROCm 7's layout (rocprofiler-sdk's generateCSV.cpp column names).
AGENTS = [["Node_Id", "Logical_Node_Id", "Agent_Type", "Cu_Count", "Name", "Product_Name"],
          [0, 0, "CPU", 0, "EPYC", "AMD EPYC 9654"],
          [2, 1, "GPU", 304, "gfx942", "AMD Instinct MI300X"]]
KERNEL_HEADER = ["Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name",
                 "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
                 "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
                 "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
API_HEADER = ["Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp"]


def write_csv(path: Path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_NONNUMERIC)
        for r in rows:
            w.writerow(r)


@pytest.fixture(scope="module")
def rocprof_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("rocprof") / "host"
    d.mkdir()
    kernels, api = [KERNEL_HEADER], [API_HEADER]
    t = 1_000_000
    for i in range(300):
        name = ("Cijk_Alik_Bljk_HHS_BH_MT128x128x32" if i % 3 == 0 else "void at::native::elementwise_kernel<128, 4>")
        api.append(["HIP_RUNTIME_API_EXT", "hipLaunchKernel", 4242, 4243, i + 1, t, t + 2_000])
        kernels.append(["KERNEL_DISPATCH", "Agent 1", 1, 3, 4243, i + 1, 7, name, i + 1, t + 5_000, t + 5_000 + 1_000 * (1 + i % 7),
                        0, 0, 64, 0, 32, 256, 1, 1, 256 * (1 + i % 5), 1, 1])
        t += 20_000
    kernels.append(["KERNEL_DISPATCH", "Agent 1", 1, 3, 4243, 999, 7, "bad", 999, "x", t])  # short and non-numeric
    write_csv(d / "4242_kernel_trace.csv", kernels)
    write_csv(d / "4242_hip_api_trace.csv", api)
    write_csv(d / "4242_agent_info.csv", AGENTS)
    return d


def test_rocprof_csv_totals_match_pythons_csv(tierscope_bin, rocprof_run):
    with open(rocprof_run / "4242_kernel_trace.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Start_Timestamp"].isdigit()]
    by_name = {}
    for r in rows:
        by_name.setdefault(r["Kernel_Name"], []).append(int(r["End_Timestamp"]) - int(r["Start_Timestamp"]))
    path = rocprof_run / "4242_kernel_trace.csv"
    kern = report(tierscope_bin, path, "hip_gpu_kern_sum")
    assert {r["Name"]: (r["Instances"], r["Total Time (ns)"]) for r in kern["rows"]} == \
        {k: (len(v), sum(v)) for k, v in by_name.items()}
    stats = {r["Item"].strip(): r["Count"] for r in report(tierscope_bin, path, "import_stats")["rows"]}
    assert stats["malformed entries skipped"] == 1
    api = report(tierscope_bin, rocprof_run / "4242_hip_api_trace.csv", "hip_api_sum")
    assert sum(r["Num Calls"] if "Num Calls" in r else r["Instances"] for r in api["rows"]) == 300
    p = run(tierscope_bin, "analyze", path)
    assert p.returncode == 0, p.stderr
    assert "format: rocprofv3-csv, runtime: hip, device: AMD Instinct MI300X" in p.stdout


def test_rocprof_csv_diff_export_and_python(tierscope_bin, rocprof_run, tmp_path):
    path = rocprof_run / "4242_kernel_trace.csv"
    assert run(tierscope_bin, "diff", path, path).returncode == 0
    p = run(tierscope_bin, "export", path, tmp_path / "r.sqlite")
    assert p.returncode == 0, p.stderr
    tierscope = pytest.importorskip("tierscope")
    kern = tierscope.report(tierscope.read_trace(path), "hip_gpu_kern_sum")
    assert int(kern["Instances"].sum()) == 300


def make_rocpd(path: Path, n: int):
    """A rocpd schema-3 database (rocprofiler-sdk's rocpd_tables.sql columns the import
    reads) with n launches, their kernels and one copy."""
    db = sqlite3.connect(path)
    s = "_0192_aaaa"
    db.executescript(f"""
    CREATE TABLE rocpd_string{s} (id INTEGER PRIMARY KEY, guid TEXT, string TEXT NOT NULL UNIQUE);
    CREATE TABLE rocpd_info_agent{s} (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, type TEXT,
      absolute_index INTEGER, logical_index INTEGER, type_index INTEGER, uuid INTEGER, name TEXT, model_name TEXT,
      vendor_name TEXT, product_name TEXT, user_name TEXT, extdata JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE rocpd_info_kernel_symbol{s} (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER,
      code_object_id INTEGER, kernel_name TEXT, display_name TEXT, extdata JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE rocpd_event{s} (id INTEGER PRIMARY KEY, guid TEXT, category_id INTEGER, stack_id INTEGER,
      parent_stack_id INTEGER, correlation_id INTEGER, call_stack JSONB DEFAULT "{{}}" NOT NULL,
      line_info JSONB DEFAULT "{{}}" NOT NULL, extdata JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE rocpd_region{s} (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER,
      start BIGINT, end BIGINT, name_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE rocpd_kernel_dispatch{s} (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER,
      agent_id INTEGER, kernel_id INTEGER, dispatch_id INTEGER, queue_id INTEGER, stream_id INTEGER, start BIGINT,
      end BIGINT, private_segment_size INTEGER, group_segment_size INTEGER, workgroup_size_x INTEGER,
      workgroup_size_y INTEGER, workgroup_size_z INTEGER, grid_size_x INTEGER, grid_size_y INTEGER,
      grid_size_z INTEGER, region_name_id INTEGER, event_id INTEGER, extdata JSONB DEFAULT "{{}}" NOT NULL);
    CREATE TABLE rocpd_memory_copy{s} (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, tid INTEGER,
      start BIGINT, end BIGINT, name_id INTEGER, dst_agent_id INTEGER, dst_address INTEGER, src_agent_id INTEGER,
      src_address INTEGER, size INTEGER, queue_id INTEGER, stream_id INTEGER, region_name_id INTEGER,
      event_id INTEGER, extdata JSONB DEFAULT "{{}}" NOT NULL);
    INSERT INTO rocpd_string{s} (id, string) VALUES (1, 'hipLaunchKernel'), (2, 'HIP_RUNTIME_API_EXT'),
      (3, 'KERNEL_DISPATCH'), (4, 'MEMORY_COPY_HOST_TO_DEVICE');
    INSERT INTO rocpd_info_agent{s} (id, type, type_index, name, product_name, extdata) VALUES
      (0, 'CPU', 0, 'EPYC', 'AMD EPYC 9654', '{{}}'), (2, 'GPU', 0, 'gfx942', 'AMD Instinct MI300X', '{{"cu_count": 304}}');
    INSERT INTO rocpd_info_kernel_symbol{s} (id, kernel_name, display_name) VALUES (7, '_Z4gemm', 'gemm'), (8, '_Z3add', 'add');
    """)
    t = 5_000_000
    for i in range(n):
        db.execute(f"INSERT INTO rocpd_event{s} (id, category_id, stack_id) VALUES (?, 2, ?)", (2 * i + 1, i + 1))
        db.execute(f"INSERT INTO rocpd_event{s} (id, category_id, stack_id) VALUES (?, 3, ?)", (2 * i + 2, i + 1))
        db.execute(f"INSERT INTO rocpd_region{s} (pid, tid, start, end, name_id, event_id) VALUES (4242, 4243, ?, ?, 1, ?)",
                   (t, t + 1_500, 2 * i + 1))
        db.execute(f"INSERT INTO rocpd_kernel_dispatch{s} (agent_id, kernel_id, queue_id, stream_id, start, end, "
                   "workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id) "
                   "VALUES (2, ?, 1, 3, ?, ?, 256, 1, 1, 4096, 1, 1, ?)",
                   (7 + i % 2, t + 4_000, t + 4_000 + 900 * (1 + i % 5), 2 * i + 2))
        t += 10_000
    db.execute(f"INSERT INTO rocpd_memory_copy{s} (start, end, name_id, dst_agent_id, src_agent_id, size, stream_id) "
               "VALUES (100, 900, 4, 2, 0, 1048576, 3)")
    db.commit()
    db.close()


def test_rocpd_totals_match_pythons_sqlite3(tierscope_bin, tmp_path):
    path = tmp_path / "4242_results.db"
    make_rocpd(path, 250)
    with sqlite3.connect(path) as db:
        want = {name: (n, total) for name, n, total in db.execute(
            "SELECT s.display_name, COUNT(*), SUM(k.end - k.start) FROM rocpd_kernel_dispatch_0192_aaaa k "
            "JOIN rocpd_info_kernel_symbol_0192_aaaa s ON s.id = k.kernel_id GROUP BY s.display_name")}
    kern = report(tierscope_bin, path, "hip_gpu_kern_sum")
    assert {r["Name"]: (r["Instances"], r["Total Time (ns)"]) for r in kern["rows"]} == want
    size = report(tierscope_bin, path, "hip_gpu_mem_size_sum")
    assert sum(r["Total (MB)"] for r in size["rows"]) == pytest.approx(1.048576)
    p = run(tierscope_bin, "analyze", path)
    assert p.returncode == 0, p.stderr
    assert "format: rocpd, runtime: hip, device: AMD Instinct MI300X" in p.stdout
    assert run(tierscope_bin, "diff", path, path).returncode == 0
    assert run(tierscope_bin, "export", path, tmp_path / "e.sqlite").returncode == 0
    tierscope = pytest.importorskip("tierscope")
    assert int(tierscope.report(tierscope.read_trace(path), "hip_gpu_kern_sum")["Instances"].sum()) == 250


def test_broken_vendor_files_are_one_line_errors(tierscope_bin, tmp_path):
    bad_db = tmp_path / "x_results.db"
    with sqlite3.connect(bad_db) as db:
        db.execute("CREATE TABLE rocpd_kernel_dispatch_01 (id INTEGER, start BIGINT)")
    p = run(tierscope_bin, "analyze", bad_db)
    assert p.returncode != 0
    assert p.stderr.count("\n") == 1 and "reading rocpd_kernel_dispatch" in p.stderr, p.stderr
    empty = tmp_path / "1_kernel_trace.csv"
    empty.write_text('"Kind","Agent_Id","Start_Timestamp"\n')
    p = run(tierscope_bin, "analyze", empty)
    assert p.returncode != 0 and p.stderr.count("\n") == 1, p.stderr
    other = tmp_path / "notes.csv"
    other.write_text("a,b\n1,2\n")
    p = run(tierscope_bin, "analyze", other)
    assert p.returncode != 0 and p.stderr.count("\n") == 1 and "rocprofv3's CSV traces" in p.stderr, p.stderr


def test_rocprof_runs_and_databases_in_rank_folders_are_a_job(tierscope_bin, rocprof_run, tmp_path):
    job = tmp_path / "job"
    for rank in (0, 1):
        d = job / f"rank_{rank}"
        d.mkdir(parents=True)
        for f in rocprof_run.iterdir():
            (d / f.name.replace("4242", str(4242 + rank))).write_bytes(f.read_bytes())
    make_rocpd(job / "rank_1" / "77_results.db", 10)
    (job / "rank_1" / "4243_kernel_trace.csv").unlink()
    p = run(tierscope_bin, "analyze", job, "--format", "json")
    assert p.returncode == 0, p.stderr
    ranks = json.loads(p.stdout)["ranks"]
    assert [(r["rank"], r["format"]) for r in ranks] == [(0, "rocprofv3-csv"), (1, "rocpd")], ranks
