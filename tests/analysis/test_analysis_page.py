"""`tierscope analyze --html`: the analysis page of every corpus trace and job, drawn in
headless Chromium (Debian's, as the lab report's tests do). Each page must load with no
script error and fetch nothing, embed exactly the JSON `analyze --format json --timeline
--critical-path` prints, draw marks in every chart it shows (and say why a section is
hidden), and its step timeline must hold the step's kernels — counted again here from the
raw Kineto file, not from tierscope's JSON. A screenshot of each page is kept under
build/test-artifacts/analysis/. Sizes: the largest corpus trace's page and a synthetic
64-rank job's stay within a few MB."""
from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from page_render import console_errors, render_page

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = REPO_ROOT.parent / "shared" / "corpus"
ARTIFACTS = REPO_ROOT / "build" / "test-artifacts" / "analysis"
MAX_PAGE_BYTES = 5_000_000  # "at most a few MB"


def corpus_inputs():
    traces = CORPUS / "traces"
    found = sorted(traces.glob("*.json.gz")) + sorted((traces / "field").glob("*.json.gz"))
    vendors = traces / "vendors"
    found += [vendors / "execution_trace" / "execution_trace__benchmark_simple_add_trace.json.gz",
              vendors / "rocprofv3" / "rocprof__908_results.json.gz",
              CORPUS / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite",
              vendors / "t4_p2p_job", vendors / "ascend_2rank"]
    return found


INPUTS = corpus_inputs() if CORPUS.is_dir() else []


def run(bin_path, *args, check=True):
    p = subprocess.run([str(bin_path), *map(str, args)], capture_output=True, text=True, timeout=600)
    if check:
        assert p.returncode == 0, p.stderr[-3000:]
    return p


def page_name(path: Path) -> str:
    return re.sub(r"\.(json\.gz|json|sqlite)$", "", path.name)


def attr(dom: str, element: str, name: str):
    m = re.search(element + r'[^>]*?\b' + name + r'="([^"]*)"', dom)
    return m.group(1) if m else None


def embedded_document(page: str):
    m = re.search(r'<script id="analysis" type="application/json">(.*?)</script>', page, re.S)
    assert m, "no embedded analysis document"
    return json.loads(m.group(1))


def kineto_step_kernels(path: Path, step: str) -> int:
    """The kernels launched in `step` (its annotation's window; a kernel's host time is its
    launch's start, else its own), counted from the raw Kineto JSON."""
    with gzip.open(path, "rt") if path.suffix == ".gz" else open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    ns = lambda us: round(float(us) * 1000)  # noqa: E731
    launch_ts, kernels, window = {}, [], None
    for e in events:
        if e.get("ph") != "X" or "ts" not in e:
            continue
        cat, args = e.get("cat", ""), e.get("args") or {}
        if cat == "kernel":
            kernels.append((ns(e["ts"]), args.get("correlation")))
        elif "correlation" in args and cat not in ("gpu_memcpy", "gpu_memset", "gpu_user_annotation"):
            launch_ts.setdefault(args["correlation"], ns(e["ts"]))
        if e.get("name") == step and cat in ("user_annotation", "cpu_op"):
            window = (ns(e["ts"]), ns(e["ts"]) + ns(e.get("dur", 0)))
    assert window, f"{step} not in {path}"
    return sum(1 for ts, corr in kernels if window[0] <= launch_ts.get(corr, ts) <= window[1])


@pytest.fixture(scope="module", params=INPUTS, ids=[page_name(p) for p in INPUTS])
def page(request, tierscope_bin, tmp_path_factory):
    src = request.param
    if not src.exists():
        pytest.skip(f"{src} is not in the corpus")
    out = tmp_path_factory.mktemp("page") / (page_name(src) + ".html")
    p = run(tierscope_bin, "analyze", src, "--html", out)
    assert p.stdout == "" and re.fullmatch(r"analysis page: .* \(\d+\.\d\d MB\)\n", p.stderr), p.stderr
    doc = json.loads(run(tierscope_bin, "analyze", src, "--format", "json", "--timeline", "--critical-path").stdout)
    dom, console = render_page(out, out.parent, ARTIFACTS / (page_name(src) + ".png"), window="1280,2400")
    return {"src": src, "path": out, "doc": doc, "dom": dom, "console": console}


