"""`tierscope lab --quick` end to end: the results directory, summary.json against the
schema kept in schemas/, and report.html rendered in headless Chromium (Debian's
`chromium`) — every plot drawn, no script errors, numbers taken from the summary — with
a screenshot kept under build/test-artifacts/."""
from __future__ import annotations

import copy
import html
import json
import math
import os
import re
import subprocess
from pathlib import Path

import pytest
from page_render import console_errors, render_page

jsonschema = pytest.importorskip("jsonschema")

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO_ROOT / "schemas" / "summary.schema.json").read_text())
ARTIFACTS = REPO_ROOT / "build" / "test-artifacts"


@pytest.fixture(scope="module")
def results(tierscope_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("lab") / "results"
    run = subprocess.run([str(tierscope_bin), "lab", "--quick", "--threads", "2", "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "report: " in run.stdout
    # Not a terminal: plain progress lines, one per step.
    for step in range(1, 8):
        assert f"[lab {step}/7]" in run.stderr
    return out


def test_results_directory_has_every_file(results):
    for name in ["summary.json", "validation.json", "batch_sweep.txt", "batch_sweep.json", "report.html",
                 "traces/serial.json.gz", "traces/batch.json.gz", "kernels/serial.json",
                 "kernels/batch.json", "tier1_diff.txt", "tier2_serial.txt", "tier2_batch.txt"]:
        assert (results / name).is_file(), name


def test_summary_validates_against_the_schema(results):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    summary = json.loads((results / "summary.json").read_text())
    jsonschema.validate(summary, SCHEMA, cls=jsonschema.Draft202012Validator)
    # The schema can fail: a summary missing a number, or with a wrong type, is rejected.
    broken = copy.deepcopy(summary)
    del broken["headline"]["fp16_cosine"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA, cls=jsonschema.Draft202012Validator)
    broken = copy.deepcopy(summary)
    broken["sweep"]["points"][0]["samples_per_s"] = "fast"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_every_lever_is_predicted_before_it_is_measured(results, tierscope_bin):
    # Batching from the serial trace, each precision the lab ran from the batched one: each
    # prediction beside step 4's measurement, the error what the two give, and the recorded
    # command (with the peaks the lab used) reproduces the prediction (the goal on the error
    # lives in bench/whatif/).
    s = json.loads((results / "summary.json").read_text())
    ran = sorted([m for m in s["baseline"] if m.startswith("batch-")] + ["batch-fp32-1-thread"])  # --threads 2
    preds = {p["lever"]: p for p in s["predictions"]}
    assert sorted(preds) == ran
    for lever, p in preds.items():
        assert "error" not in p, p
        assert p["predicted_speedup"] > 0 and p["measured_speedup"] > 0, p
        assert p["error_pct"] == pytest.approx(100 * (p["predicted_speedup"] / p["measured_speedup"] - 1))
        assert abs(p["replay_error_pct"]) < 1, p  # the unchanged graph re-times to the traced step
        assert p["command"] in s["commands"]
        assert p["trace"] == ("traces/serial.json.gz" if lever == "batch-fp32" else "traces/batch.json.gz")
    modes = dict(s["final"]["modes"], **{"batch-fp32-1-thread": s["final"]["one_thread"]})  # step 4's runs
    for lever, p in preds.items():
        base = "serial-fp32" if lever == "batch-fp32" else "batch-fp32"
        assert p["measured_speedup"] == pytest.approx(modes[lever]["samples_per_s"] / modes[base]["samples_per_s"])
    assert preds["batch-fp32-1-thread"]["change"] == "units=1"
    assert s["final"]["one_thread"]["threads"] == 1
    assert preds["batch-fp32"]["change"] == f"batch={s['workload']['batch_size']}"
    for lever, p in preds.items():  # each precision's GEMMs at tier 3's measured factor
        if lever not in ("batch-fp32", "batch-fp32-1-thread"):
            assert p["matrix_factor"] > 0 and p["matrix_factor_source"].startswith("tier 3"), p
            assert p["change"] == f"precision={lever[6:]}, gemm={p['matrix_factor']:.6g}", p
    assert (results / "device_spec.json").is_file()  # the peaks the predictions used
    for lever, p in preds.items():
        assert p["command"].endswith(" --device-spec device_spec.json"), p["command"]
        args = p["command"].split()[2:]
        run = subprocess.run([str(tierscope_bin), "whatif", *args, "--format", "json"], cwd=results,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        table = json.loads(run.stdout)
        factor = sum(r["Predicted (ns)"] for r in table["rows"]) / sum(r["Replayed (ns)"] for r in table["rows"])
        assert 1 / factor == pytest.approx(p["predicted_speedup"], rel=1e-3), (lever, table)


def test_summary_tells_the_studys_story(results):
    s = json.loads((results / "summary.json").read_text())
    serial = s["tier1"]["serial"]["per_unit"]
    batched = s["tier1"]["batch"]["per_unit"]
    b = s["workload"]["batch_size"]
    assert serial["units"] >= 1 and batched["units"] >= 1
    # b forwards vs one, plus the copy of each sample's output into the batch result.
    assert serial["operators"]["aten::linear"] == b * batched["operators"]["aten::linear"]
    assert serial["launches"] == b * batched["launches"] + serial["operators"]["aten::copy_"]
    assert s["validation"]["pass"] and s["validation"]["fp16"]["cosine"] > 0.9999
    assert s["final"]["correct"]
    assert [p["batch"] for p in s["sweep"]["points"]] == [1, 16, 64]
    # The hot kernel's tasks (its grid's product: a tile grid, or whole-row tasks) grow with the batch.
    tasks = {run: math.prod(s["tier3"][run]["report"]["grid"]) for run in ("serial", "batch")}
    assert tasks["batch"] > tasks["serial"], tasks
    validation = json.loads((results / "validation.json").read_text())
    assert validation == s["validation"]
    # The built-in model and workload are the study's: its published figures stand beside
    # ours, each of ours read from this summary.
    study = {r["measure"]: r for r in s["study"]["rows"]}
    assert study["serial FP32 samples/s"]["study"] == 450.34
    assert study["serial FP32 samples/s"]["yours"] == s["headline"]["baseline_samples_per_s"]
    assert study["launches per unit, batched"]["yours"] == batched["launches"]
    assert study["FP16 vs FP32 cosine"]["yours"] == s["validation"]["fp16"]["cosine"]
    assert "MTT S5000" in s["study"]["source"]


def test_no_number_above_a_calibrated_peak_reaches_a_verdict(results):
    s = json.loads((results / "summary.json").read_text())
    assert s["machine"]["peaks"]["fp32_gflops"] > 0  # measured at the start of this run
    for run in ("serial", "batch"):
        rep = s["tier3"][run]["report"]
        pct = {m["name"]: m.get("value") for sec in rep["sections"] for m in sec["metrics"]}
        above = any((pct.get(k) or 0) > 100 for k in ("Compute Throughput", "Memory Throughput"))
        # Either every share is physically possible, or the report says it cannot conclude.
        assert not above or (not rep["recommendation"]["trustworthy"]
                             and rep["recommendation"]["verdict"].startswith("No verdict")), rep


def test_step_4_runs_the_recommendation_and_never_falls_below_its_neighbours(results, bf16_variants):
    s = json.loads((results / "summary.json").read_text())
    fin, sweep, head = s["final"], s["sweep"], s["headline"]
    choice = [c for c in sweep["choices"] if c["seq_len"] == s["workload"]["seq_len"]][0]
    # The sweep recommends the throughput-best batch (no limits: the smallest within 5%).
    best = max(p["samples_per_s"] for p in sweep["points"])
    assert choice["samples_per_s"] >= 0.95 * best
    assert choice["binding"] == "none"
    # Step 4 measured the method's recommendation: the fastest batched mode of step 0 at
    # the recommended batch size...
    modes = ("batch-fp32", "batch-fp16", "batch-bf16", "batch-int8")  # INT8: the CPU's lever
    fastest = max(modes, key=lambda m: s["baseline"][m]["samples_per_s"])
    assert fin["recommended"]["mode"] == fastest == sweep["mode"]
    assert fin["recommended"]["batch_size"] == choice["batch"]

    # ...and step 4's final configuration is the one src/lab/lab.cc's FinalStep rule picks,
    # recomputed here from the raw runs: the recommendation first (at the workload's batch
    # size its figure is the pooled median of steps 0 and 4, at another batch size the
    # median of its own step-4 runs), then each batched mode in the lab's order, pooled,
    # replacing it only when strictly faster. The lab must pick that mode and batch and
    # report exactly that figure.
    def median(runs):  # core/stats.cc's Median, operation for operation (ties compare alike)
        runs = sorted(runs)
        assert runs
        pos = 0.5 * (len(runs) - 1)
        lo = int(pos)
        hi = min(len(runs) - 1, lo + 1)
        return runs[lo] + (runs[hi] - runs[lo]) * (pos - lo)

    def pooled(mode):
        return median(s["baseline"][mode]["runs_samples_per_s"] + fin["modes"][mode]["runs_samples_per_s"])

    lab_modes = ["serial-fp32", *modes]  # LabModes("cpu"), in the lab's order
    assert sorted(fin["modes"]) == sorted(lab_modes) and sorted(s["baseline"]) == sorted(lab_modes)
    # Each step's figure for a mode is the median of that step's own runs.
    for step in (s["baseline"], fin["modes"]):
        for mode in lab_modes:
            assert len(step[mode]["runs_samples_per_s"]) == s["workload"]["repeats"], mode
            assert step[mode]["samples_per_s"] == pytest.approx(median(step[mode]["runs_samples_per_s"]),
                                                                rel=1e-12), mode
    rec = fin["recommended"]
    assert rec["samples_per_s"] == pytest.approx(median(rec["runs_samples_per_s"]), rel=1e-12)
    at_workload = rec["batch_size"] == s["workload"]["batch_size"]
    if at_workload:  # the recommendation is step 4's run of that mode, not a separate bench
        assert rec["runs_samples_per_s"] == fin["modes"][rec["mode"]]["runs_samples_per_s"]
    want_mode, want_batch = rec["mode"], rec["batch_size"]
    want_sps = pooled(want_mode) if at_workload else median(rec["runs_samples_per_s"])
    for mode in modes:
        if pooled(mode) > want_sps:
            want_mode, want_batch, want_sps = mode, s["workload"]["batch_size"], pooled(mode)
    assert (fin["mode"], fin["batch_size"]) == (want_mode, want_batch), (fin["mode"], fin["batch_size"])
    assert fin["samples_per_s"] == pytest.approx(want_sps, rel=1e-12)
    # The final latencies and memory are the chosen configuration's own (step 4's run of
    # that mode, or the recommendation's separate bench).
    source = fin["modes"][want_mode] if want_batch == s["workload"]["batch_size"] else rec
    for key in ("p50_ms", "p95_ms", "p99_ms", "max_memory_mb"):
        assert fin[key] == source[key], key
    # The headline's figures are the pooled medians, and its ratios are ratios of the
    # figures it reports.
    assert head["baseline_samples_per_s"] == pytest.approx(pooled("serial-fp32"), rel=1e-12)
    assert head["batch_samples_per_s"] == pytest.approx(pooled("batch-fp32"), rel=1e-12)
    assert head["fp16_samples_per_s"] == pytest.approx(pooled("batch-fp16"), rel=1e-12)
    assert head["pooled_runs"] == 2 * s["workload"]["repeats"]
    assert head["batch_speedup"] == pytest.approx(head["batch_samples_per_s"] / head["baseline_samples_per_s"],
                                                  rel=1e-12)
    assert head["fp16_speedup_over_batch"] == pytest.approx(
        head["fp16_samples_per_s"] / head["batch_samples_per_s"], rel=1e-12)
    assert head["final_speedup"] == pytest.approx(head["final_samples_per_s"] / head["baseline_samples_per_s"],
                                                  rel=1e-12)
    assert fin["speedup_over_baseline"] == pytest.approx(fin["samples_per_s"] / pooled("serial-fp32"), rel=1e-12)
    # The precision step names the lever that pays here and why, with the pooled figures and
    # the validation's cosine: the device's candidates (INT8 on a CPU whose engine widens
    # BF16 to FP32; INT8 and BF16 where it computes BF16 in BF16), the fastest that passed
    # validation and ran at least 1.02x batch-fp32; else any other lower precision that did;
    # else none (a Zen 1's AVX2 INT8 runs ~0.95x batch-fp32).
    lever = head["precision_lever"]
    bf16_math = os.environ.get("TIERSCOPE_BF16_KERNELS") or bf16_variants[0]
    peaks = s["machine"]["peaks"]
    with_bf16 = bool(peaks.get("bf16_dot")) and bool(peaks.get("int8_dot")) and bf16_math != "fp32"
    candidates = ["batch-int8", "batch-bf16"] if with_bf16 else ["batch-int8"]

    def pays(m):  # the lab's own arithmetic: the ratio, then the floor
        return s["validation"][m.split("-")[1]]["pass"] and pooled(m) / pooled("batch-fp32") >= 1.02

    paying = [m for m in candidates if pays(m)] or \
        [m for m in ("batch-fp16", "batch-bf16", "batch-int8") if m not in candidates and pays(m)]
    want = max(paying, key=pooled) if paying else "batch-fp32"  # a tie goes to the first, as in the lab
    assert lever["mode"] == want, lever
    assert ("BF16 arithmetic (AVX512_BF16" if with_bf16 else "INT8 runs on") in lever["why"], lever
    for m in candidates:  # what each candidate ran, in words (a lone one that paid: the diagnosis's ratio)
        v = s["validation"][m.split("-")[1]]
        said = f"{m} failed validation" if not v["pass"] else f"{m} ran {pooled(m) / pooled('batch-fp32'):.3f}x"
        assert said in lever["why"] or candidates == [want], (said, lever)
    if want == "batch-fp32":
        assert lever["why"].startswith("none pays: "), lever
        assert f"Precision: no lower precision pays here ({lever['why'][11:]}): batch-fp32 stays, at " \
            in " ".join(s["diagnosis"])
    mode = lever["mode"]
    assert lever["samples_per_s"] == pytest.approx(pooled(mode))
    assert lever["speedup_over_batch"] == pytest.approx(pooled(mode) / pooled("batch-fp32"))
    if mode != "batch-fp32":
        assert lever["cosine"] == s["validation"][mode.split("-")[1]]["cosine"] >= 0.999
    if mode != "batch-fp32":
        assert any(line.startswith(f"Precision: the lever for this device is {mode}") for line in s["diagnosis"])
    assert head["final_samples_per_s"] == fin["samples_per_s"]
    assert (head["final_mode"], head["final_batch_size"]) == (fin["mode"], fin["batch_size"])
    # Serial and batched FP32 ran the same samples: the same outputs, element by element.
    assert fin["outputs_agree"] and fin["serial_vs_batch_max_abs"] <= 1e-4 and fin["correct"]


def render(page: Path, tmp: Path, screenshot: Path | None = None):
    """The DOM after the page's script ran, and Chromium's console output."""
    return render_page(page, tmp, screenshot)


def test_report_renders_every_plot_without_errors(results, tmp_path):
    dom, console = render(results / "report.html", tmp_path, ARTIFACTS / "report.png")
    plots = re.search(r'data-plots-drawn="(\d+)" data-plots="(\d+)"', dom)
    assert plots, dom[:2000]
    assert plots.group(1) == plots.group(2) and int(plots.group(2)) >= 6, plots.group(0)
    errors = re.search(r'<pre id="js-errors">(.*?)</pre>', dom, re.S)
    assert errors is not None and errors.group(1).strip() == "", errors.group(1) if errors else dom[:500]
    assert console_errors(console) == []
    # Every plot has marks (bars, points, spans), not just axes.
    for name in ["counts", "strip", "sol", "roofline", "throughput", "latency"]:
        svg = re.search(rf'<svg class="plot" data-plot="{name}"[^>]*>(.*?)</svg>', dom, re.S)
        assert svg and 'data-mark="1"' in svg.group(1), name


def test_report_numbers_come_from_the_summary(results, tmp_path):
    page = (results / "report.html").read_text()
    embedded = re.search(r'<script id="summary" type="application/json">(.*?)</script>', page, re.S)
    summary = json.loads((results / "summary.json").read_text())
    assert json.loads(embedded.group(1).replace("<\\/", "</")) == summary
    # Change one number in the embedded summary: the page shows the new one.
    changed = copy.deepcopy(summary)
    changed["headline"]["baseline_samples_per_s"] = 98765.4
    text = json.dumps(changed).replace("</", "<\\/")
    page2 = tmp_path / "report.html"
    page2.write_text(page[:embedded.start(1)] + text + page[embedded.end(1):])
    dom, _ = render(page2, tmp_path)
    assert "98,765" in html.unescape(dom)
    assert "The study's figures beside yours" in dom and "28,065.69" in html.unescape(dom)
    # The template's markup types no numbers of its own (the script reads them all).
    template = (REPO_ROOT / "src" / "lab" / "report_template.html").read_text()
    body = re.sub(r"<script.*?</script>|<style.*?</style>|<!--.*?-->|<[^>]+>", " ", template, flags=re.S)
    body = re.sub(r"\b(?:Tier|Step|step) \d\b|\b(?:FP|BF)(?:16|32)\b", " ", body)  # names, not numbers
    assert re.findall(r"\d+(?:\.\d+)?", body) == []
