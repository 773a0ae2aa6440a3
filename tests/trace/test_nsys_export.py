"""The real `nsys export --type sqlite` in the corpus (an MPI + CUDA saxpy on Perlmutter)
read by tierscope, against the same tables counted with Python's sqlite3: kernels,
runtime calls and memcpys (count and total time), and every NVTX push/pop or start/end
range in nvtx_sum by name, with the one kernel projected onto the range that launched
it in nvtx_kern_sum. And `tierscope export` against it: table by table, every column the
real export has is in ours with its declared type, NOT NULL and order, the ones a Kineto
trace fills are filled, gridId is one per launch, and the metadata rows sit in nsys's
EXPORT_META_DATA, read back from it and from older exports' META_DATA_EXPORT."""
from __future__ import annotations

import gzip
import json
from pathlib import Path
import re
import shutil
import sqlite3
import subprocess

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

CORPUS = REPO_ROOT.parent / "shared" / "corpus"
EXPORT = CORPUS / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
# Kineto traces exported and compared: an A100 forward pass with kernels, memcpys, memsets,
# stream syncs and user annotations; and a ROCm one (runtime family "hip", kept in the metadata).
KINETO = CORPUS / "traces" / "benchmark_result_2869224_1695835535_trace.json.gz"
HIP_KINETO = CORPUS / "traces" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
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


def test_a_damaged_export_is_an_error_and_a_missing_launch_size_is_none(db, tierscope_bin, tmp_path):
    # Each once read as a whole export: names as "<unknown string N>", calls split by id,
    # launches unmatched, a grid of [0, 1, 1] (exit 0, no word of it).
    flip = tmp_path / "flip.sqlite"
    data = bytearray(EXPORT.read_bytes())
    data[4096] ^= 0xFF  # the root page of StringIds in this file
    flip.write_bytes(bytes(data))
    nostr = tmp_path / "nostr.sqlite"
    shutil.copyfile(EXPORT, nostr)
    nogrid = tmp_path / "nogrid.sqlite"
    shutil.copyfile(EXPORT, nogrid)
    for path, sql in ((nostr, "DROP TABLE StringIds"), (nogrid, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN gridX")):
        con = sqlite3.connect(path)
        con.execute(sql)
        con.commit()
        con.close()
    for path, code, says in ((flip, 1, "flip.sqlite: reading StringIds: database disk image is malformed"),
                             (nostr, 2, "nostr.sqlite: 18 names are StringIds references, but the export has no "
                                        "StringIds table")):
        p = subprocess.run([str(tierscope_bin), "analyze", str(path)], capture_output=True, text=True, timeout=120)
        assert p.returncode == code and len(p.stderr.strip().splitlines()) == 1 and says in p.stderr, p.stderr
    p = subprocess.run([str(tierscope_bin), "stats", str(nogrid), "--report", "hot_kernels", "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["reports"][0]["rows"]
    assert rows and all(r["Grid"] in (None, "-", "") for r in rows), rows


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


# --- tierscope export against the real export's schema ---

TABLES = ["StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
          "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS", "TARGET_INFO_GPU",
          "EXPORT_META_DATA"]
# Columns of the real export a Kineto trace records, hence filled in every row of ours.
FILLED = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
                                   "demangledName", "shortName", "registersPerThread", "gridX", "gridY", "gridZ",
                                   "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory",
                                   "gridId"],
    "CUPTI_ACTIVITY_KIND_RUNTIME": ["start", "end", "globalTid", "correlationId", "nameId"],
    "CUPTI_ACTIVITY_KIND_MEMCPY": ["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
                                   "bytes", "copyKind", "srcKind", "dstKind"],
    "CUPTI_ACTIVITY_KIND_MEMSET": ["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
                                   "bytes", "memKind"],
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": ["start", "end", "deviceId", "contextId", "streamId", "correlationId",
                                            "syncType"],
    "NVTX_EVENTS": ["start", "end", "eventType", "text", "globalTid"],
    "TARGET_INFO_GPU": ["id", "name", "totalMemory", "smCount", "cuDevice"],
}
# Columns it does not record: NULL, as nsys leaves them when CUPTI does not say (a
# regular, non-graph launch; a copy that is not peer-to-peer).
UNFILLED = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ["mangledName", "sharedMemoryExecuted", "graphNodeId", "sharedMemoryLimitConfig"],
    "CUPTI_ACTIVITY_KIND_MEMCPY": ["deprecatedSrcId", "srcDeviceId", "srcContextId", "dstDeviceId", "dstContextId",
                                   "migrationCause", "graphNodeId", "virtualAddress"],
    "CUPTI_ACTIVITY_KIND_MEMSET": ["graphNodeId"],
    "TARGET_INFO_GPU": ["busLocation", "uuid", "chipName"],
}


