"""`tierscope export`: the nsys SQLite schema round-trips through tierscope (the nsys-style
reports of the export equal the trace's), answers the SQL nsys users write (kernel time by
name through StringIds), and a job directory becomes report_<rank>.sqlite files; the
Parquet tables (python -m tierscope, pyarrow) are read by DuckDB with the kernel totals of
cuda_gpu_kern_sum, rank by rank."""
from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "corpus" / "traces"
FIELD = TRACES / "field"
CASES = [TRACES / "df_index_resolver.json.gz", FIELD / "h100__gaunernst_bert-small-uncased__1016001.json.gz",
         FIELD / "b200__eager_trace.json.gz", FIELD / "inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
         FIELD / "mi210__gpu_only_trace__gpu_only_trace.json.gz"]
PAIR = [FIELD / f"hta__trace_filter__sampled_rank-{r}.json.gz" for r in (0, 1)]
ROUND_TRIP = ["cuda_gpu_kern_sum", "cuda_api_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "nvtx_sum",
              "cuda_kern_exec_sum", "temporal_breakdown", "kernel_breakdown"]


def run(bin_path, *args, ok=True):
    p = subprocess.run([str(bin_path), *map(str, args)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TIERSCOPE_PYTHON": sys.executable})
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def need(*paths):
    for p in paths:
        if not p.exists():
            pytest.skip(f"corpus file missing: {p}")


@pytest.mark.parametrize("trace", CASES, ids=lambda p: p.name[:30])
def test_the_sqlite_export_round_trips_and_answers_nsys_sql(trace, tierscope_bin, tmp_path):
    need(trace)
    out = tmp_path / "t.sqlite"
    run(tierscope_bin, "export", trace, out)
    for report in ROUND_TRIP:
        a = json.loads(run(tierscope_bin, "stats", trace, "--report", report, "--format", "json").stdout)["reports"][0]
        b = json.loads(run(tierscope_bin, "stats", out, "--report", report, "--format", "json").stdout)["reports"][0]
        if report == "nvtx_sum":  # device-side annotations have no nsys table
            a["rows"] = [r for r in a["rows"] if r["Side"] == "host"]
        assert a["columns"] == b["columns"] and len(a["rows"]) == len(b["rows"]), report
        for x, y in zip(a["rows"], b["rows"]):  # sums may add in another order: last-digit floats
            assert x.keys() == y.keys(), report
            for k in x:
                assert x[k] == (pytest.approx(y[k], rel=1e-12) if isinstance(y[k], float) else y[k]), (report, k)
    # The query nsys users write: kernel time by name through StringIds.
    db = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    rows = db.execute("SELECT s.value, count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k "
                      "JOIN StringIds AS s ON s.id = k.demangledName GROUP BY s.value").fetchall()
    kern = json.loads(run(tierscope_bin, "stats", trace, "--report", "cuda_gpu_kern_sum", "--format", "json").stdout)
    want = {r["Name"]: (r["Instances"], r["Total Time (ns)"]) for r in kern["reports"][0]["rows"]}
    assert {n: (c, t) for n, c, t in rows} == want
    # The indexes the joins use are there.
    indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"kernel_correlation", "runtime_correlation", "nvtx_thread"} <= indexes
    # shortName is the bare function name, as nsys writes it.
    for short, full in db.execute("SELECT a.value, b.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds a "
                                  "ON a.id = k.shortName JOIN StringIds b ON b.id = k.demangledName LIMIT 50"):
        assert "(" not in short and "<" not in short and short in full, (short, full)
    # Every kernel's device has its TARGET_INFO_GPU row when the trace names its device.
    if db.execute("SELECT count(*) FROM TARGET_INFO_GPU").fetchone()[0]:
        (n,), = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN TARGET_INFO_GPU g "
                           "ON g.id = k.deviceId WHERE g.id IS NULL")
        assert n == 0
    # The findings survive: launch sizes the trace does not record are not invented. The
    # roofline's rests on operator shapes, which an nsys export does not hold: it is not
    # drawn from the export (and not invented there).
    a = json.loads(run(tierscope_bin, "analyze", trace, "--format", "json").stdout)
    b = json.loads(run(tierscope_bin, "analyze", out, "--format", "json").stdout)
    assert [f["rule"] for f in a["findings"] if f["rule"] != "roofline"] == [f["rule"] for f in b["findings"]]


