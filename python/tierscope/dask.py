"""A whole job on Dask: each rank's trace is read and reduced on a worker (tierscope's C++
importer and analyzer), only the summaries travel back, and the client assembles the job
(stragglers, cross-rank reports, findings) with the same C++ code as `tierscope analyze
DIR`. The result is the CLI's JSON, reports as DataFrames.

    from tierscope.dask import analyze_job
    job = analyze_job("runs/job/")                  # a LocalCluster on this machine
    from dask.distributed import Client
    job = analyze_job(paths, client=Client(scheduler_file="scheduler.json"))  # a cluster

Each worker reads no more traces at once than its threads and, by the CLI's rule, than
fit in 80% of its memory_limit: 1.5x a trace's JSON when read whole; a trace that does not
fit whole is streamed (its trace and index alone, about 0.95x its JSON with its args in memory, 0.62x
with them spilled to disk, plus a 64 MiB window); a trace that fits no worker even streamed is refused
before anything is read. On a cluster every worker needs the tierscope package and
the trace files at the same paths (a shared file system), as for Nsight Systems' Dask
recipes.
"""
from __future__ import annotations

import json
import os
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Union

from . import _fs, _job_files, _result, _tierscope

__all__ = ["analyze_job", "rank_summary", "estimated_bytes", "run_within_memory"]

# The CLI's memory rule (src/analysis/job_files.cc, PlanLoad): a trace read whole and
# indexed takes about 1.5x its JSON; streamed, its trace alone and the window, its args
# spilled to disk where the spill directory allows (StreamedTraceBytes and SpillsStrings in
# src/trace/kineto_stream.h, asked of the C++ here, on the client); the traces in flight
# stay within 80% of a worker's memory.
_PER_BYTE = 1.5
_MEMORY_SHARE = 0.8


def rank_summary(path: str, memory_budget: Optional[int] = None) -> bytes:
    """What one worker computes: the rank's trace reduced to its summary (MessagePack),
    streamed when reading it whole would pass `memory_budget` bytes (None: the default,
    half of the memory available)."""
    _tierscope.set_memory_budget(int(memory_budget) if memory_budget else 0)
    return _tierscope.rank_summary(path)


def _need(size: int, budget: Optional[float]) -> float:
    """Memory one trace of `size` bytes of JSON takes on a worker with `budget`."""
    whole = _PER_BYTE * size
    if budget is None or whole <= budget:
        return whole
    return float(_tierscope.streamed_trace_bytes(int(size), _tierscope.spills_args()))


def estimated_bytes(path: str) -> int:
    """The bytes `path` holds once read, as the CLI budgets them (EstimatedInputBytes): its
    size, or for gzip what its trailer claims, unless the stream's first MiB shows the
    trailer wrapped past 4 GiB. OSError when it cannot be read."""
    n = _tierscope.estimated_bytes(_fs(path))
    if n < 0:
        raise OSError(f"{path}: cannot read it")
    return n


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _workers(client) -> Dict[str, dict]:
    """Address -> {"nthreads", "budget"}: budget is 80% of memory_limit (None: no limit)."""
    out = {}
    for address, w in sorted(client.scheduler_info().get("workers", {}).items()):
        limit = w.get("memory_limit") or 0
        out[address] = {"nthreads": max(1, int(w.get("nthreads") or 1)),
                        "memory_limit": int(limit),
                        "budget": _MEMORY_SHARE * limit if limit > 0 else None}
    if not out:
        raise ValueError("the Dask cluster has no workers")
    return out


def run_within_memory(client, fn: Callable[[str], object], paths: Sequence[str],
                      sizes: Sequence[int]) -> tuple:
    """fn(path, budget) for every path on the cluster, each worker running at most its
    threads' worth at once and only while the traces it runs need (_need of their `sizes`)
    no more than 80% of its memory_limit (`budget`, passed on: None when unlimited). Returns (results in the order of `paths`, one dict per worker:
    address, nthreads, memory_limit, budget_bytes, most_at_once). ValueError, before
    anything runs, for a path that fits no worker; the first task's error otherwise."""
    from dask.distributed import as_completed

    workers = _workers(client)
    budgets = [w["budget"] for w in workers.values()]
    largest = None if any(b is None for b in budgets) else max(budgets)
    for path, size in zip(paths, sizes):
        need = _need(size, largest)
        if largest is not None and need > largest:
            raise ValueError(f"{path}: even streamed, its trace takes about {_gib(need)} (for "
                             f"its {_gib(size)} of JSON and the window), more than 80% of any Dask worker's "
                             f"memory_limit (the largest allows {_gib(largest)}); give the workers more memory")
    running: Dict[str, List[float]] = {a: [] for a in workers}  # address -> needs in flight
    most = {a: 0 for a in workers}
    pending = list(range(len(paths)))
    owner = {}  # future key -> (index, address, need)
    results: List[object] = [None] * len(paths)
    done = as_completed()

    def fits(address: str, need: float) -> bool:
        w = workers[address]
        if len(running[address]) >= w["nthreads"]:
            return False
        return w["budget"] is None or sum(running[address]) + need <= w["budget"]

    def start() -> None:
        for i in list(pending):
            # The least busy worker that has room for it now, then the most memory left.
            room = [a for a in workers if fits(a, _need(sizes[i], workers[a]["budget"]))]
            if not room:
                continue
            address = min(room, key=lambda a: (len(running[a]), sum(running[a]) - (workers[a]["budget"] or 0)))
            budget = workers[address]["budget"]
            need = _need(sizes[i], budget)
            future = client.submit(fn, paths[i], int(budget) if budget else None, workers=[address],
                                   allow_other_workers=False, pure=False)
            running[address].append(need)
            most[address] = max(most[address], len(running[address]))
            owner[future.key] = (i, address, need)
            pending.remove(i)
            done.add(future)

    start()
    try:
        for future in done:
            i, address, need = owner.pop(future.key)
            running[address].remove(need)
            results[i] = future.result()  # raises the task's error
            start()
    except BaseException:
        for future in list(done.futures):
            future.cancel()
        raise
    plan = [{"address": a, "nthreads": w["nthreads"], "memory_limit": w["memory_limit"],
             "budget_bytes": int(w["budget"]) if w["budget"] is not None else None, "most_at_once": most[a]}
            for a, w in workers.items()]
    return results, plan


def analyze_job(paths: Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]],
                client: Optional["distributed.Client"] = None, n_workers: int = 2) -> dict:
    """`tierscope analyze` of a job (a directory, or one trace per rank) on Dask: the
    caller's `client`, or a LocalCluster of `n_workers` single-threaded worker processes
    started for the call and closed after it. Each worker reads its traces within its
    memory_limit (run_within_memory); job["read"]["dask"] says how, per worker."""
    from dask.distributed import Client, LocalCluster

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    # Absolute: a worker's working directory is its own.
    files = [os.path.abspath(f) for f in _job_files(paths)]
    sizes = [estimated_bytes(f) for f in files]
    own = client is None
    cluster = None
    if own:
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        summaries, plan = run_within_memory(client, rank_summary, files, sizes)
    finally:
        if own:
            client.close()
            cluster.close()
    job = _result(json.loads(_tierscope.job_from_summaries(files, summaries, len(plan))))
    job["read"]["dask"] = plan
    return job