def need(*paths):
    for p in paths:
        if not p.exists():
            pytest.skip(f"corpus file missing: {p}")


def export(tierscope_bin, trace, out):
    p = subprocess.run([str(tierscope_bin), "export", str(trace), str(out)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return sqlite3.connect(f"file:{out}?mode=ro", uri=True)


def columns(con, table):
    """(name, declared type, NOT NULL) of each column, in order."""
    return [(c[1], c[2].upper(), bool(c[3])) for c in con.execute(f"PRAGMA table_info({table})")]


def added_later(con, table):
    """Columns appended by ALTER TABLE ... ADD COLUMN after nsys wrote the file (SQLite
    writes each into the CREATE statement as a line ", name TYPE"): the corpus file's
    RUNTIME and MEMCPY carry an empty `name`, added by the tool it was taken from, not nsys."""
    (sql,), = con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,))
    return set(re.findall(r"\n, (\w+) ", sql))


@pytest.fixture(scope="module")
def ours(tierscope_bin, tmp_path_factory):
    need(KINETO)
    con = export(tierscope_bin, KINETO, tmp_path_factory.mktemp("export") / "alexnet.sqlite")
    yield con
    con.close()


def test_our_export_has_every_column_of_the_real_one(db, ours):
    for table in TABLES:
        real = columns(db, table)
        assert real, f"the real export has no {table}"
        later = added_later(db, table)
        for col in later:  # never nsys's: empty in every row
            assert db.execute(f"SELECT count({col}) FROM {table}").fetchone() == (0,), (table, col)
        real = [c for c in real if c[0] not in later]
        mine = columns(ours, table)
        by_name = {c[0]: c for c in mine}
        assert [c for c in real if by_name.get(c[0]) != c] == [], f"{table}: columns missing or declared otherwise"
        shared = {c[0] for c in real}
        assert [c[0] for c in mine if c[0] in shared] == [c[0] for c in real], f"{table}: another column order"


def test_what_the_trace_records_is_filled_and_the_rest_is_null(ours):
    for table, cols in FILLED.items():
        (rows,), = ours.execute(f"SELECT count(*) FROM {table}")
        assert rows > 0, f"the trace fills no {table}"
        for col in cols:
            assert ours.execute(f"SELECT count({col}) FROM {table}").fetchone() == (rows,), (table, col)
    for table, cols in UNFILLED.items():
        for col in cols:
            assert ours.execute(f"SELECT count({col}) FROM {table}").fetchone() == (0,), (table, col)
    # contextId is the trace's "context", no longer 0.
    with gzip.open(KINETO, "rt") as f:
        events = json.load(f)["traceEvents"]
    contexts = {e["args"]["context"] for e in events if e.get("cat") == "kernel"}
    assert {c for (c,) in ours.execute("SELECT DISTINCT contextId FROM CUPTI_ACTIVITY_KIND_KERNEL")} == contexts