def test_the_page_loads_without_errors_or_requests(page):
    dom = page["dom"]
    errors = re.search(r'<pre id="js-errors">(.*?)</pre>', dom, re.S)
    assert errors is not None and errors.group(1).strip() == "", errors.group(1)
    assert console_errors(page["console"]) == []
    assert attr(dom, "<body", "data-ready") == "1"
    assert attr(dom, "<body", "data-resources") == "0"  # nothing fetched: no network needed
    html = page["path"].read_text()
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=|<link[^>]*href=|@import", html)


def test_the_page_embeds_the_json_analyze_prints(page):
    assert embedded_document(page["path"].read_text()) == page["doc"]


def test_every_chart_shown_has_marks_and_every_hidden_section_says_why(page):
    dom, doc = page["dom"], page["doc"]
    reports = {r["name"]: r for r in doc["reports"]}
    for m in re.finditer(r'<canvas data-chart="(\w+)"([^>]*)>', dom):
        name, rest = m.group(1), m.group(2)
        assert 'data-drawn="1"' in rest, f"chart {name} was not drawn"
        marks = int(re.search(r'data-marks="(\d+)"', rest).group(1))
        assert marks > 0, f"chart {name} has no marks"
    hidden = dict(re.findall(r'<section id="([\w-]+)"[^>]*data-hidden="([^"]+)"', dom))
    temporal = [r for r in reports.get("temporal_breakdown", {"rows": []})["rows"] if isinstance(r["Compute (%)"], (int, float))]
    assert ("breakdown-section" in hidden) == (not temporal), hidden
    if temporal:
        assert 'data-chart="temporal"' in dom
    ops = [r for r in reports.get("op_roofline", {"rows": []})["rows"]
           if isinstance(r["FLOP/B"], (int, float)) and r["FLOP/B"] > 0 and r["TFLOP/s"] > 0]
    assert ("roofline-section" in hidden) == (not ops), hidden
    is_job = "ranks" in doc
    assert ("straggler-section" in hidden) == (not is_job), hidden
    assert "timeline-section" not in hidden, hidden
    # Every finding is on the page, in the order of the time it explains.
    rules = re.findall(r'<div class="finding" data-rule="(\w+)"', dom)
    assert rules == [f["rule"] for f in doc["findings"]]
    # Every report is a table; an open one has its rows (a closed one makes them when opened).
    assert re.findall(r'<details data-report="(\w+)"', dom) == [r["name"] for r in doc["reports"]]
    for name in ("op_sum", "hot_kernels", "straggler_ranks"):
        m = re.search(rf'<details data-report="{name}" open="">(.*?)</details>', dom, re.S)
        if name in reports:
            assert m and m.group(1).count("<tr>") == len(reports[name]["rows"]) + 1, name


def test_the_step_timeline_holds_the_steps_kernels(page):
    dom, t = page["dom"], page["doc"]["timeline"]
    chosen = next(s for s in t["steps"] if s["chosen"])
    assert attr(dom, '<canvas id="timeline"', "data-step") == chosen["name"]
    shown = int(attr(dom, '<canvas id="timeline"', "data-step-kernels"))
    if t["omitted"]["device_events"] == 0:
        assert shown == chosen["kernels"]  # every kernel of the step, whatever host events were left out
    else:  # the step's device work alone was more than the page holds
        assert shown < chosen["kernels"]
    events = len(t["events"]["lane"])
    assert (int(attr(dom, '<canvas id="timeline"', "data-drawn")) > 0) == (events > 0)
    # The count again from the raw trace, for a single Kineto trace.
    src = page["src"]
    if src.is_file() and src.name.endswith((".json", ".json.gz")) and chosen["name"] != "whole trace":
        assert chosen["kernels"] == kineto_step_kernels(src, chosen["name"])