def test_thread_ids_beyond_24_bits_stay_distinct(tierscope_bin, tmp_path):
    trace = TRACES / "control.json.gz"
    need(trace)
    out = tmp_path / "c.sqlite"
    assert "thread ids beyond 24 bits renumbered" in run(tierscope_bin, "export", trace, out).stdout
    import gzip
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    threads = {(e["pid"], e["tid"]) for e in events if e.get("cat") == "cuda_runtime"}
    db = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    (n,), = db.execute("SELECT count(DISTINCT globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME")
    assert n == len(threads)


def test_an_existing_out_is_kept_unless_forced(tierscope_bin, tmp_path):
    trace = TRACES / "df_index_resolver.json.gz"
    need(trace)
    out = tmp_path / "t.sqlite"
    out.write_text("keep me")
    p = run(tierscope_bin, "export", trace, out, ok=False)
    assert p.returncode == 2 and "--force" in p.stderr and out.read_text() == "keep me"
    run(tierscope_bin, "export", trace, out, "--force")
    assert out.stat().st_size > 1000
    p = run(tierscope_bin, "export", out, out, "--force", ok=False)
    assert p.returncode == 2 and "is the input" in p.stderr


def test_a_job_exports_one_file_per_rank(tierscope_bin, tmp_path):
    need(*PAIR)
    job = tmp_path / "job"
    job.mkdir()
    for p in PAIR:
        (job / p.name).symlink_to(p)
    run(tierscope_bin, "export", job, tmp_path / "out")
    assert sorted(os.listdir(tmp_path / "out")) == ["report_0.sqlite", "report_1.sqlite"]
    a = json.loads(run(tierscope_bin, "analyze", job, "--format", "json").stdout)
    b = json.loads(run(tierscope_bin, "analyze", tmp_path / "out", "--format", "json").stdout)
    ra = {r["name"]: r for r in a["reports"]}
    rb = {r["name"]: r for r in b["reports"]}
    for name in ("temporal_breakdown", "kernel_type_breakdown", "comm_comp_overlap"):
        assert ra[name]["rows"] == rb[name]["rows"], name


T4_JOB = TRACES / "vendors" / "t4_p2p_job"


