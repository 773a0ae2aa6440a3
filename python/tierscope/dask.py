"""A whole job on Dask: each rank's trace is read and reduced on a worker (tierscope's C++
importer and analyzer), only the summaries travel back, and the client assembles the job
(stragglers, cross-rank reports, findings) with the same C++ code as `tierscope analyze
DIR`. The result is the CLI's JSON, reports as DataFrames.

    from tierscope.dask import analyze_job
    job = analyze_job("runs/job/")                  # a LocalCluster on this machine
    from dask.distributed import Client
    job = analyze_job(paths, client=Client(scheduler_file="scheduler.json"))  # a cluster

On a cluster every worker needs the tierscope package and the trace files at the same
paths (a shared file system), as for Nsight Systems' Dask recipes.
"""
from __future__ import annotations

import json
import os
from typing import Iterable, Optional, Union

from . import _result, _tierscope

__all__ = ["analyze_job", "rank_summary"]


def rank_summary(path: str) -> bytes:
    """What one worker computes: the rank's trace reduced to its summary (MessagePack)."""
    return _tierscope.rank_summary(path)


def analyze_job(paths: Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]],
                client: Optional["distributed.Client"] = None, n_workers: int = 2) -> dict:
    """`tierscope analyze` of a job (a directory, or one trace per rank) on Dask: the
    caller's `client`, or a LocalCluster of `n_workers` single-threaded worker processes
    started for the call and closed after it."""
    from dask.distributed import Client, LocalCluster

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    # Absolute: a worker's working directory is its own.
    files = [os.path.abspath(f) for f in _tierscope.job_files([os.fspath(p) for p in paths])]
    own = client is None
    cluster = None
    if own:
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        futures = client.map(rank_summary, files, pure=False)
        summaries = client.gather(futures)
        workers = len(client.scheduler_info().get("workers", {})) or 1
    finally:
        if own:
            client.close()
            cluster.close()
    return _result(json.loads(_tierscope.job_from_summaries(files, summaries, workers)))
