"""The lab's vendor-profiler steps with stand-in `nsys` and `ncu` on PATH: executables that
record their arguments (and whether stdin is /dev/null), run the profiled command, and
write real-format outputs — a corpus nsys SQLite export, an Nsight Compute CSV in the
details-page format. The arguments are the study's, the outputs are imported (the nsys
export's kernels checked against the Kineto trace's, the ncu CSV read as tier 3), and a
profiler that fails is a reported step, never an abort."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_lab import SCHEMA

jsonschema = pytest.importorskip("jsonschema")

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = REPO_ROOT.parent / "shared" / "corpus"

# Both stand-ins first record their arguments and whether stdin is /dev/null.
RECORD = r'''#!PYTHON
import json, os, shutil, subprocess, sys
args = sys.argv[1:]
null, st = os.stat("/dev/null"), os.fstat(0)
with open(os.environ["STANDIN_LOG"], "a") as f:
    f.write(json.dumps({"tool": TOOL, "args": args,
                        "stdin_devnull": (st.st_rdev, st.st_ino) == (null.st_rdev, null.st_ino)}) + "\n")
'''

NSYS = RECORD.replace("TOOL", '"nsys"') + r'''if os.environ.get("STANDIN_FAIL") == "nsys":
    print("nsys: no CUDA driver (the stand-in was told to fail)", file=sys.stderr)
    sys.exit(3)
faithful = os.environ.get("STANDIN_FAITHFUL") == "1"
if args[0] == "profile":
    report = args[args.index("-o") + 1]
    command = args[args.index("-o") + 2:]
    if faithful:  # record the run's own kernels, as nsys would: the engine's trace of every unit
        at = command.index("--warmup")
        command[at:at + 4] = ["--warmup", "0", "--iterations", "4"]
        command += ["--profile", "--trace", report + ".json.gz"]
    code = subprocess.run(command).returncode
    open(report + ".nsys-rep", "wb").write(b"stand-in")
    sys.exit(code)
out, rep = args[args.index("-o") + 1], args[args.index("-o") + 2]
if faithful:  # the export: tierscope's nsys-schema SQLite of that trace
    code = subprocess.run([os.environ["TIERSCOPE_BIN_FOR_STANDIN"], "export",
                           rep[:-len(".nsys-rep")] + ".json.gz", out]).returncode
    if code != 0:
        sys.exit(code)
    import gzip, sqlite3
    db = sqlite3.connect(out)
    k = "CUPTI_ACTIVITY_KIND_KERNEL"
    # A profiler that times each kernel as the lab's Kineto run did (the mean of its
    # launches there): two runs' timings drift apart on a busy machine, and which of two
    # close kernels tops a run is then chance; here the profiled run's top is the Kineto
    # run's by construction (the tie rule is CompareTops's, tested on its own).
    system_dir, run_name = os.path.split(rep[:-len(".nsys-rep")])
    kineto = json.load(gzip.open(os.path.join(os.path.dirname(system_dir), "traces", run_name + ".json.gz")))
    total, count = {}, {}
    for e in kineto["traceEvents"]:
        if e.get("cat") == "kernel":
            total[e["name"]] = total.get(e["name"], 0.0) + 1000 * e["dur"]
            count[e["name"]] = count.get(e["name"], 0) + 1
    for sid, name in db.execute("SELECT id, value FROM StringIds").fetchall():
        if name in total:
            db.execute(f"UPDATE {k} SET end = start + ? WHERE demangledName = ?",
                       (max(1, round(total[name] / count[name])), sid))
    db.commit()
    if os.environ.get("STANDIN_STRETCH") == "1":  # the briefest kernel made 1000x longer
        name = db.execute(f"SELECT demangledName FROM {k} GROUP BY demangledName ORDER BY SUM(end - start) "
                          "LIMIT 1").fetchone()[0]
        db.execute(f"UPDATE {k} SET end = start + (end - start) * 1000 WHERE demangledName = ?", (name,))
        db.commit()
    sys.exit(code)
shutil.copyfile(os.environ["STANDIN_SQLITE"], out)
'''

NCU = RECORD.replace("TOOL", '"ncu"') + r'''name, csv = args[args.index("-k") + 1], args[args.index("--log-file") + 1]
rest = args[args.index("--log-file") + 2:]
code = subprocess.run(rest).returncode
head = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",' \
       '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
rows = [("GPU Speed Of Light Throughput", "Duration", "usecond", "14.05"),
        ("GPU Speed Of Light Throughput", "Compute (SM) Throughput", "%", "12.84"),
        ("GPU Speed Of Light Throughput", "Memory Throughput", "%", "91.27"),
        ("Launch Statistics", "Grid Size", "", "120"),
        ("Launch Statistics", "Block Size", "", "128"),
        ("Launch Statistics", "Registers Per Thread", "register/thread", "16"),
        ("Occupancy", "Achieved Occupancy", "%", "48.5")]
with open(csv, "w") as f:
    f.write("==PROF== Connected to process 4242\n" + head)
    for sec, metric, unit, value in rows:
        f.write(",".join(f'"{v}"' for v in ("0", "4242", "tierscope", "host", name, "1", "7", "(128, 1, 1)",
                                             "(120, 1, 1)", "0", "9.0", sec, metric, unit, value)) + "\n")
sys.exit(code)
'''


@pytest.fixture()
def standins(tmp_path):
    sqlite = CORPUS / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
    if not sqlite.is_file():
        pytest.skip(f"{sqlite} is missing")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # Moore Threads' msys and mcu take the same arguments (-t musa, .msys-rep).
    msys = NSYS.replace('"nsys"', '"msys"').replace(".nsys-rep", ".msys-rep").replace("nsys:", "msys:")
    for name, text in (("nsys", NSYS), ("ncu", NCU), ("msys", msys), ("mcu", NCU.replace('"ncu"', '"mcu"'))):
        (bin_dir / name).write_text(text.replace("PYTHON", sys.executable))
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "standin.jsonl"
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", STANDIN_LOG=str(log), STANDIN_SQLITE=str(sqlite))
    return env, log


def run_lab(tierscope_bin, out, env, system="nsys", kernel="ncu", stderr=None):
    """The lab's summary.json; `stderr`, a list, gets its stderr lines."""
    run = subprocess.run([str(tierscope_bin), "lab", "--quick", "--threads", "2", "--batch-size", "16", "--seq-len",
                          "32", "--out", str(out), "--system-profiler", system, "--kernel-profiler", kernel],
                         capture_output=True, text=True, timeout=900, env=env, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stdout + run.stderr[-4000:]
    if stderr is not None:
        stderr += run.stderr.splitlines()
    return json.loads((out / "summary.json").read_text())


def test_profilers_run_as_the_study_runs_them_and_their_outputs_are_read(tierscope_bin, standins, tmp_path):
    env, log = standins
    s = run_lab(tierscope_bin, tmp_path / "results", env)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert all(c["stdin_devnull"] for c in calls), calls  # msys reads stdin: every profiler gets /dev/null
    profiles = [c["args"] for c in calls if c["tool"] == "nsys" and c["args"][0] == "profile"]
    exports = [c["args"] for c in calls if c["tool"] == "nsys" and c["args"][0] == "export"]
    kernels = [c["args"] for c in calls if c["tool"] == "ncu"]
    assert len(profiles) == len(exports) == len(kernels) == 2
    for p in profiles:
        assert p[:8] == ["profile", "-t", "cuda", "--delay", "1", "--force-overwrite", "true", "-o"]
        bench = p[9:]
        assert bench[1:4] == ["bench", "--engine", "native"] and "--pre-delay" in bench
        assert bench[bench.index("--pre-delay") + 1] == "2"  # the capture starts a second before the work
    for e in exports:
        assert e[:7] == ["export", "--type", "sqlite", "--force-overwrite", "true", "-o", e[6]] and e[6].endswith(".sqlite")
        assert e[7].endswith(".nsys-rep")
    for k in kernels:
        # The clocks as they run (a shared machine's are not ours to lock), occupancy, DRAM bytes.
        assert k[:7] == ["--clock-control", "none", "--section", "Occupancy", "--print-units", "base", "--metrics"]
        assert k[7] == "dram__bytes_read.sum,dram__bytes_write.sum"
        k = k[8:]
        assert k[:3] == ["--kernel-name-base", "demangled", "-k"]  # Kineto's names are demangled signatures
        assert k[4:18] == ["-c", "1", "--section", "SpeedOfLight", "--section", "LaunchStats", "--section",
                           "MemoryWorkloadAnalysis", "--target-processes", "all", "--csv", "--page", "details",
                           "--log-file"]
        assert k[18].endswith(".ncu.csv") and k[20] == "bench"
    steps = s["profilers"]["steps"]
    system = [st for st in steps if st["tool"] == "nsys"]
    assert [st["run"] for st in system] == ["serial", "batch"]
    for st in system:
        # The corpus export (saxpy over MPI) holds none of the engine's kernels: the check says so.
        assert st["status"] == "disagrees", st
        assert st["kernels"] > 0 and st["kineto_kernels_missing"] > 0
        assert (tmp_path / "results" / st["sqlite"]).is_file()
    for st in (st for st in steps if st["tool"] == "ncu"):
        assert st["status"] == "ok", st
        run = st["run"]
        assert s["tier3"][run]["kernel"] == st["kernel"]
        report = s["tier3"][run]["report"]
        assert report["source"].startswith("ncu"), report["source"]
        # The run's own trace completes the one profiled launch: share of time and spread.
        assert f"traces/{run}.json.gz" in report["source"], report["source"]
        hot = next(c for c in report["recommendation"]["checks"] if c["check"] == "stable hot spot")
        assert "% of kernel time (rank 1)" in hot["evidence"] and "launches" in hot["evidence"], hot
    assert all(st["command"].startswith(st["tool"] + " ") for st in steps)
    assert any(c.startswith("tierscope kernel --ncu-csv kernels/batch.ncu.csv") for c in s["commands"])
    jsonschema.validate(s, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_a_failing_profiler_is_a_reported_step_not_an_abort(tierscope_bin, standins, tmp_path):
    env, _ = standins
    env = dict(env, STANDIN_FAIL="nsys")
    s = run_lab(tierscope_bin, tmp_path / "results", env, kernel="none")
    system = [st for st in s["profilers"]["steps"] if st["tool"] == "nsys"]
    assert len(system) == 2
    for st in system:
        assert st["status"] == "failed"
        assert "nsys profile exited with status 3: nsys: no CUDA driver" in st["note"], st
    assert s["profilers"]["kernel"] == "" and "serial" in s["tier3"]  # tier 3 replayed as without ncu
    jsonschema.validate(s, SCHEMA, cls=jsonschema.Draft202012Validator)
    # A profiler that is not installed at all is a reported failure too.
    missing = str(tmp_path / "not-installed" / "msys")
    err = []
    s = run_lab(tierscope_bin, tmp_path / "results2", env, system=missing, kernel="none", stderr=err)
    msys = s["profilers"]["steps"]
    assert msys and all(st["status"] == "failed" and f"cannot run {missing}" in st["note"] for st in msys), msys
    # Said on the terminal as well, once a run, not only in the summary and the report.
    warned = [l for l in err if "warning: " in l]
    assert [l.split("warning: ", 1)[1] for l in warned] == [
        f"{missing} (serial run) failed: cannot run {missing}: No such file or directory",
        f"{missing} (batch run) failed: cannot run {missing}: No such file or directory"], err


@pytest.mark.parametrize("flag,value,names", [("--system-profiler", "perf", "nsys or msys"),
                                              ("--kernel-profiler", "/opt/tools/nsys", "ncu or mcu")])
def test_a_profiler_that_is_not_one_is_refused(tierscope_bin, tmp_path, flag, value, names):
    run = subprocess.run([str(tierscope_bin), "lab", "--quick", flag, value, "--out", str(tmp_path / "r")],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert run.returncode != 0
    assert run.stderr.strip().splitlines() == [
        f"tierscope: error: {flag} must be auto, none, {names} (or a path to one), got '{value}'"]


def test_moore_threads_profilers_run_the_same_way(tierscope_bin, standins, tmp_path):
    # msys traces MUSA (-t musa) and writes .msys-rep; mcu takes ncu's arguments.
    env, log = standins
    s = run_lab(tierscope_bin, tmp_path / "results", env, system="msys", kernel="mcu")
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    profiles = [c["args"] for c in calls if c["tool"] == "msys" and c["args"][0] == "profile"]
    exports = [c["args"] for c in calls if c["tool"] == "msys" and c["args"][0] == "export"]
    kernels = [c["args"] for c in calls if c["tool"] == "mcu"]
    assert len(profiles) == len(exports) == len(kernels) == 2 and all(c["stdin_devnull"] for c in calls)
    for p in profiles:
        assert p[:3] == ["profile", "-t", "musa"]
    for e in exports:
        assert e[7].endswith(".msys-rep")
    for k in kernels:
        assert k[:3] == ["--kernel-name-base", "demangled", "-k"] and k[18].endswith(".mcu.csv")
    steps = s["profilers"]["steps"]
    assert {st["tool"] for st in steps} == {"msys", "mcu"}
    assert all(st["status"] in ("ok", "disagrees") for st in steps), steps
    jsonschema.validate(s, SCHEMA, cls=jsonschema.Draft202012Validator)


def test_a_system_profile_of_the_same_kernels_checks_out(tierscope_bin, standins, tmp_path):
    # A stand-in nsys that records what the run really launched (the engine's own trace of
    # the profiled run, exported to nsys's schema, timed as the Kineto run timed each
    # kernel): every kernel of the Kineto trace is in it, 4 units' worth, and both put the
    # same one on top — the check's "ok".
    env, _ = standins
    env = dict(env, STANDIN_FAITHFUL="1", TIERSCOPE_BIN_FOR_STANDIN=str(tierscope_bin))
    s = run_lab(tierscope_bin, tmp_path / "results", env, kernel="none")
    system = [st for st in s["profilers"]["steps"] if st["tool"] == "nsys"]
    assert len(system) == 2
    for st in system:
        assert st["status"] == "ok", st
        assert st["kineto_kernels_missing"] == 0, st
        assert st["hottest"] == st["kineto_hottest"], st
        assert st["hottest_vs_kineto_top"] == st["kineto_top_vs_hottest"] == 1, st
        assert f"both put {st['hottest']} on top" in st["note"], st
        assert st["units_profiled"] == 4 and st["kernel_counts_off"] == 0, st


def test_a_system_profile_whose_hottest_kernel_is_another_disagrees(tierscope_bin, standins, tmp_path):
    # The same kernels, but the export times the Kineto trace's briefest one 1000x longer: its
    # top is not the Kineto trace's, nor within run-to-run drift of it — the check says so.
    env, _ = standins
    env = dict(env, STANDIN_FAITHFUL="1", STANDIN_STRETCH="1", TIERSCOPE_BIN_FOR_STANDIN=str(tierscope_bin))
    s = run_lab(tierscope_bin, tmp_path / "results", env, kernel="none")
    system = [st for st in s["profilers"]["steps"] if st["tool"] == "nsys"]
    assert len(system) == 2
    for st in system:
        assert st["status"] == "disagrees", st
        assert st["kineto_kernels_missing"] == 0 and st["hottest"] != st["kineto_hottest"], st
        assert st["hottest_vs_kineto_top"] < 0.8, st
        assert "beyond run-to-run drift" in st["note"], st
