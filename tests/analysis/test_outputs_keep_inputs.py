"""No command's output replaces what it read, or anything that is not a regular file: a
report, page or overlay named as one of the command's inputs is refused in one line with
the input left as it was (kernel -o, whatif/diff/analyze --html, analyze --overlay,
export, Python's export_sqlite), and so is a FIFO or a directory in the output's place."""
from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

TRACE = {"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 8, "args": {"External id": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 5,
     "args": {"correlation": 1, "External id": 1}},
    {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 10, "dur": 1000,
     "args": {"correlation": 1, "device": 0, "stream": 7, "grid": [1, 1, 1], "block": [128, 1, 1]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 10, "dur": 1002,
     "args": {"correlation": 2}}]}


@pytest.fixture()
def traces(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for p in (a, b):
        p.write_text(json.dumps(TRACE))
    return a, b


def refused(bin_path, *args) -> str:
    p = subprocess.run([str(bin_path), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert p.returncode != 0, p.stdout
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.mark.parametrize("args", [
    ("kernel", "--from-trace", "{a}", "-o", "{a}"),
    ("whatif", "{a}", "--change", "gemm=0.5", "--html", "{a}"),
    ("diff", "{a}", "{b}", "--html", "{b}"),
    ("analyze", "{a}", "--html", "{a}"),
    ("analyze", "{a}", "--overlay", "{a}"),
    ("export", "{a}", "{a}", "--force"),
], ids=lambda a: " ".join(a[:1] + a[-2:-1]))
def test_an_output_named_as_an_input_is_refused_and_the_input_kept(tierscope_bin, traces, args):
    a, b = traces
    before = a.read_bytes(), b.read_bytes()
    line = refused(tierscope_bin, *[x.format(a=a, b=b) for x in args])
    assert "input" in line, line
    assert (a.read_bytes(), b.read_bytes()) == before


def test_a_page_is_never_written_over_a_rank_of_a_job_or_over_another_output(tierscope_bin, tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    for rank in (0, 1):
        (job / f"rank{rank}.json").write_text(json.dumps({**TRACE, "distributedInfo": {"rank": rank, "world_size": 2}}))
    before = (job / "rank0.json").read_bytes()
    for args in (("analyze", job, "--html", job / "rank0.json"),
                 ("whatif", job, "--change", "gemm=0.5", "--html", job / "rank0.json"),
                 ("diff", job, job, "--html", job / "rank0.json")):
        line = refused(tierscope_bin, *args)
        assert "rank0.json: is the input" in line or "is an input" in line, line
    assert (job / "rank0.json").read_bytes() == before
    out = tmp_path / "page.html"
    line = refused(tierscope_bin, "analyze", job / "rank0.json", "--html", out, "--overlay", out)
    assert "--overlay and --html are both" in line, line
    assert not out.exists()


def test_an_output_that_is_not_a_regular_file_is_refused(tierscope_bin, traces, tmp_path):
    a, _ = traces
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for args in (("export", a, fifo, "--force"), ("whatif", a, "--change", "gemm=0.5", "--html", fifo),
                 ("kernel", "--from-trace", a, "-o", fifo)):
        assert "exists and is not a regular file" in refused(tierscope_bin, *args)
        assert stat.S_ISFIFO(fifo.stat().st_mode)
    (tmp_path / "dir").mkdir()
    assert "is a directory" in refused(tierscope_bin, "kernel", "--from-trace", a, "-o", tmp_path / "dir")


def test_python_export_sqlite_keeps_the_trace_and_an_existing_file(traces, tmp_path):
    tierscope = pytest.importorskip("tierscope")
    a, _ = traces
    before = a.read_bytes()
    t = tierscope.read_trace(str(a))
    with pytest.raises(Exception, match="is an input"):
        t.export_sqlite(a, force=True)
    assert a.read_bytes() == before
    out = tmp_path / "out.sqlite"
    out.write_text("keep me")
    with pytest.raises(FileExistsError, match="force"):
        t.export_sqlite(out)
    assert out.read_text() == "keep me"
    assert "kernels" in t.export_sqlite(out, force=True)
    assert out.read_bytes()[:15] == b"SQLite format 3"