def test_the_page_draws_what_the_json_says(tierscope_bin, tmp_path):
    src = CORPUS / "traces" / "field" / "h100__gaunernst_bert-small-uncased__1016001.json.gz"
    if not src.is_file():
        pytest.skip(f"{src} is not in the corpus")
    out = tmp_path / "page.html"
    run(tierscope_bin, "analyze", src, "--html", out)
    text = out.read_text()
    m = re.search(r'(<script id="analysis" type="application/json">)(.*?)(</script>)', text, re.S)
    doc = json.loads(m.group(2))
    doc["findings"][0]["title"] = "A title the analysis never wrote"
    doc["trace"]["device"] = "Device Named Here"
    changed = tmp_path / "changed.html"
    changed.write_text(text[:m.start(2)] + json.dumps(doc).replace("<", "\\u003c") + text[m.end(2):])
    dom, _ = render_page(changed, tmp_path)
    assert "A title the analysis never wrote" in dom and "Device Named Here" in dom


def test_a_step_the_trace_lacks_is_a_one_line_error(tierscope_bin, tmp_path):
    src = CORPUS / "traces" / "field" / "h100__gaunernst_bert-small-uncased__1016001.json.gz"
    if not src.is_file():
        pytest.skip(f"{src} is not in the corpus")
    p = run(tierscope_bin, "analyze", src, "--html", tmp_path / "x.html", "--step", "ProfilerStep#99", check=False)
    assert p.returncode != 0 and not (tmp_path / "x.html").exists()
    assert p.stderr.count("\n") == 1 and "names no step of this trace; its steps: ProfilerStep#6" in p.stderr, p.stderr
    p = run(tierscope_bin, "analyze", src, "--html", tmp_path / "no" / "such" / "dir" / "x.html", check=False)
    assert p.returncode != 0 and p.stderr.count("\n") == 1 and "--html" in p.stderr, p.stderr
    # --step chooses what --timeline, --html or --overlay show: alone it is a usage error.
    p = run(tierscope_bin, "analyze", src, "--step", "ProfilerStep#6", check=False)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "give one of them" in p.stderr, p.stderr
    job = CORPUS / "traces" / "vendors" / "t4_p2p_job"
    p = run(tierscope_bin, "analyze", job, "--html", tmp_path / "j.html", "--step", "ProfilerStep#99", check=False)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "names no step of any rank" in p.stderr, p.stderr
    assert not (tmp_path / "j.html").exists()
    # A step by name: that step is the one drawn.
    run(tierscope_bin, "analyze", src, "--html", tmp_path / "y.html", "--step", "ProfilerStep#6")
    assert embedded_document((tmp_path / "y.html").read_text())["timeline"]["why"] == "the step asked for (--step)"


