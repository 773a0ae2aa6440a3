"""Exports other engines read: Parquet tables partitioned by rank (pyarrow), which DuckDB,
Spark and Dask read directly, and the nsys SQLite schema (the CLI's `tierscope export`).

    OUT/kernels/rank=0/part-0.parquet, OUT/kernels/rank=1/..., OUT/runtime/..., ...

Each table is read_trace's DataFrame of that kind (names as strings), with a `rank`
column as the partition."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Iterable, Union

from . import _tierscope, read_trace

TABLES = ("kernels", "ops", "runtime", "memops", "annotations", "syncs", "memory", "other", "flows")


def export_parquet(paths: Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]],
                   out_dir: Union[str, "os.PathLike[str]"]) -> Dict[str, int]:
    """Writes every table of every rank under `out_dir`; returns rows written per table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = list(_tierscope.job_files([os.fspath(p) for p in paths]))
    traces = [read_trace(f) for f in files]
    ranks = _tierscope.assign_ranks(files, [t.rank for t in traces])
    out = Path(out_dir)
    rows: Dict[str, int] = {}
    for trace, rank in zip(traces, ranks):
        for name in TABLES:
            df = trace.table(name).copy()
            for c in df.columns:
                if str(df[c].dtype) == "category":
                    df[c] = df[c].astype(str)
            df["rank"] = rank
            part = out / name / f"rank={rank}"
            part.mkdir(parents=True, exist_ok=True)
            table = pa.Table.from_pandas(df.drop(columns=["rank"]), preserve_index=False)
            pq.write_table(table, part / "part-0.parquet")
            rows[name] = rows.get(name, 0) + len(df)
    return rows