def test_grid_id_is_one_per_kernel_launch_in_launch_order(ours):
    (n, distinct, low, high), = ours.execute(
        "SELECT count(*), count(DISTINCT gridId), min(gridId), max(gridId) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    assert n > 1 and distinct == n and (low, high) == (1, n)
    ids = [g for (g,) in ours.execute(
        "SELECT k.gridId FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
        "ON r.correlationId = k.correlationId ORDER BY r.start, k.start")]
    assert len(ids) == n and ids == sorted(ids)


def runtime_family(tierscope_bin, path):
    p = subprocess.run([str(tierscope_bin), "stats", str(path), "--report", "cuda_api_sum", "--format", "json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["trace"]["runtime"]


def test_meta_data_rows_are_in_export_meta_data_and_read_back_old_and_new(db, tierscope_bin, tmp_path):
    need(HIP_KINETO)
    out = tmp_path / "hip.sqlite"
    con = export(tierscope_bin, HIP_KINETO, out)
    assert columns(con, "EXPORT_META_DATA") == columns(db, "EXPORT_META_DATA")
    rows = dict(con.execute("SELECT name, value FROM EXPORT_META_DATA"))
    assert rows["TIERSCOPE_RUNTIME"] == "hip" and "TIERSCOPE_RANK" in rows
    # nsys 2024 names the table META_DATA_EXPORT: SQL written for it still runs.
    assert dict(con.execute("SELECT name, value FROM META_DATA_EXPORT")) == rows
    con.close()
    assert runtime_family(tierscope_bin, out) == "hip"
    # An export written before the rename (its rows in a META_DATA_EXPORT table) still reads.
    old = tmp_path / "old.sqlite"
    shutil.copy(out, old)
    con = sqlite3.connect(old)
    con.executescript("DROP VIEW META_DATA_EXPORT; ALTER TABLE EXPORT_META_DATA RENAME TO META_DATA_EXPORT;")
    con.close()
    assert runtime_family(tierscope_bin, old) == "hip"
    # And the family does come from those rows: without them an nsys file reads as CUDA.
    con = sqlite3.connect(old)
    con.execute("DROP TABLE META_DATA_EXPORT")
    con.commit()
    con.close()
    assert runtime_family(tierscope_bin, old) == "cuda"


def test_what_only_some_traces_record_is_filled(tierscope_bin, tmp_path):
    """A CUDA 12 Kineto trace's graph node ids, a peer-to-peer copy's two ends and an event
    sync's event (no corpus trace has them): graphNodeId, src/dst device and context, eventId."""
    def ev(cat, name, ts, args, tid=7):
        return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": tid, "ts": ts, "dur": 2, "args": args}
    events = [
        ev("cuda_runtime", "cudaGraphLaunch", 1, {"correlation": 10}, tid=100),
        ev("kernel", "void k<1>(int)", 5, {"device": 0, "context": 3, "stream": 7, "correlation": 10,
                                           "grid": [2, 1, 1], "block": [64, 1, 1], "graph id": 4,
                                           "graph node id": 77}),
        ev("kernel", "void k<1>(int)", 9, {"device": 0, "context": 3, "stream": 7, "correlation": 10,
                                           "grid": [2, 1, 1], "block": [64, 1, 1], "graph id": 0,
                                           "graph node id": 0}),
        ev("gpu_memcpy", "Memcpy PtoP (Device -> Device)", 13,
           {"fromDevice": 0, "inDevice": 0, "toDevice": 1, "fromContext": 3, "inContext": 3, "toContext": 5,
            "stream": 7, "correlation": 11, "bytes": 4096}),
        ev("cuda_sync", "Event Sync", 17, {"cuda_sync_kind": "Event Sync", "wait_on_stream": 7,
                                           "wait_on_cuda_event_record_corr_id": 10, "wait_on_cuda_event_id": 42,
                                           "stream": 7, "correlation": 12, "device": 0, "context": 3}),
    ]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    con = export(tierscope_bin, trace, tmp_path / "t.sqlite")
    assert con.execute("SELECT gridId, graphNodeId, contextId FROM CUPTI_ACTIVITY_KIND_KERNEL "
                       "ORDER BY start").fetchall() == [(1, 77, 3), (2, None, 3)]
    assert con.execute("SELECT copyKind, contextId, srcDeviceId, srcContextId, dstDeviceId, dstContextId "
                       "FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchall() == [(10, 3, 0, 3, 1, 5)]
    assert con.execute("SELECT syncType, eventId, contextId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION").fetchall() == [
        (1, 42, 3)]
