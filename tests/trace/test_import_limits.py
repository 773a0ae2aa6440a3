"""`tierscope analyze` on inputs it used to read whole before refusing them, or to come out
of empty with exit status 0 (issue 25): a plain file past 4 GiB, a big file without
newlines, a minified one-line trace, a trace with ill-formed UTF-8, one whose every entry
is malformed, and the real 2-rank Huawei Ascend job whose timestamps are strings. Peak
memory is the child's own (os.wait4), a bound on memory, not a timing."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ASCEND = REPO_ROOT.parent / "shared" / "corpus" / "traces" / "vendors" / "ascend_2rank"
ASCEND_TRACES = [ASCEND / f"rank{r}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json.gz" for r in (0, 1)]
MB = 1 << 20


def run(bin_path, *args, timeout=300):
    """(exit status, stdout, stderr) of one tierscope run."""
    p = subprocess.Popen([str(bin_path), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")


# Runs the command from a fresh, small interpreter: a child's peak RSS (ru_maxrss) counts
# the memory of the process it was forked from until its exec, and this one (pytest with
# torch loaded) holds hundreds of MB.
MEASURE = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
out = p.stdout.read()
_, status, usage = os.wait4(p.pid, 0)
sys.stdout.buffer.write(out)
sys.stderr.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss * 1024}")
"""


def run_measured(bin_path, *args, timeout=300):
    """Like run(), plus the child's peak RSS in bytes, from wait4 (Linux reports KiB)."""
    p = subprocess.run([sys.executable, "-S", "-c", MEASURE, str(bin_path), *map(str, args)],
                       capture_output=True, timeout=timeout)
    code, peak = map(int, p.stderr.decode().split()[-2:])
    return code, p.stdout.decode(errors="replace"), peak


def test_a_plain_file_over_4_gib_is_streamed_not_read_whole(tierscope_bin, tmp_path):
    big = tmp_path / "huge.json"
    with open(big, "wb") as f:
        f.truncate(4500 * MB)  # sparse: 4.5 GB of zeros on no disk
    code, out, peak = run_measured(tierscope_bin, "analyze", big)
    assert code != 0, out
    first = out.splitlines()[0]
    assert f"{big}: invalid JSON at byte 0: expected '{{' or '['" in first, out
    # Streamed: the first window shows it is not JSON; nothing else is read or kept.
    assert peak < 200 * MB, f"peak RSS {peak / MB:.0f} MB for a 4.5 GB file refused at byte 0"


def test_a_gzip_trace_past_4_gib_is_read_by_streaming(tierscope_bin, tmp_path):
    """4.3 GiB of JSON (one operator and 4,095 instants of 1 KB, again and again: gzip makes
    it a few MB) would pass simdjson's limit read whole; streamed, every operator is kept
    and the instants read and counted (metadata: not kept), in the memory of a window."""
    import zlib
    path = tmp_path / "big.json.gz"
    op = b'{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":1000.5,"dur":2}'
    mark = b'{"ph":"i","s":"t","name":"mark","pid":1,"tid":1,"ts":1000,"args":{"note":"' + b"x" * 940 + b'"}}'
    block = b",".join([op] + [mark] * 4095)
    blocks = (4 * 1024 * MB + 300 * MB) // len(block) + 1
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(z.compress(b'{"traceEvents": ['))
        for i in range(blocks):
            f.write(z.compress((b"," if i else b"") + block))
        f.write(z.compress(b"]}"))
        f.write(z.flush())
    json_bytes = len(b'{"traceEvents": [') + blocks * len(block) + (blocks - 1) + 2
    assert json_bytes > 4 * 1024 * MB
    code, out, peak = run_measured(tierscope_bin, "analyze", path, "--format", "json", timeout=600)
    assert code == 0, out[-2000:]
    stats = {r["Item"]: r["Count"] for r in json.loads(out)["reports"][0]["rows"]}
    assert stats["timeline events kept"] == blocks
    assert peak < 400 * MB, f"peak RSS {peak / MB:.0f} MB for {json_bytes / MB:.0f} MB of JSON"


