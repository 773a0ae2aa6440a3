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
import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Union

from . import _fs, _job_files, _tierscope, read_trace

TABLES = ("kernels", "ops", "runtime", "memops", "annotations", "syncs", "memory", "other", "flows")


def _check_out(out: Path, files: List[str], inputs: List[str], force: bool) -> None:
    """Refuses an OUT this export must not write: one that is, or holds, what it reads (a
    forced export would replace the tables beside them), a file, or a directory that is not
    empty without `force`."""
    real_out = os.path.realpath(out)
    for f in list(inputs) + list(files):
        real = os.path.realpath(f)
        if real == real_out or real.startswith(real_out.rstrip(os.sep) + os.sep):
            raise ValueError(f"{out}: is, or holds, the input {f}; write the tables elsewhere")
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise ValueError(f"{out}: exists and is not a directory")
        if any(out.iterdir()) and not force:
            raise ValueError(f"{out}: exists and is not empty (pass --force to replace its tables)")
        for name in TABLES:
            if (out / name).exists() and not (out / name).is_dir():
                raise ValueError(f"{out / name}: exists and is not a directory, where the {name} table goes")


def _replace_tables(staging: Path, out: Path) -> None:
    """Moves the new export's parts into OUT, removing only the Parquet parts an earlier
    export wrote there (TABLE/rank=R/part-N.parquet); any other file is left as it is."""
    for name in TABLES:
        table = out / name
        if table.is_dir():
            for rank in table.glob("rank=*"):
                if not rank.is_dir() or rank.is_symlink():
                    continue
                for part in rank.glob("part-*.parquet"):
                    if part.is_file() and not part.is_symlink():
                        part.unlink()
                try:
                    rank.rmdir()  # only when nothing else is in it
                except OSError:
                    pass
        for rank in sorted((staging / name).glob("rank=*")):
            dest = table / rank.name
            dest.mkdir(parents=True, exist_ok=True)
            for part in sorted(rank.iterdir()):
                part.rename(dest / part.name)


def export_parquet(paths: Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]],
                   out_dir: Union[str, "os.PathLike[str]"], force: bool = False) -> Dict[str, int]:
    """Writes every table of every rank under `out_dir`, one rank in memory at a time;
    returns rows written per table. An `out_dir` that is not empty is refused unless
    `force`, which replaces the Parquet parts an earlier export wrote (TABLE/rank=R/
    part-N.parquet) and nothing else, and only once the whole new export is written: a
    failed export leaves the old one as it was. An `out_dir` that is or holds an input is
    refused."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    inputs = [_fs(p) for p in paths]
    files = _job_files(inputs)
    out = Path(_fs(out_dir))
    _check_out(out, files, inputs, force)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tierscope-export-", dir=out))
    rows: Dict[str, int] = {}
    windows = []
    done = False
    try:
        for i, f in enumerate(files):
            trace = read_trace(f)
            if all(len(trace.table(name)) == 0 for name in TABLES):
                raise ValueError(f"{f}: the trace holds no timeline event: nothing to export")
            windows.append(tuple(trace._native.window))
            for name in TABLES:
                df = trace.table(name)
                table = pa.Table.from_pandas(df, preserve_index=False)
                part = staging / "read" / name / str(i)
                part.mkdir(parents=True, exist_ok=True)
                pq.write_table(table, part / "part-0.parquet")
                rows[name] = rows.get(name, 0) + len(df)
            del trace
        ranks = _tierscope.assign_rank_windows(files, windows)
        windowed = any(count > 1 for _, _, count in ranks)
        for name in TABLES:
            for i, (rank, window, count) in enumerate(ranks):
                part = staging / "read" / name / str(i) / "part-0.parquet"
                dest = staging / "tables" / name / f"rank={rank}"
                dest.mkdir(parents=True, exist_ok=True)
                if not windowed:
                    part.rename(dest / "part-0.parquet")
                    continue
                table = pq.read_table(part)
                table = table.append_column("window_number", pa.array([window] * table.num_rows, pa.int32()))
                pq.write_table(table, dest / f"part-{window}.parquet")
        _replace_tables(staging / "tables", out)
        done = True
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if created and not done:
            shutil.rmtree(out, ignore_errors=True)  # made for this export, which wrote nothing
    return rows
