"""The Python package against the CLI and against Python's json: read_trace's tables count
what the trace holds, and report / analyze / diff give the CLI's numbers (the same JSON),
on corpus traces, the corpus pair as a job and the nsys export. Errors are exceptions with
the CLI's message. The package is installed into the test venv by scripts/test.sh."""
from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

tierscope = pytest.importorskip("tierscope")

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus"
DDP = CORPUS / "traces" / "df_index_resolver.json.gz"
PAIR = [CORPUS / "traces" / "field" / f"hta__trace_filter__sampled_rank-{r}.json.gz" for r in (0, 1)]
NSYS = CORPUS / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"


def need(*paths):
    for p in paths:
        if not p.exists():
            pytest.skip(f"corpus file missing: {p}")


def cli_json(bin_path, *args):
    p = subprocess.run([str(bin_path), *map(str, args), "--format", "json"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def records(df):
    return json.loads(df.to_json(orient="records"))


def same_rows(frame, table):
    assert list(frame.columns) == table["columns"]
    got = records(frame)
    assert len(got) == len(table["rows"])
    for a, b in zip(got, table["rows"]):
        for c in table["columns"]:
            if isinstance(b.get(c), float):
                assert a[c] == pytest.approx(b[c], rel=1e-12, abs=1e-9), c
            else:
                assert a[c] == b.get(c), c


def test_tables_hold_every_event_of_the_trace():
    need(DDP)
    with gzip.open(DDP, "rt") as f:
        events = json.load(f)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    t = tierscope.read_trace(DDP)
    k = t.kernels
    assert len(k) == len(kernels)
    assert int(k["dur"].sum()) == round(sum(e["dur"] for e in kernels) * 1000)
    assert set(k["name"].unique()) == {e["name"] for e in kernels}
    assert (k["stream"] == k["tid"]).all()
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    assert len(t.ops) == len(ops)
    # Each table's names are its own; memory operations carry their bytes.
    assert set(k["name"].cat.categories) == {e["name"] for e in kernels}
    copies = [e for e in events if e.get("cat") in ("gpu_memcpy", "gpu_memset")]
    assert int(t.memops["bytes"].sum()) == sum(int(e["args"]["bytes"]) for e in copies)
    assert "flops" not in k.columns  # a PyTorch trace has no cost-model FLOPs
    # Every event is in exactly one table, by its position in the trace.
    tables = ["kernels", "ops", "runtime", "memops", "annotations", "syncs", "memory", "other"]
    indexes = sorted(i for name in tables for i in t.table(name)["index"])
    assert indexes == list(range(len(t)))
    # Flows: each launch -> kernel pair shares its correlation.
    f = t.flows
    assert len(f) > 0
    corr = t.runtime.set_index("index")["correlation"]
    assert (corr.loc[f["launch_index"]].to_numpy() == f["correlation"].to_numpy()).all()


@pytest.mark.parametrize("name", ["cuda_gpu_kern_sum", "op_sum", "cuda_api_sum", "temporal_breakdown",
                                  "kernel_breakdown", "nvtx_kern_sum", "trace_quality", "roofline_sum"])
def test_reports_are_the_clis(name, tierscope_bin):
    need(DDP)
    frame = tierscope.report(tierscope.read_trace(DDP), name)
    cli = cli_json(tierscope_bin, "stats", DDP, "--report", name)["reports"][0]
    assert frame.attrs["title"] == cli["title"]
    same_rows(frame, cli)


def test_the_roofline_is_a_dataframe_like_every_report(tierscope_bin):
    # On a field trace with shapes: FLOPs, bytes and % of roof per op and shape, as the CLI's.
    h100 = DDP.parent / "field" / "h100__gaunernst_bert-small-uncased__1016001.json.gz"
    need(h100)
    frame = tierscope.report(tierscope.read_trace(h100), "op_roofline")
    cli = cli_json(tierscope_bin, "stats", h100, "--report", "op_roofline")["reports"][0]
    same_rows(frame, cli)
    gemm = frame[frame["Category"] == "GEMM"]
    assert len(gemm) == 4 and (gemm["GFLOP"] > 0).all() and (gemm["Roof (%)"] > 0).all()


def test_every_listed_report_runs():
    need(DDP)
    t = tierscope.read_trace(DDP)
    names = tierscope.report_names()
    assert len(names) >= 20
    for n in names:
        assert tierscope.report(t, n).attrs["name"] == n


def test_analyze_one_trace_a_job_and_a_diff_equal_the_cli(tierscope_bin):
    need(DDP, *PAIR)
    one = tierscope.analyze(DDP)
    cli = cli_json(tierscope_bin, "analyze", DDP)
    assert [f["rule"] for f in one["findings"]] == [f["rule"] for f in cli["findings"]]
    frame = tierscope.findings(DDP)
    assert list(frame["rule"]) == [f["rule"] for f in cli["findings"]]
    assert list(frame["explained_ns"]) == [f["explained_ns"] for f in cli["findings"]]
    same_rows(one["reports"]["cuda_gpu_kern_sum"], next(r for r in cli["reports"] if r["name"] == "cuda_gpu_kern_sum"))

    job = tierscope.analyze(PAIR)
    cli = cli_json(tierscope_bin, "analyze", *PAIR)
    assert [r["rank"] for r in job["ranks"]] == [0, 1]
    for r in cli["reports"]:
        same_rows(job["reports"][r["name"]], r)

    d = tierscope.diff(PAIR[0], PAIR[1])
    cli = cli_json(tierscope_bin, "diff", *PAIR)
    assert set(d["reports"]) == {r["name"] for r in cli.get("reports", [])}


def test_a_diff_against_an_empty_trace_raises_as_the_cli_refuses(tmp_path):
    need(*PAIR)
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": []}')
    with pytest.raises(ValueError, match="empty.json: the trace holds no timeline event"):
        tierscope.diff(PAIR[0], empty)


def test_a_diff_of_two_jobs_is_the_clis(tierscope_bin, tmp_path):
    need(*PAIR)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        for p in PAIR:
            (tmp_path / name / p.name).symlink_to(p)
    d = tierscope.diff(tmp_path / "a", tmp_path / "b")
    cli = cli_json(tierscope_bin, "diff", tmp_path / "a", tmp_path / "b")
    assert set(d["reports"]) == {r["name"] for r in cli["reports"]}
    same_rows(d["reports"]["job_diff_ranks"], next(r for r in cli["reports"] if r["name"] == "job_diff_ranks"))


def test_allocations_are_addresses_and_sizes():
    trace = CORPUS / "traces" / "field" / "b200__eager_trace.json.gz"
    need(trace)
    with gzip.open(trace, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("name") == "[memory]"]
    m = tierscope.read_trace(trace).memory
    assert len(m) == len(events)
    assert sorted(m["addr"]) == sorted(int(e["args"]["Addr"]) for e in events)
    assert sorted(m["bytes"]) == sorted(int(e["args"]["Bytes"]) for e in events)


def test_an_nsys_export_reads_as_a_trace():
    need(NSYS)
    import sqlite3
    db = sqlite3.connect(f"file:{NSYS}?mode=ro", uri=True)
    (n, total), = db.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    t = tierscope.read_trace(NSYS)
    assert t.format == "nsys-sqlite"
    assert len(t.kernels) == n
    assert int(t.kernels["dur"].sum()) == total
    assert set(t.kernels["name"]) == {"saxpy(double *, double *, double *, double, int)"}


def test_errors_are_exceptions_with_the_clis_message(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such.json"):
        tierscope.read_trace(tmp_path / "no-such.json")
    bad = tmp_path / "cut.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1,')
    with pytest.raises(ValueError, match="cut.json"):
        tierscope.read_trace(bad)
    with pytest.raises(ValueError, match="unknown report"):
        tierscope.report(tierscope.read_trace(PAIR[0]) if PAIR[0].exists() else bad, "no_such_report")


def test_html_is_the_page_analyze_html_writes(tierscope_bin, tmp_path):
    need(PAIR[0], CORPUS / "traces" / "vendors" / "t4_p2p_job")
    job = CORPUS / "traces" / "vendors" / "t4_p2p_job"
    for source, cli_args in ((PAIR[0], [PAIR[0]]), (job, [job])):
        out = tmp_path / "cli.html"
        p = subprocess.run([str(tierscope_bin), "analyze", *map(str, cli_args), "--html", str(out)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        page = tierscope.html(source)
        assert isinstance(page, tierscope.Page) and page.html == out.read_text()
        # In Jupyter: the page inline, in an iframe of its own.
        shown = page._repr_html_()
        assert shown.startswith("<iframe") and "srcdoc=" in shown and "<script" not in shown
        assert page.save(tmp_path / "saved.html") == str(tmp_path / "saved.html")
        assert (tmp_path / "saved.html").read_text() == page.html
    # A Trace object gives the same page as its path; a step it lacks is a ValueError.
    trace = tierscope.read_trace(PAIR[0])
    assert tierscope.html(trace).html == tierscope.html(PAIR[0]).html
    with pytest.raises(ValueError, match="names no step of this trace"):
        tierscope.html(trace, step="ProfilerStep#123456")


def test_entries_the_import_skipped_are_a_warning_and_a_property(tmp_path):
    need(DDP)
    doc = json.loads(gzip.open(DDP).read())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    cut = 0
    for e in events:
        if e.get("ph") == "X" and "ts" in e and cut < 3:
            del e["ts"]
            cut += 1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.warns(UserWarning, match=r"3 of its \d+ entries were malformed and skipped \(3 missing ts\)"):
        t = tierscope.read_trace(bad)
    assert t.skipped.startswith(f"{bad}: 3 of its ")
    assert tierscope.read_trace(DDP).skipped == ""


def test_a_file_name_that_is_not_utf8_is_refused_naming_it(tierscope_bin, tmp_path):
    # os.listdir gives such a name with surrogate escapes, which the library's string
    # arguments refuse: read_trace raised a TypeError about incompatible arguments, and
    # the Parquet export of its folder a bare codec error.
    trace = DDP
    need(trace)
    folder = tmp_path / "job"
    folder.mkdir()
    import os
    with open(os.path.join(os.fsencode(folder), b"r\xffx.json.gz"), "wb") as f:
        f.write(trace.read_bytes())
    [name] = os.listdir(folder)
    with pytest.raises(ValueError, match="not UTF-8"):
        tierscope.read_trace(folder / name)
    with pytest.raises(ValueError, match="not UTF-8"):
        tierscope.read_trace(os.fsencode(folder / name))
    import sys
    for target in (folder / name, folder):
        p = subprocess.run([str(tierscope_bin), "export", str(target).encode("utf-8", "surrogateescape"),
                            str(tmp_path / "pq"), "--format", "parquet"], capture_output=True, text=True,
                           timeout=300, env={**os.environ, "TIERSCOPE_PYTHON": sys.executable})
        assert p.returncode == 2 and "not UTF-8" in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_report_marks_what_rests_on_a_failed_check_as_stats_does(tierscope_bin, tmp_path):
    # Python's report() gave the numbers with no mark where stats and analyze mark them.
    need(DDP)
    with gzip.open(DDP, "rt") as f:
        doc = json.load(f)
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    kernel["dur"] = 9e12  # far longer than the whole capture: endless_events fails
    path = tmp_path / "endless.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    frame = tierscope.report(tierscope.read_trace(path), "hot_kernels")
    cli = cli_json(tierscope_bin, "stats", path, "--report", "hot_kernels")["reports"][0]
    assert any(n.startswith("MARKED") for n in frame.attrs["notes"]), frame.attrs
    assert "Failed check" in frame.columns and list(frame.columns) == cli["columns"]
    same_rows(frame, cli)