def test_a_big_file_without_newlines_is_not_read_whole_to_sniff_it(tierscope_bin, tmp_path):
    blob = tmp_path / "blob.json"
    blob.write_bytes(b"a" * (64 * MB))
    code, out, peak = run_measured(tierscope_bin, "analyze", blob)
    assert code != 0, out
    assert "invalid JSON at byte 0" in out.splitlines()[0], out
    # The ncu sniffer read its one "line" (all 64 MB) into a string before the JSON
    # importer, which maps the file and stops at byte 0, looked at it.
    assert peak < 40 * MB, f"peak RSS {peak / MB:.0f} MB for a 64 MB file refused at byte 0"


def trace_text(n_instants: int) -> str:
    """2,000 operators, then instants with 400-byte args (metadata: read, not kept), on one line."""
    ops = [{"ph": "X", "cat": "cpu_op", "name": f"op{i % 50}", "pid": 1, "tid": 1, "ts": 1000 + 10 * i, "dur": 1.5}
           for i in range(2000)]
    marks = [{"ph": "i", "s": "t", "name": "mark", "pid": 1, "tid": 1, "ts": 1000 + i, "args": {"note": "x" * 400}}
             for i in range(n_instants)]
    return json.dumps({"traceEvents": ops + marks}, separators=(",", ":"))


def test_a_minified_one_line_trace_costs_no_more_than_the_same_trace_with_newlines(tierscope_bin, tmp_path):
    text = trace_text(75_000)
    size = len(text)
    # Just past 32 MiB: a string grown by doubling to hold it held 32 + 32 MiB at once.
    assert 32 * MB < size < 40 * MB, size
    minified, pretty = tmp_path / "minified.json", tmp_path / "pretty.json"
    minified.write_text(text)
    pretty.write_text(text.replace('},{"ph"', '},\n{"ph"'))
    peaks = {}
    for path in (minified, pretty):
        code, out, peaks[path] = run_measured(tierscope_bin, "analyze", path, "--format", "json")
        assert code == 0, out[-2000:]
        stats = {r["Item"]: r["Count"] for r in json.loads(out)["reports"][0]["rows"]}
        assert stats["timeline events kept"] == 2000
    # The ncu sniffer's getline copied the minified file's one line whole (+1 to 2x its size).
    assert peaks[minified] < peaks[pretty] + size / 4, \
        f"peak RSS {peaks[minified] / MB:.0f} MB minified, {peaks[pretty] / MB:.0f} MB with newlines ({size / MB:.0f} MB)"


def test_ill_formed_utf8_is_replaced_and_counted_not_fatal(tierscope_bin, tmp_path):
    trace = tmp_path / "utf8.json"
    names = [b"ok", b"bad \xff", b"\xe2\x82", b"kernel \xc0\xaf"]
    events = b",".join(b'{"ph":"X","cat":"cpu_op","name":"' + n + b'","pid":1,"tid":1,"ts":%d,"dur":1}' % i
                       for i, n in enumerate(names))
    trace.write_bytes(b'{"traceEvents":[' + events + b"]}")
    code, out, _ = run(tierscope_bin, "analyze", trace, "--format", "json")
    assert code == 0, out
    stats = {r["Item"]: r["Count"] for r in json.loads(out)["reports"][0]["rows"]}
    assert stats["invalid UTF-8 sequences replaced by U+FFFD"] == 4
    assert stats["timeline events kept"] == 4
    code, text, _ = run(tierscope_bin, "analyze", trace)
    assert code == 0 and "invalid UTF-8 sequences replaced by U+FFFD" in text, text