def test_a_job_of_rank_folders_with_a_file_per_profiler_cycle_exports_every_window(tierscope_bin, tmp_path):
    # The real 4-rank T4 job as users have it: rank_N/ folders of 3 profiler cycles each
    # ("two traces are rank 0" once refused it). Every window is a report, numbered in
    # time order, and the export reads back as the same job.
    need(T4_JOB)
    p = run(tierscope_bin, "export", T4_JOB, tmp_path / "out")
    assert sorted(os.listdir(tmp_path / "out")) == [f"report_{r}.{w}.sqlite" for r in range(4) for w in (1, 2, 3)]
    assert "rank 0, window 1 of 3" in p.stdout
    a = json.loads(run(tierscope_bin, "analyze", T4_JOB, "--format", "json").stdout)
    b = json.loads(run(tierscope_bin, "analyze", tmp_path / "out", "--format", "json").stdout)
    assert [(r["rank"], r["windows"]) for r in b["ranks"]] == [(r["rank"], r["windows"]) for r in a["ranks"]] == \
        [(r, 3) for r in range(4)]
    # Its sends and recvs read back as sends and recvs: nsys's tables have no column for a
    # collective's name, group or peer, so the export keeps them in tierscopeArgs. Without
    # them the SendRecv kernels were matched as collectives and named rank 3 a straggler
    # 442 ms late, and the clocks were aligned otherwise.
    ra = {t["name"]: t for t in a["reports"]}
    rb = {t["name"]: t for t in b["reports"]}
    for name in ("straggler_collectives", "stragglers", "straggler_ranks"):
        assert ra[name]["rows"] == rb[name]["rows"], name
    assert ra["straggler_collectives"]["rows"] == [] and b["alignment"] == a["alignment"]
    # Window n of a rank is the n-th of its files in time order: each report's calls end
    # before the next one's begin (the exports keep the traces' wall clock).
    for r in range(4):
        spans = []
        for w in (1, 2, 3):
            con = sqlite3.connect(f"file:{tmp_path / 'out' / f'report_{r}.{w}.sqlite'}?mode=ro", uri=True)
            try:
                spans.append(con.execute("SELECT min(start), max(end) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone())
            finally:
                con.close()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), (r, spans)


def test_windows_of_ranks_known_only_by_their_folders_read_back_as_those_ranks(tierscope_bin, tmp_path):
    # The T4 job without distributedInfo: ranks come from the rank_N/ folders alone. Each
    # report records the rank it was given, so report_<r>.<n> reads back as rank r (by
    # name alone, report_0.2 and report_0.3 would both say 0, and the job became 12 ranks).
    need(T4_JOB)
    import gzip
    job = tmp_path / "job"
    for f in T4_JOB.glob("rank_*/*.json.gz"):
        doc = json.loads(gzip.open(f).read())
        doc.pop("distributedInfo", None)
        (job / f.parent.name).mkdir(parents=True, exist_ok=True)
        with gzip.open(job / f.parent.name / f.name, "wt") as out:
            json.dump(doc, out)
    a = json.loads(run(tierscope_bin, "analyze", job, "--format", "json").stdout)
    assert [(r["rank"], r["rank_from"], r["windows"]) for r in a["ranks"]] == [(r, "directory name", 3) for r in range(4)]
    run(tierscope_bin, "export", job, tmp_path / "out")
    b = json.loads(run(tierscope_bin, "analyze", tmp_path / "out", "--format", "json").stdout)
    assert [(r["rank"], r["windows"]) for r in b["ranks"]] == [(r, 3) for r in range(4)]
    for r in b["ranks"]:
        assert all(f"report_{r['rank']}." in p for p in r["files"]), r["files"]


def test_bad_input_is_one_line_and_writes_nothing(tierscope_bin, tmp_path):
    out = tmp_path / "t.sqlite"
    p = run(tierscope_bin, "export", tmp_path / "missing.json", out, ok=False)
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and "missing.json" in p.stderr
    assert not out.exists()
    p = run(tierscope_bin, "export", tmp_path / "missing.json", out, "--format", "xml", ok=False)
    assert p.returncode == 2 and "--format" in p.stderr


def test_a_forced_parquet_export_replaces_only_its_own_parts_and_only_once_written(tierscope_bin, tmp_path):
    # --force once deleted OUT/<table>/ whole before reading anything: an input kept there
    # was lost, a user's file beside the parts went with it, and a failed export left the
    # old tables deleted.
    pytest.importorskip("pyarrow")
    pytest.importorskip("tierscope")
    trace = TRACES / "df_index_resolver.json.gz"
    need(trace)
    inside = tmp_path / "p" / "kernels" / "x.json.gz"
    inside.parent.mkdir(parents=True)
    inside.write_bytes(trace.read_bytes())
    for out in (tmp_path / "p", tmp_path / "p" / "kernels"):
        p = run(tierscope_bin, "export", inside, out, "--format", "parquet", "--force", ok=False)
        assert p.returncode == 2 and "is, or holds, the input" in p.stderr, p.stderr
        assert inside.read_bytes() == trace.read_bytes()
    out = tmp_path / "pq"
    run(tierscope_bin, "export", trace, out, "--format", "parquet")
    [rank] = os.listdir(out / "kernels")  # the trace's own rank
    (out / "kernels" / "notes.txt").write_text("mine")
    old = (out / "kernels" / rank / "part-0.parquet").read_bytes()
    truncated = tmp_path / "cut.json.gz"
    truncated.write_bytes(trace.read_bytes()[:2000])
    p = run(tierscope_bin, "export", truncated, out, "--format", "parquet", "--force", ok=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert (out / "kernels" / rank / "part-0.parquet").read_bytes() == old  # the old export stands
    run(tierscope_bin, "export", trace, out, "--format", "parquet", "--force")
    assert (out / "kernels" / "notes.txt").read_text() == "mine"
    assert sorted(os.listdir(out / "kernels")) == ["notes.txt", rank]
    assert not [n for n in os.listdir(out) if n.startswith(".")]  # no staging left behind


def test_a_forced_parquet_export_refuses_what_it_could_not_replace_and_sweeps_its_leftovers(tierscope_bin, tmp_path):
    pytest.importorskip("pyarrow")
    pytest.importorskip("tierscope")
    trace = TRACES / "df_index_resolver.json.gz"
    need(trace)
    out = tmp_path / "pq"
    run(tierscope_bin, "export", trace, out, "--format", "parquet")
    [rank] = os.listdir(out / "kernels")
    old = (out / "kernels" / rank / "part-0.parquet").read_bytes()
    # A folder named like a part would stop the swap half way: refused before anything moves.
    (out / "kernels" / rank / "part-9.parquet").mkdir()
    p = run(tierscope_bin, "export", trace, out, "--format", "parquet", "--force", ok=False)
    assert p.returncode == 2 and "is not a plain file, where a part goes" in p.stderr, p.stderr
    assert (out / "kernels" / rank / "part-0.parquet").read_bytes() == old
    (out / "kernels" / rank / "part-9.parquet").rmdir()
    # A link where a rank's folder goes would take the parts elsewhere: refused too.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "ops" / "rank=77").symlink_to(elsewhere)
    p = run(tierscope_bin, "export", trace, out, "--format", "parquet", "--force", ok=False)
    assert p.returncode == 2 and "rank=77: is not a plain directory" in p.stderr, p.stderr
    (out / "ops" / "rank=77").unlink()
    # A crashed run's hidden part is swept, not left beside the new one.
    (out / "kernels" / rank / ".new-part-0.parquet").write_bytes(b"half")
    run(tierscope_bin, "export", trace, out, "--format", "parquet", "--force")
    assert sorted(os.listdir(out / "kernels" / rank)) == ["part-0.parquet"]


def test_a_trace_with_no_timeline_event_is_not_exported_as_empty_tables(tierscope_bin, tmp_path):
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "x"}}]}))
    for args, out in (((), tmp_path / "m.sqlite"), (("--format", "parquet"), tmp_path / "m")):
        p = run(tierscope_bin, "export", meta, out, *args, ok=False)
        assert p.returncode == 2 and "holds no timeline event" in p.stderr and "nothing to export" in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
        assert not out.exists()


