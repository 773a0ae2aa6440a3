"""Exports other engines read: Parquet tables partitioned by rank (pyarrow), which DuckDB,
Spark and Dask read directly, and the nsys SQLite schema (the CLI's `tierscope export`).

    OUT/kernels/rank=0/part-0.parquet, OUT/kernels/rank=1/..., OUT/runtime/..., ...

Each table is read_trace's DataFrame of that kind (names as strings), with a `rank`
column as the partition. A job whose ranks were profiled in several windows (one file per
profiler cycle, as users' rank_N/ folders hold them) has one part a window, part-<n> in
time order from 1, each table with a `window_number` column (n; WINDOW is an SQL
keyword), the same schema for every rank; a job of one file a rank has part-0 and no
such column."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Dict, Iterable, Union

from . import _tierscope, read_trace

TABLES = ("kernels", "ops", "runtime", "memops", "annotations", "syncs", "memory", "other", "flows")


def export_parquet(paths: Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]],
                   out_dir: Union[str, "os.PathLike[str]"], force: bool = False) -> Dict[str, int]:
    """Writes every table of every rank under `out_dir`, one rank in memory at a time;
    returns rows written per table. An `out_dir` that is not empty is refused unless
    `force`, which replaces the tables this export writes (and nothing else)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = list(_tierscope.job_files([os.fspath(p) for p in paths]))
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not out.is_dir():
            raise ValueError(f"{out}: exists and is not a directory")
        if not force:
            raise ValueError(f"{out}: exists and is not empty (pass --force to replace its tables)")
        for name in TABLES:
            shutil.rmtree(out / name, ignore_errors=True)
    staging = out / ".staging"
    shutil.rmtree(staging, ignore_errors=True)
    rows: Dict[str, int] = {}
    windows = []
    try:
        for i, f in enumerate(files):
            trace = read_trace(f)
            windows.append(tuple(trace._native.window))
            for name in TABLES:
                df = trace.table(name)
                table = pa.Table.from_pandas(df, preserve_index=False)
                part = staging / name / str(i)
                part.mkdir(parents=True, exist_ok=True)
                pq.write_table(table, part / "part-0.parquet")
                rows[name] = rows.get(name, 0) + len(df)
            del trace
        ranks = _tierscope.assign_rank_windows(files, windows)
        windowed = any(count > 1 for _, _, count in ranks)
        for name in TABLES:
            for i, (rank, window, count) in enumerate(ranks):
                part = staging / name / str(i) / "part-0.parquet"
                dest = out / name / f"rank={rank}"
                dest.mkdir(parents=True, exist_ok=True)
                if not windowed:
                    part.rename(dest / "part-0.parquet")
                    continue
                table = pq.read_table(part)
                table = table.append_column("window_number", pa.array([window] * table.num_rows, pa.int32()))
                pq.write_table(table, dest / f"part-{window}.parquet")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return rows
