"""The real `nsys export --type sqlite` in the corpus (an MPI + CUDA saxpy on Perlmutter)
read by tierscope, against the same tables counted with Python's sqlite3: kernels,
runtime calls and memcpys (count and total time), and every NVTX push/pop or start/end
range in nvtx_sum by name, with the one kernel projected onto the range that launched
it in nvtx_kern_sum."""
from __future__ import annotations

import json
from pathlib import Path
import sqlite3
import subprocess

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

EXPORT = REPO_ROOT.parent / "shared" / "corpus" / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
NVTX_RANGE_TYPES = (59, 60)  # NvtxPushPopRange, NvtxStartEndRange (the export has no enum table)


@pytest.fixture(scope="module")
def db():
    if not EXPORT.exists():
        pytest.skip(f"corpus export missing: {EXPORT}")
    con = sqlite3.connect(f"file:{EXPORT}?mode=ro", uri=True)
    yield con
    con.close()


def stats(tierscope_bin, reports):
    p = subprocess.run([str(tierscope_bin), "stats", str(EXPORT), "--report", reports, "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return {r["name"]: r for r in json.loads(p.stdout)["reports"]}


def by_name(report, name_col="Name"):
    return {row[name_col]: row for row in report["rows"]}


def test_kernels_runtime_and_memcpy_match_sqlite(db, tierscope_bin):
    r = stats(tierscope_bin, "cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum")
    for table, report in [("CUPTI_ACTIVITY_KIND_KERNEL", "cuda_gpu_kern_sum"),
                          ("CUPTI_ACTIVITY_KIND_RUNTIME", "cuda_api_sum"),
                          ("CUPTI_ACTIVITY_KIND_MEMCPY", "cuda_gpu_mem_time_sum")]:
        count, total = db.execute(f"SELECT count(*), sum(end - start) FROM {table}").fetchone()
        rows = r[report]["rows"]
        count_col = "Instances" if "Instances" in r[report]["columns"] else "Count"
        assert sum(row[count_col] for row in rows) == count, report
        assert sum(row["Total Time (ns)"] for row in rows) == total, report


def test_every_nvtx_range_is_in_nvtx_sum(db, tierscope_bin):
    names = dict(db.execute("SELECT id, value FROM StringIds").fetchall())
    want = {}
    q = f"SELECT text, textId, end - start FROM NVTX_EVENTS WHERE eventType IN {NVTX_RANGE_TYPES}"
    for text, text_id, dur in db.execute(q):
        name = text if text else names.get(text_id, "(unnamed NVTX range)")
        n, t = want.get(name, (0, 0))
        want[name] = (n + 1, t + dur)
    assert sum(n for n, _ in want.values()) == 22  # the export's push/pop ranges
    r = stats(tierscope_bin, "nvtx_sum,nvtx_kern_sum")
    got = {row["Range"]: (row["Instances"], row["Total Time (ns)"])
           for row in r["nvtx_sum"]["rows"] if row["Side"] == "host"}
    assert got == want
    # The saxpy kernel (5 launches, 88,573,480 ns) runs inside the "saxpy" range.
    kern = [row for row in r["nvtx_kern_sum"]["rows"] if row["Range"] == "saxpy"]
    kernels = db.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    assert [(row["Kern Inst"], row["Total Time (ns)"], row["Range Inst"]) for row in kern] == [
        (kernels[0], kernels[1], 5)]