def test_parquet_tables_are_read_by_duckdb_with_the_kernel_totals(tierscope_bin, tmp_path):
    need(*PAIR)
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    pytest.importorskip("tierscope")
    job = tmp_path / "job"
    job.mkdir()
    for p in PAIR:
        (job / p.name).symlink_to(p)
    run(tierscope_bin, "export", job, tmp_path / "pq", "--format", "parquet")
    # A second export into the same place is refused, then replaces the tables with --force.
    p = run(tierscope_bin, "export", PAIR[0], tmp_path / "pq", "--format", "parquet", ok=False)
    assert p.returncode == 2 and "--force" in p.stderr
    run(tierscope_bin, "export", job, tmp_path / "pq", "--format", "parquet", "--force")
    assert sorted(os.listdir(tmp_path / "pq" / "kernels")) == ["rank=0", "rank=1"]
    con = duckdb.connect()
    got = con.execute(f"SELECT rank, name, count(*), sum(dur) FROM read_parquet('{tmp_path}/pq/kernels/*/*.parquet', "
                      "hive_partitioning = true) GROUP BY rank, name").fetchall()
    for rank, trace in enumerate(PAIR):
        kern = json.loads(run(tierscope_bin, "stats", trace, "--report", "cuda_gpu_kern_sum", "--format",
                              "json").stdout)
        want = {r["Name"]: (r["Instances"], r["Total Time (ns)"]) for r in kern["reports"][0]["rows"]}
        assert {n: (c, int(t)) for r, n, c, t in got if int(r) == rank} == want, rank


