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
    forced export would replace the tables beside them), a file, a directory that is not
    empty without `force`, or table, rank and part entries that are not what an export
    writes (a link would take the parts elsewhere; a folder named like a part, or a file
    named like a rank, would stop the export half way)."""
    real_out = os.path.realpath(out)
    for f in list(inputs) + list(files):
        real = os.path.realpath(f)
        if real == real_out or real.startswith(real_out.rstrip(os.sep) + os.sep):
            raise ValueError(f"{out}: is, or holds, the input {f}; write the tables elsewhere")
    if not (out.exists() or out.is_symlink()):
        return
    if not out.is_dir():
        raise ValueError(f"{out}: exists and is not a directory")
    if any(out.iterdir()) and not force:
        raise ValueError(f"{out}: exists and is not empty (pass --force to replace its tables)")
    for name in TABLES:
        table = out / name
        if table.is_symlink() or (table.exists() and not table.is_dir()):
            raise ValueError(f"{table}: is not a plain directory, where the {name} table goes")
        for rank in table.glob("rank=*") if table.is_dir() else []:
            if rank.is_symlink() or not rank.is_dir() or not os.access(rank, os.W_OK | os.X_OK):
                raise ValueError(f"{rank}: is not a plain directory this export may write, where a rank's parts go")
            for part in rank.glob("part-*.parquet"):
                if part.is_symlink() or not part.is_file():
                    raise ValueError(f"{part}: is not a plain file, where a part goes")


def _replace_tables(staging: Path, out: Path) -> None:
    """Moves the new export's parts into OUT in place of the Parquet parts an earlier
    export wrote there (TABLE/rank=R/part-N.parquet); any other file is left as it is.
    The new parts go in under hidden names first (a failure takes them back, the old
    export whole); then each replaces its old namesake at once (os.replace), and the old
    parts the new export has no namesake for go last."""
    moved = []  # (hidden, final) names in OUT
    try:
        for name in TABLES:
            for rank in sorted((staging / name).glob("rank=*")):
                dest = out / name / rank.name
                dest.mkdir(parents=True, exist_ok=True)
                for part in sorted(rank.iterdir()):
                    hidden = dest / (".new-" + part.name)
                    os.replace(part, hidden)  # over a crashed run's leftover, if any
                    moved.append((hidden, dest / part.name))
    except OSError:
        for hidden, _ in moved:
            hidden.unlink(missing_ok=True)
        raise
    for hidden, final in moved:
        os.replace(hidden, final)
    new = {final for _, final in moved}
    for name in TABLES:
        for rank in (out / name).glob("rank=*"):
            for part in list(rank.glob("part-*.parquet")) + list(rank.glob(".new-part-*.parquet")):
                if part not in new:
                    part.unlink()
            try:
                rank.rmdir()  # an old rank this export has none of, when nothing else is in it
            except OSError:
                pass


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
