"""tierscope.dask.analyze_job on a LocalCluster of 2 worker processes on loopback: the
corpus pair, a 4-rank job tiled from it and the corpus's T4 job of 3 windows per rank give
the CLI's reports and findings exactly (only the "read" line differs: Dask's workers, not
the CLI's threads); a bad rank raises with its file named; the caller's own Client is used
as given. The memory plan: each worker runs no more traces at once than fit in 80% of its
memory_limit at 1.5x their JSON (observed from the workers' own clocks and Dask's task
stream), and a trace that fits no worker is refused naming it."""
from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

tierscope = pytest.importorskip("tierscope")
pytest.importorskip("dask.distributed")
import dask  # noqa: E402
from dask.distributed import Client, LocalCluster, get_task_stream, get_worker  # noqa: E402

from tierscope.dask import analyze_job, estimated_bytes, run_within_memory  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIELD = REPO.parent / "shared" / "corpus" / "traces" / "field"
PAIR = [FIELD / f"hta__trace_filter__sampled_rank-{r}.json.gz" for r in (0, 1)]
T4_JOB = REPO.parent / "shared" / "corpus" / "traces" / "vendors" / "t4_p2p_job"
MIB = 2**20


@pytest.fixture(scope="module")
def client():
    for p in PAIR:
        if not p.exists():
            pytest.skip(f"corpus file missing: {p}")
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def cli(bin_path, *paths):
    p = subprocess.run([str(bin_path), "analyze", *map(str, paths), "--format", "json"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def same_job(job, doc):
    assert {k: job["read"][k] for k in ("in_flight", "why")} == {"in_flight": 2, "why": "Dask: 2 workers"}
    assert len(job["read"]["dask"]) == 2  # the plan, per worker
    assert job["ranks"] == doc["ranks"]
    assert job["findings"] == doc["findings"]
    assert job["alignment"] == doc["alignment"]
    assert list(job["reports"]) == [r["name"] for r in doc["reports"]]
    for r in doc["reports"]:
        frame = job["reports"][r["name"]]
        assert list(frame.columns) == r["columns"]
        got = frame.to_dict(orient="records")
        assert len(got) == len(r["rows"]), r["name"]
        for a, b in zip(got, r["rows"]):
            for c in r["columns"]:
                if isinstance(b.get(c), float):
                    assert a[c] == pytest.approx(b[c], rel=1e-12), (r["name"], c)
                else:
                    assert a[c] == b.get(c), (r["name"], c)


def test_the_corpus_pair_equals_the_cli(client, tierscope_bin):
    same_job(analyze_job(PAIR, client=client), cli(tierscope_bin, *PAIR))


def test_a_four_rank_job_equals_the_cli(client, tierscope_bin, tmp_path):
    out = tmp_path / "job"
    p = subprocess.run([sys.executable, str(REPO / "bench" / "job" / "make_job.py"), str(out), "4", "4", "2",
                        str(PAIR[0])], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    job = analyze_job(out, client=client)
    same_job(job, cli(tierscope_bin, out))
    assert [r["rank"] for r in job["ranks"]] == [0, 1, 2, 3]
    assert any(f["rule"] == "straggler" and "rank 2" in f["title"] for f in job["findings"])


def test_relative_paths_reach_workers_whose_directory_differs(client, tierscope_bin, tmp_path, monkeypatch):
    job = tmp_path / "job"
    job.mkdir()
    for p in PAIR:
        (job / p.name).symlink_to(p)
    monkeypatch.chdir(tmp_path)  # the workers started elsewhere
    same_job(analyze_job("job", client=client), cli(tierscope_bin, job))


def test_a_bad_rank_raises_naming_its_file(client, tmp_path):
    shutil.copy(PAIR[0], tmp_path / "rank-0.json.gz")
    (tmp_path / "rank-1.json").write_text('{"traceEvents": [{"ph": "X",')
    with pytest.raises(ValueError, match="rank-1.json"):
        analyze_job(tmp_path, client=client)


def test_the_t4_jobs_windows_equal_the_cli(client, tierscope_bin):
    # rank_0/ ... rank_3/, one Kineto file per profiler step: the workers read the 12 files,
    # the client merges each rank's 3 windows as the CLI does.
    if not (T4_JOB / "steps_index.csv").exists():
        pytest.skip(f"corpus job missing: {T4_JOB}")
    job = analyze_job(T4_JOB, client=client)
    same_job(job, cli(tierscope_bin, T4_JOB))
    assert [(r["rank"], r["windows"]) for r in job["ranks"]] == [(0, 3), (1, 3), (2, 3), (3, 3)]


@contextlib.contextmanager
def bounded_cluster(memory_limit, threads, workers=2):
    """Workers (threads of this process) that report `memory_limit` but are never paused
    or killed for it: the plan's arithmetic is under test, not Dask's memory manager."""
    off = {f"distributed.worker.memory.{k}": False for k in ("target", "spill", "pause", "terminate")}
    with dask.config.set(off):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=threads, processes=False,
                               memory_limit=memory_limit, dashboard_address=None)
        c = Client(cluster)
        try:
            yield c
        finally:
            c.close()
            cluster.close()


def most_at_once(intervals):
    """The most (start, stop) intervals open at one instant."""
    edges = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals], key=lambda e: (e[0], e[1]))
    open_now = most = 0
    for _, d in edges:
        open_now += d
        most = max(most, open_now)
    return most