def test_parquet_of_a_job_of_profiler_cycles_keeps_each_window(tierscope_bin, tmp_path):
    need(T4_JOB)
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("pyarrow")
    pytest.importorskip("tierscope")
    run(tierscope_bin, "export", T4_JOB, tmp_path / "pq", "--format", "parquet")
    assert sorted(os.listdir(tmp_path / "pq" / "runtime")) == [f"rank={r}" for r in range(4)]
    assert sorted(os.listdir(tmp_path / "pq" / "runtime" / "rank=0")) == [f"part-{w}.parquet" for w in (1, 2, 3)]
    got = duckdb.connect().execute(
        f"SELECT rank, window_number, count(*) FROM read_parquet('{tmp_path}/pq/runtime/*/*.parquet', hive_partitioning = true) "
        "GROUP BY rank, window_number ORDER BY rank, window_number").fetchall()
    assert [(int(r), w) for r, w, _ in got] == [(r, w) for r in range(4) for w in (1, 2, 3)]
    # Window n of rank r holds what report_<r>.<n>.sqlite holds: both exports number the
    # windows alike (kernels, copies and sets, window by window).
    run(tierscope_bin, "export", T4_JOB, tmp_path / "sq")
    for table, sql in (("kernels", "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
                       ("memops", "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY) + "
                                  "(SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET)")):
        pq_counts = {(int(r), w): n for r, w, n in duckdb.connect().execute(
            f"SELECT rank, window_number, count(*) FROM read_parquet('{tmp_path}/pq/{table}/*/*.parquet', "
            "hive_partitioning = true) GROUP BY rank, window_number").fetchall()}
        for r in range(4):
            for w in (1, 2, 3):
                con = sqlite3.connect(f"file:{tmp_path / 'sq' / f'report_{r}.{w}.sqlite'}?mode=ro", uri=True)
                try:
                    assert con.execute(sql).fetchone()[0] == pq_counts.get((r, w), 0), (table, r, w)
                finally:
                    con.close()
        assert sum(pq_counts.values()) > 0, table


def test_exported_collective_args_read_back_and_hostile_ones_are_ignored(tierscope_bin, tmp_path):
    rank3 = sorted((T4_JOB / "rank_3").glob("*.json.gz"))
    need(T4_JOB)
    out = tmp_path / "r3.sqlite"
    run(tierscope_bin, "export", rank3[0], out)
    con = sqlite3.connect(out)
    [(args,)] = con.execute("SELECT tierscopeArgs FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE tierscopeArgs != ''").fetchall()
    assert '"Collective name": "send"' in args and '"Dst Rank": 0' in args, args
    kern = json.loads(run(tierscope_bin, "stats", out, "--report", "nccl_sum", "--format", "json").stdout)
    assert [r["Collective"] for r in kern["reports"][0]["rows"]] == ["send"]
    # What a file says there is data: malformed, nested past reason or huge, it is left out.
    for hostile in ('"Collective name": ', "[" * 3000, '"x": "' + "a" * 10000 + '"', '"Collective name": 7}, {"a": 1',
                    '"Collective name": ' + "[" * 2000 + "]" * 2000):
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET tierscopeArgs = ?", (hostile,))
        con.commit()
        p = run(tierscope_bin, "stats", out, "--report", "cuda_gpu_kern_sum,nccl_sum", "--format", "json")
        reports = json.loads(p.stdout)["reports"]
        assert reports[0]["rows"] and not reports[1]["rows"], hostile[:40]
    # Only the keys the export writes are read back: a file does not set a kernel's correlation.
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET tierscopeArgs = ?",
                ('"correlation": 99999, "External id": 5, ' + args,))
    con.commit()
    con.close()
    tierscope = pytest.importorskip("tierscope")
    t = tierscope.read_trace(out)
    assert list(t.kernels["correlation"]) != [99999]
    nccl = json.loads(run(tierscope_bin, "stats", out, "--report", "nccl_sum", "--format", "json").stdout)
    assert [r["Collective"] for r in nccl["reports"][0]["rows"]] == ["send"]
