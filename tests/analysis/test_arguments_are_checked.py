"""Arguments the analyzer cannot honour are refused in one line rather than run as
something else: a --unit no annotation has (it read the whole trace), a --report list
naming nothing (it printed nothing), -s/-c/--replay-passes beside a CSV or trace they do
not apply to (ignored), one file given twice as a job (two ranks), a NaN limit to sweep; and
the refusal names what was wrong (an unknown command, a hex or infinite number, a directory
for a file, a size above the cap, a device the trace does not name).
And what an import noted reaches the terminal of commands whose output does not carry it."""
from __future__ import annotations

import gzip
import json
import os
import subprocess

import pytest

from test_outputs_keep_inputs import TRACE


@pytest.fixture()
def trace(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps(TRACE))
    return p


def run(bin_path, *args):
    return subprocess.run([str(bin_path), *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, says", [
    (("whatif", "{t}", "--change", "gemm=0.5", "--unit", "nosuch"), "--unit 'nosuch': no annotation of that name"),
    (("stats", "{t}", "--report", "critical_path", "--unit", "nosuch"), "--unit 'nosuch': no annotation of that name"),
    (("diff", "{t}", "{t}", "--unit", "nosuch"), "--unit 'nosuch': no annotation of that name"),
    (("stats", "{t}", "--report", ","), "--report ',' names no report"),
    (("kernel", "--from-trace", "{t}", "-s", "100"), "--launch-skip excludes --from-trace"),
    (("kernel", "--from-trace", "{t}", "--replay-passes", "3"), "--replay-passes excludes --from-trace"),
    (("analyze", "{t}", "{t}"), "are the same file: a job takes each rank's trace once"),
    (("sweep", "--slo-ms", "nan"), "--slo-ms and --memory-budget-mb must be finite and >= 0"),
    # Each says what was wrong, not something near it.
    (("frobnicate", "{t}"), "'frobnicate' is not a command (the commands: bench, "),
    (("whatif", "{t}", "--change", "gemm=0x1p-1"), "'0x1p-1' must be a number in [0, "),
    (("whatif", "{t}", "--change", "gemm=inf"), "'inf' must be a number in [0, "),
    (("analyze", "{t}", "--short-kernel-us", "inf"), "must be a decimal number in [0.001, 1000000000] us, got inf"),
    (("analyze", "{t}", "--short-kernel-us", "0"), "must be in [0.001, 1000000000] us, got 0"),
    (("analyze", "{t}", "--device-spec", "{d}"), "--device-spec: {d}: a directory, not a file"),
    (("analyze", "{t}", "--memory-budget", "0x10G"), "--memory-budget: '0x10G' is not a size"),
    (("sweep", "--batch-sizes", "99999999999999999999"), "'99999999999999999999' is above 1000000, the most it takes"),
    (("sweep", "--batch-sizes", "2000000"), "'2000000' is above 1000000, the most it takes"),
    (("sweep", "--batch-sizes", "-3"), "'-3' is not a positive integer"),
    (("whatif", "{n}", "--change", "precision=bf16"), "needs the device's peaks: the trace names no device"),
], ids=lambda a: " ".join(a) if isinstance(a, tuple) else "")
def test_an_argument_that_cannot_be_honoured_is_one_line(tierscope_bin, trace, tmp_path, args, says):
    nameless = tmp_path / "nameless.json"  # the same trace with no device named
    nameless.write_text(json.dumps({k: v for k, v in TRACE.items() if k != "deviceProperties"}))
    fill = {"t": trace, "d": tmp_path, "n": nameless}
    p = run(tierscope_bin, *[a.format(**fill) for a in args])
    says = says.format(**fill)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], p.stderr


@pytest.mark.parametrize("args", [
    ("analyze", "{f}"), ("stats", "{f}", "--report", "op_sum"), ("diff", "{t}", "{f}"),
    ("whatif", "{f}", "--change", "gemm=0.5"), ("export", "{f}", "{o}"), ("kernel", "--ncu-csv", "{f}"),
    ("analyze", "{t}", "--device-spec", "{f}"), ("analyze", "{t}", "{f}"),
    ("analyze", "/dev/zero"),
], ids=lambda a: " ".join(a))
def test_a_fifo_or_device_is_refused_at_once_not_waited_on(tierscope_bin, trace, tmp_path, args):
    # Opening a FIFO blocks until a writer comes (every command hung); a device such as
    # /dev/zero reads without end. Neither is a file to analyse.
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    fill = {"f": fifo, "t": trace, "o": tmp_path / "out.sqlite"}
    p = subprocess.run([str(tierscope_bin), *[a.format(**fill) for a in args]], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a regular file" in lines[0], p.stderr
    assert not (tmp_path / "out.sqlite").exists()


def test_a_unit_no_rank_of_a_job_has_is_refused(tierscope_bin, tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    for rank in (0, 1):
        (job / f"rank{rank}.json").write_text(json.dumps({**TRACE, "distributedInfo": {"rank": rank, "world_size": 2}}))
    for args in (("analyze", job, "--unit", "nosuch"), ("whatif", job, "--change", "gemm=0.5", "--unit", "nosuch")):
        p = run(tierscope_bin, *args)
        assert p.returncode == 2 and "--unit 'nosuch': no annotation of that name in any of the job's 2 traces" in p.stderr


def test_import_notes_reach_the_terminal_of_stats_and_whatif(tierscope_bin, trace, tmp_path):
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(trace.read_bytes()) + b"garbage")
    for args in (("stats", gz, "--report", "cuda_gpu_kern_sum"), ("whatif", gz, "--change", "gemm=0.5")):
        p = run(tierscope_bin, *args)
        assert p.returncode == 0, p.stderr
        assert f"tierscope: note: {gz}: ignored 7 bytes after its gzip data that are not a gzip member" in p.stderr
    p = run(tierscope_bin, "stats", trace, "--report", "cuda_gpu_kern_sum", "--memory-budget", "1")
    assert p.returncode == 0 and "read past the memory budget of 1 B" in p.stderr, p.stderr
    # import_stats carries the notes itself: not said twice.
    p = run(tierscope_bin, "stats", gz, "--report", "import_stats")
    assert p.returncode == 0 and p.stderr.count("ignored 7 bytes") == 0 and p.stdout.count("ignored 7 bytes") == 1
    # ... but not as CSV, whose rows have no place for a note: then the terminal has it.
    p = run(tierscope_bin, "stats", gz, "--report", "import_stats", "--format", "csv")
    assert p.returncode == 0 and p.stderr.count("ignored 7 bytes") == 1, p.stderr