def test_a_path_that_is_not_utf8_still_gives_json(tierscope_bin, tmp_path):
    """The JSON writer once threw on the bytes of such a path (nlohmann's type_error 316)."""
    trace = Path(os.fsdecode(bytes(tmp_path) + b"/trace-\xff.json"))
    trace.write_bytes(b'{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"op","pid":1,"tid":1,"ts":1,"dur":1}]}')
    code, out, err = run(tierscope_bin, "analyze", trace, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["reports"], out


def test_a_trace_whose_every_event_is_malformed_fails_saying_so(tierscope_bin, tmp_path):
    trace = tmp_path / "all_bad.json.gz"
    events = [{"ph": "X", "cat": "cpu_op", "name": "op", "ts": {"us": i}, "dur": 1} for i in range(30)]
    events.append({"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "host"}})
    with gzip.open(trace, "wt") as f:
        json.dump({"traceEvents": events}, f)
    code, out, err = run(tierscope_bin, "analyze", trace)
    assert code != 0, out
    first = err.splitlines()[0]
    assert "no timeline events: 30 of its 31 entries were malformed and skipped (30 ts not a number)" in first, err
    assert out == ""


def test_the_real_ascend_job_imports_every_event(tierscope_bin):
    for path in ASCEND_TRACES:
        if not path.is_file():
            pytest.skip(f"the Ascend corpus trace {path} is absent")
    # Before: 0 events, 4,384 "ts not a number", exit status 0. Kept: every X event but the
    # tasks their HCCL collectives stand for and the Overlap Analysis ranges (ascend_layout.h).
    code, out, err = run(tierscope_bin, "analyze", *ASCEND_TRACES, "--format", "json")
    assert code == 0, err
    job = json.loads(out)
    assert [r["events"] for r in job["ranks"]] == [3410, 3411], job["ranks"]
    for path, events in zip(ASCEND_TRACES, (3410, 3411)):
        code, out, err = run(tierscope_bin, "analyze", path, "--format", "json")
        assert code == 0, err
        stats = {r["Item"]: r["Count"] for r in json.loads(out)["reports"][0]["rows"]}
        assert stats["timeline events kept"] == events
        assert stats["malformed entries skipped"] == 0


def test_every_command_says_when_entries_were_skipped(tierscope_bin, tmp_path):
    # `analyze` shows skipped entries in its import_stats; stats, whatif, diff, export and
    # kernel --from-trace once said nothing, and diff read "kernels 79 -> 69" as a change.
    src = REPO_ROOT.parent / "shared" / "corpus" / "traces" / "benchmark_result_2869224_1695835535_trace.json.gz"
    if not src.is_file():
        pytest.skip(f"{src} is missing")
    doc = json.loads(gzip.open(src).read())
    cut = 0
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and cut < 10:
            del e["ts"]
            cut += 1
    bad = tmp_path / "kern_nots.json"
    bad.write_text(json.dumps(doc))
    note = f"tierscope: note: {bad}: 10 of its "
    for args in (("stats", bad, "--report", "hot_kernels"), ("whatif", bad, "--change", "gemm=0.5"),
                 ("diff", src, bad), ("export", bad, tmp_path / "x.sqlite")):
        code, out, err = run(tierscope_bin, *args)
        assert code == 0, err
        lines = [l for l in err.splitlines() if l.startswith("tierscope: note: ")]
        assert len(lines) == 1 and lines[0].startswith(note) and lines[0].endswith("(10 missing ts)"), (args, err)
    code, out, err = run(tierscope_bin, "stats", bad, "--report", "hot_kernels", "--format", "json")
    hot = json.loads(out)["reports"][0]["rows"][0]["Name"]
    code, out, err = run(tierscope_bin, "kernel", "--from-trace", bad, "-k", hot)
    assert code == 0, err
    assert out.startswith(f"note: {bad}: 10 of its "), out[:300]


def test_a_diff_of_two_jobs_says_what_either_reading_skipped(tierscope_bin, tmp_path):
    # A rank file emptied in the new job once changed its figures without a word.
    import shutil
    job = REPO_ROOT.parent / "shared" / "corpus" / "traces" / "vendors" / "t4_p2p_job"
    if not job.is_dir():
        pytest.skip(f"{job} is missing")
    base, new = tmp_path / "base", tmp_path / "new"
    shutil.copytree(job, base)
    shutil.copytree(job, new)
    emptied = sorted((new / "rank_3").glob("*.json.gz"))[0]
    emptied.chmod(0o644)
    emptied.write_bytes(b"")
    code, out, err = run(tierscope_bin, "diff", base, new, "--format", "json")
    assert code == 0, err
    notes = json.loads(out)["reports"][0].get("notes", [])
    assert any(n.startswith("new: Skipped, not traces (empty files): rank_3/" + emptied.name) for n in notes), notes
    assert not any(n.startswith("base: Skipped, not traces (empty") for n in notes), notes