def test_each_worker_runs_no_more_ranks_at_once_than_fit_in_its_memory():
    # 4 threads per worker, but 80% of 32 MiB holds 2 ranks of 8 MiB at 1.5x (24 of 25.6 MiB).
    def work(path, budget):
        start = time.time()
        time.sleep(0.3)
        return path, get_worker().address, start, time.time()

    with bounded_cluster("32MiB", threads=4) as c:
        paths = [f"rank-{i}.json" for i in range(8)]
        results, plan = run_within_memory(c, work, paths, [8 * MIB] * 8)
    assert [r[0] for r in results] == paths  # in the order asked
    by_worker = {}
    for _, worker, start, stop in results:
        by_worker.setdefault(worker, []).append((start, stop))
    assert len(by_worker) == 2
    for worker, intervals in by_worker.items():
        assert most_at_once(intervals) == 2, (worker, intervals)  # the threads alone would allow 4
    assert [(w["nthreads"], w["budget_bytes"], w["most_at_once"]) for w in plan] == [(4, int(0.8 * 32 * MIB), 2)] * 2

    # Without a memory_limit the threads decide.
    with bounded_cluster(0, threads=3, workers=1) as c:
        results, plan = run_within_memory(c, work, paths[:6], [8 * MIB] * 6)
    assert most_at_once([(r[2], r[3]) for r in results]) == 3
    assert plan[0]["budget_bytes"] is None


def test_a_job_on_small_workers_is_read_one_rank_at_a_time(tierscope_bin, tmp_path):
    # 4 ranks of about 4 MB: 80% of 10 MiB holds one at 1.5x, though each worker has 2 threads.
    out = tmp_path / "job"
    p = subprocess.run([sys.executable, str(REPO / "bench" / "job" / "make_job.py"), str(out), "4", "4", "2",
                        str(PAIR[0])], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    sizes = [estimated_bytes(str(f)) for f in sorted(out.glob("rank-*.json"))]
    assert all(1.5 * s <= 0.8 * 10 * MIB < 2 * 1.5 * min(sizes) for s in sizes), sizes
    with bounded_cluster("10MiB", threads=2) as c:
        with get_task_stream(c) as stream:
            job = analyze_job(out, client=c)
    same_job(job, cli(tierscope_bin, out))
    assert [w["most_at_once"] for w in job["read"]["dask"]] == [1, 1]
    by_worker = {}
    for task in stream.data:
        for ss in task["startstops"]:
            if ss["action"] == "compute":
                by_worker.setdefault(task["worker"], []).append((ss["start"], ss["stop"]))
    assert sum(len(v) for v in by_worker.values()) == 4
    for worker, intervals in by_worker.items():
        assert most_at_once(intervals) == 1, (worker, intervals)


def test_a_rank_that_fits_no_worker_is_refused_naming_it(tmp_path):
    for p in PAIR:
        if not p.exists():
            pytest.skip(f"corpus file missing: {p}")
    job = tmp_path / "job"
    job.mkdir()
    for p in PAIR:
        (job / p.name).symlink_to(p)
    # About 1.7 MB of JSON each: 2.5 MB to read whole, over 80% of 2 MiB.
    with bounded_cluster("2MiB", threads=1) as c:
        # Streamed, it would still take the 64 MiB window and its trace.
        with pytest.raises(ValueError, match=r"sampled_rank-0\.json\.gz: even streamed, its trace takes about .* "
                                             r"more than 80% of any Dask worker's memory_limit"):
            analyze_job(job, client=c)