def test_an_empty_trace_gives_a_page_that_says_so(tierscope_bin, tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents": []}')
    run(tierscope_bin, "analyze", empty, "--html", tmp_path / "empty.html")
    dom, console = render_page(tmp_path / "empty.html", tmp_path)
    assert console_errors(console) == [] and attr(dom, "<body", "data-ready") == "1"
    assert re.search(r'class="verdict marked">The trace holds no timeline event', dom)
    # Each section with nothing to draw says so, on the page.
    assert dom.count("Not drawn: ") >= 3


def test_the_largest_corpus_trace_and_a_64_rank_job_give_pages_of_a_few_mb(tierscope_bin, tmp_path):
    if not INPUTS:
        pytest.skip("the corpus is not beside the repository (../shared/corpus)")
    largest = max((p for p in INPUTS if p.is_file()), key=lambda p: p.stat().st_size)
    run(tierscope_bin, "analyze", largest, "--html", tmp_path / "largest.html")
    assert (tmp_path / "largest.html").stat().st_size <= MAX_PAGE_BYTES
    job = tmp_path / "job64"
    made = subprocess.run([sys.executable, str(REPO_ROOT / "bench" / "job" / "make_job.py"), str(job), "64", "0.25", "3"],
                          capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-2000:]
    out = tmp_path / "job64.html"
    run(tierscope_bin, "analyze", job, "--html", out)
    assert out.stat().st_size <= MAX_PAGE_BYTES
    dom, console = render_page(out, tmp_path, ARTIFACTS / "job64.png", window="1280,2400")
    assert console_errors(console) == [] and attr(dom, "<body", "data-ready") == "1"
    doc = embedded_document(out.read_text())
    lanes = {l["rank"] for l in doc["timeline"]["lanes"]}
    assert lanes == set(range(64))  # every rank's streams are on the timeline
    # Every rank's step in full on the device: all its kernels drawn (host events may wait
    # in the overview).
    omitted = doc["timeline"]["omitted"]
    assert omitted["device_events"] == 0, omitted
    assert int(attr(dom, '<canvas id="timeline"', "data-step-kernels")) == doc["timeline"]["steps"][0]["kernels"]
    # The straggler view: a cell per rank and matched collective, the slow rank (3) named.
    arrivals = doc["timeline"]["straggler_arrivals"]
    cells = sum(v is not None for col in arrivals["behind_ns"] for v in col)
    assert cells == 64 * arrivals["shown"] and int(attr(dom, '<canvas data-chart="stragglers"', "data-marks")) == cells
    assert next(f for f in doc["findings"] if f["rule"] == "straggler")["title"].startswith("Straggler: rank 3 ")
    row3 = arrivals["ranks"].index(3)
    assert all(col[row3] == max(col) > 0 for col in arrivals["behind_ns"])


def load_trace(path: Path):
    with gzip.open(path, "rt") if path.suffix == ".gz" else open(path) as f:
        return json.load(f)


@pytest.mark.parametrize("bare_list", [False, True], ids=["object", "bare-list"])
def test_the_overlay_is_the_trace_with_the_path_and_findings_added(tierscope_bin, tmp_path, bare_list):
    # Three steps: the overlay's step must be the page's (the steady-state one), not the first.
    src = FIELD / "hta__nccl_parser_config__nccl_data.json.gz"
    if not src.is_file():
        pytest.skip(f"{src} is not in the corpus")
    original = load_trace(src)
    if bare_list:  # the list form of a Chrome trace
        listed = tmp_path / "listed.json"
        listed.write_text(json.dumps(original["traceEvents"]))
        src, original = listed, {"traceEvents": original["traceEvents"]}
    out = tmp_path / "overlay.json.gz"
    p = run(tierscope_bin, "analyze", src, "--overlay", out, "--format", "json", "--timeline")
    report = json.loads(p.stdout)
    path = report["timeline"]["critical_path"]
    assert report["timeline"]["step"] != report["timeline"]["steps"][0]["name"]  # not the warm-up step
    overlay = load_trace(out)
    events = overlay if bare_list else overlay["traceEvents"]
    n = len(original["traceEvents"])
    assert events[:n] == original["traceEvents"]  # every event kept, in order, unchanged
    if not bare_list:
        assert {k: v for k, v in overlay.items() if k != "traceEvents"} == \
               {k: v for k, v in original.items() if k != "traceEvents"}
    added = events[n:]
    pid = next(e["pid"] for e in added if e.get("ph") == "M" and e["args"]["name"] == "tierscope analysis")
    assert pid not in {e.get("pid") for e in original["traceEvents"]}
    tracks = {e["tid"]: e["args"]["name"] for e in added if e.get("ph") == "M" and e["name"] == "thread_name"}
    copies = [e for e in added if e.get("cat") == "tierscope_critical_path" and e["ph"] == "X"]
    # The page's step and path: each event on it once, its time on the path added up.
    assert all(t.startswith("critical path of " + path["step"]) for tid, t in tracks.items() if not t.startswith("finding"))
    assert len(copies) == path["events"] and all(e["pid"] == pid for e in copies)
    assert sum(e["args"]["on path (ns)"] for e in copies) == path["length_ns"]
    # One track per track of the trace the events come from.
    for e in copies:
        assert tracks[e["tid"]].endswith(f"pid {e['args']['event']['pid']} tid {e['args']['event']['tid']}")
    # Flows: pairs, forward in time, each end inside a copy on its track.
    starts = {e["id"]: e for e in added if e["ph"] == "s"}
    ends = {e["id"]: e for e in added if e["ph"] == "f"}
    assert starts.keys() == ends.keys() and len(starts) == len(copies) - 1
    def inside(point):
        return any(c["tid"] == point["tid"] and c["pid"] == point["pid"] and
                   float(c["ts"]) <= float(point["ts"]) <= float(c["ts"]) + float(c["dur"]) for c in copies)
    for k, s in starts.items():
        assert float(s["ts"]) <= float(ends[k]["ts"]), (s, ends[k])
    assert all(inside(s) for s in list(starts.values())[:200]) and all(inside(f) for f in list(ends.values())[:200])
    findings = [e for e in added if e.get("cat") == "tierscope_finding"]
    assert [e["name"] for e in findings] == [f["title"] for f in report["findings"]]


def test_an_overlay_of_what_is_not_chrome_json_is_a_one_line_error(tierscope_bin, tmp_path):
    src = CORPUS / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
    if not src.is_file():
        pytest.skip(f"{src} is not in the corpus")
    p = run(tierscope_bin, "analyze", src, "--overlay", tmp_path / "o.json", check=False)
    assert p.returncode != 0 and p.stderr.count("\n") == 1 and "nsys-sqlite" in p.stderr, p.stderr
    assert not list(tmp_path.iterdir())
    # An overlay that cannot be put in place (its path is a directory): one line, no leftovers.
    chrome = FIELD / "h100__gaunernst_bert-small-uncased__1016001.json.gz"
    (tmp_path / "adir").mkdir()
    p = run(tierscope_bin, "analyze", chrome, "--overlay", tmp_path / "adir", check=False)
    assert p.returncode != 0 and p.stderr.count("\n") == 1 and "adir" in p.stderr, p.stderr
    assert [q.name for q in tmp_path.iterdir()] == ["adir"] and not list((tmp_path / "adir").iterdir())


FIELD = CORPUS / "traces" / "field"
VENDORS = CORPUS / "traces" / "vendors"
COMPARISONS = {
    "diff-traces": ("diff", ["diff", FIELD / "hta__trace_filter__sampled_rank-0.json.gz",
                             FIELD / "hta__trace_filter__sampled_rank-1.json.gz"]),
    "diff-jobs": ("diff", ["diff", VENDORS / "t4_p2p_job", VENDORS / "ascend_2rank"]),
    "whatif-trace": ("whatif", ["whatif", FIELD / "h100__gaunernst_bert-small-uncased__1016001.json.gz",
                                "--change", "launch=2", "--change", "gemm=0.5"]),
    "whatif-job": ("whatif", ["whatif", VENDORS / "t4_p2p_job", "--change", "comm=overlap"]),
}


@pytest.mark.parametrize("case", sorted(COMPARISONS))
def test_diff_and_whatif_pages_draw_their_json(tierscope_bin, tmp_path, case):
    kind, args = COMPARISONS[case]
    missing = [a for a in args if isinstance(a, Path) and not a.exists()]
    if missing:
        pytest.skip(f"{missing} not in the corpus")
    out = tmp_path / f"{case}.html"
    run(tierscope_bin, *args, "--html", out)
    doc = json.loads(run(tierscope_bin, *args, "--format", "json").stdout)
    assert embedded_document(out.read_text()) == doc
    dom, console = render_page(out, tmp_path, ARTIFACTS / f"{case}.png", window="1280,2000")
    errors = re.search(r'<pre id="js-errors">(.*?)</pre>', dom, re.S)
    assert errors.group(1).strip() == "" and console_errors(console) == [], errors.group(1)
    assert attr(dom, "<body", "data-kind") == kind and attr(dom, "<body", "data-resources") == "0"
    charts = re.findall(r'<canvas data-chart="(compare_\w)"[^>]*data-marks="(\d+)"', dom)
    assert len(charts) == 3 and all(int(m) > 0 for _, m in charts), charts
    tables = re.findall(r'<details data-report="(\w+)"', dom)
    assert tables == ([doc["name"]] if kind == "whatif" else [r["name"] for r in doc["reports"]])
