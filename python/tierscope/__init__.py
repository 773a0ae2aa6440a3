"""tierscope for Python: the C++ importer and analyzer behind pandas DataFrames.

    import tierscope
    t = tierscope.read_trace("rank-0.json.gz")      # Kineto JSON(.gz) or nsys SQLite
    t.kernels                                       # a DataFrame: ts, dur, name, stream, ...
    tierscope.report(t, "cuda_gpu_kern_sum")        # any report `tierscope stats` has
    tierscope.analyze(["job/"])                     # every report + findings, as the CLI
    tierscope.diff(before, after)

Times are integer nanoseconds (`ts`, `dur`; HTA's are microseconds). `name` is a pandas
Categorical over the trace's distinct names, as HTA's symbol table is. Every number is
the CLI's: reports are rendered by the same C++ code and handed over as its JSON.
Errors raise FileNotFoundError or ValueError with the CLI's one-line message.
"""
from __future__ import annotations

import json
import os
import warnings
from typing import Dict, Iterable, List, Optional, Union

import numpy as np
import pandas as pd

from . import _tierscope

__all__ = ["Trace", "read_trace", "report", "report_names", "analyze", "diff", "findings", "html", "Page"]

PathLike = Union[str, "os.PathLike[str]"]


def _fs(path) -> str:
    """A path as the library takes it: UTF-8 text. A name that is not UTF-8 (os.listdir's
    surrogate escapes, or bytes) is refused naming it, rather than failing deep inside."""
    p = os.fspath(path)
    if isinstance(p, bytes):
        try:
            return p.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{p!r}: the file name is not UTF-8, which the tierscope library cannot "
                             "take; rename the file (the tierscope CLI reads it as it is)") from None
    try:
        p.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{ascii(p)}: the file name is not UTF-8, which the tierscope library cannot take; "
                         "rename the file (the tierscope CLI reads it as it is)") from None
    return p


def _job_files(paths) -> List[str]:
    """The traces of a job's inputs (files, or directories of them), as the CLI lists them."""
    inputs = [_fs(p) for p in paths]
    try:
        return list(_tierscope.job_files(inputs))
    except UnicodeDecodeError:
        raise ValueError(f"{', '.join(inputs)}: holds a trace whose file name is not UTF-8, which the tierscope "
                         "library cannot take; rename it (the tierscope CLI reads it as it is)") from None

# Columns a table keeps (the rest are the same for every row of that table's kind).
_DEVICE_TABLES = {"kernels", "memops", "syncs"}


def _frame(cols: Dict[str, np.ndarray], names: pd.Index, kinds: List[str], table: str) -> pd.DataFrame:
    # Each table's names are its own categories (groupby("name") lists this table's names).
    name = pd.Categorical.from_codes(cols["name"], categories=names, validate=False).remove_unused_categories()
    data = {
        "index": cols["index"],
        "ts": cols["ts"],
        "dur": cols["dur"],
        "name": name,
        "pid": cols["pid"],
        "tid": cols["tid"],
        "correlation": cols["correlation"],
    }
    if table == "memory":
        # An allocation (+bytes) or a free (-bytes): Kineto's [memory] instant events.
        data["addr"] = cols["external_id"]
        data["bytes"] = cols["value"].astype(np.int64)
        data["total_allocated"] = cols["value2"].astype(np.int64)
    else:
        data["external_id"] = cols["external_id"]
    if table in _DEVICE_TABLES:
        # On the device side Kineto's pid is the device and tid the stream (HTA's names);
        # their own arrays, so that writing one column leaves the other alone.
        data["stream"] = cols["tid"].copy()
        data["device"] = cols["pid"].copy()
    if table in ("memops", "annotations", "other"):
        data["kind"] = pd.Categorical.from_codes(cols["kind"], categories=kinds,
                                                 validate=False).remove_unused_categories()
    if table == "memops":
        data["bytes"] = cols["value"].astype(np.int64)
    if table == "kernels" and np.any(cols["value"]):
        data["flops"] = cols["value"]  # tierscope's own traces: the cost model's FLOPs
    return pd.DataFrame(data, copy=False)


class Trace:
    """One trace, read by tierscope's C++ importer. Tables are DataFrames built on first use:
    kernels, ops (cpu_op), runtime (launches and other runtime calls), memops (memcpy and
    memset), annotations (user_annotation and gpu_user_annotation), syncs, memory
    (allocations), other, and flows (launch -> device event by correlation). `index` is
    the event's position in the trace, the same in every table."""

    def __init__(self, native: "_tierscope.NativeTrace"):
        self._native = native
        self._tables: Dict[str, pd.DataFrame] = {}

    @property
    def source(self) -> str:
        return self._native.source

    @property
    def format(self) -> str:
        return self._native.format

    @property
    def skipped(self) -> str:
        """Empty when every entry was read; else what the import skipped as malformed."""
        return self._native.skipped

    @property
    def rank(self) -> int:
        """distributedInfo.rank, or -1 when the trace does not say."""
        return self._native.rank

    @property
    def world_size(self) -> int:
        return self._native.world_size

    @property
    def device_name(self) -> str:
        return self._native.device_name

    @property
    def execution_trace(self) -> dict:
        """The PyTorch execution trace joined to the operators: source, nodes, ops, joined,
        shapes_added (source "" when none; note says why none joined)."""
        return dict(self._native.execution_trace)

    def __len__(self) -> int:
        return self._native.events

    def __repr__(self) -> str:
        return f"tierscope.Trace({self.source!r}, {len(self)} events, format={self.format!r})"

    def _build(self) -> None:
        raw = self._native.tables()
        names = pd.Index(raw.pop("_names"), dtype=object)
        kinds = raw.pop("_kinds")
        for table, cols in raw.items():
            self._tables[table] = _frame(cols, names, kinds, table)
        self._tables["flows"] = pd.DataFrame(self._native.flows(), copy=False)

    def table(self, name: str) -> pd.DataFrame:
        if not self._tables:
            self._build()
        if name not in self._tables:
            raise KeyError(f"no table {name!r} (tables: {', '.join(sorted(self._tables))})")
        return self._tables[name]

    def export_sqlite(self, out: PathLike, force: bool = False) -> str:
        """Writes the trace as an nsys SQLite export (`tierscope export TRACE OUT.sqlite`).
        An existing OUT is kept (FileExistsError) unless `force`, as the command keeps it;
        the trace itself, or a file that is not a regular one, is never replaced."""
        out = _fs(out)
        if os.path.lexists(out) and not force:
            raise FileExistsError(f"{out}: exists (pass force=True, or --force, to replace it)")
        return self._native.export_sqlite(out)

    kernels = property(lambda self: self.table("kernels"))
    ops = property(lambda self: self.table("ops"))
    runtime = property(lambda self: self.table("runtime"))
    memops = property(lambda self: self.table("memops"))
    annotations = property(lambda self: self.table("annotations"))
    syncs = property(lambda self: self.table("syncs"))
    memory = property(lambda self: self.table("memory"))
    other = property(lambda self: self.table("other"))
    flows = property(lambda self: self.table("flows"))


def read_trace(path: PathLike, execution_trace: Optional[PathLike] = None) -> Trace:
    """Reads a Kineto trace (.json, .json.gz) or an nsys SQLite export. A PyTorch execution
    trace of the same run (`execution_trace`, else one beside the trace) is joined to its
    operators: they gain the shapes the trace lacks (Trace.execution_trace says how many);
    a named one that is missing raises FileNotFoundError, one of another run ValueError.
    Entries the import skipped as malformed are said in a warning (and Trace.skipped)."""
    ets = [_fs(execution_trace)] if execution_trace is not None else []
    trace = Trace(_tierscope.read_trace(_fs(path), ets))
    if trace.skipped:
        warnings.warn(trace.skipped, stacklevel=2)
    return trace


def _table_frame(table: dict) -> pd.DataFrame:
    df = pd.DataFrame(table.get("rows", []), columns=table.get("columns", []))
    df.attrs["name"] = table.get("name", "")
    df.attrs["title"] = table.get("title", "")
    df.attrs["notes"] = table.get("notes", [])
    return df


def report_names() -> List[str]:
    """Every report name `report` accepts (tierscope stats --list)."""
    return list(_tierscope.report_names())


def report(trace: Union[Trace, PathLike], name: str) -> pd.DataFrame:
    """The report `name` of `trace` as a DataFrame (title and notes in .attrs), the same
    table `tierscope stats TRACE --report NAME --format json` prints."""
    t = trace if isinstance(trace, Trace) else read_trace(trace)
    return _table_frame(json.loads(t._native.report(name)))


def _findings_frame(findings: list) -> pd.DataFrame:
    cols = ["rule", "title", "explained_ns", "evidence", "threshold", "examples", "next_step"]
    return pd.DataFrame([{c: f.get(c) for c in cols} for f in findings], columns=cols)


def _result(doc: dict) -> dict:
    out = dict(doc)
    out["reports"] = {r["name"]: _table_frame(r) for r in doc.get("reports", [])}
    if isinstance(doc.get("findings"), list) and all(isinstance(f, dict) for f in doc["findings"]):
        out["findings_frame"] = _findings_frame(doc["findings"])
    return out


def findings(paths: Union[Trace, PathLike, Iterable[PathLike]]) -> pd.DataFrame:
    """The diagnosis of `analyze` as a DataFrame: one row per finding (rule, title, the time
    it explains, evidence, threshold, example events, next step), ranked as the CLI ranks them."""
    return analyze(paths)["findings_frame"]


def analyze(paths: Union[Trace, PathLike, Iterable[PathLike]], threads: int = 0) -> dict:
    """`tierscope analyze`: one trace (a Trace or a path) gives its reports and findings;
    several paths or a directory are a job (one trace per rank). Reports come back as
    DataFrames under "reports", the rest as the CLI's JSON has it."""
    if isinstance(paths, Trace):
        return _result(json.loads(paths._native.analyze()))
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = [_fs(p) for p in paths]
    if len(files) == 1 and not os.path.isdir(files[0]):
        return _result(json.loads(read_trace(files[0])._native.analyze()))
    return _result(json.loads(_tierscope.analyze_files(files, threads)))


class Page:
    """An analysis page (`tierscope analyze --html`): one self-contained HTML document.
    In Jupyter it displays inline (in an iframe, so its script and styles stay its own);
    `save(path)` writes it; `str(page)` is the document."""

    def __init__(self, document: str):
        self.html = document

    def __str__(self) -> str:
        return self.html

    def save(self, path: PathLike) -> str:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.html)
        return os.fspath(path)

    def _repr_html_(self) -> str:
        import html as _html
        return ('<iframe style="width: 100%; height: 900px; border: 1px solid #dde1e7" srcdoc="'
                + _html.escape(self.html, quote=True) + '"></iframe>')


def html(trace_or_job: Union[Trace, PathLike, Iterable[PathLike]], step: str = "", threads: int = 0) -> Page:
    """The analysis page of a trace (a Trace or a path) or of a job (several paths, or a
    directory): the same page `tierscope analyze ... --html OUT.html` writes — the verdict,
    the findings, the step timeline with its critical path (of `step`, default the
    steady-state step), the breakdowns, the stragglers, the roofline and every report."""
    if isinstance(trace_or_job, Trace):
        return Page(trace_or_job._native.page(step))
    if isinstance(trace_or_job, (str, os.PathLike)):
        trace_or_job = [trace_or_job]
    files = [_fs(p) for p in trace_or_job]
    if len(files) == 1 and not os.path.isdir(files[0]):
        return Page(read_trace(files[0])._native.page(step))
    return Page(_tierscope.page_of_job(files, threads, step))


def diff(base: Union[Trace, PathLike], new: Union[Trace, PathLike]) -> dict:
    """`tierscope diff BASE NEW`: of two traces, or of two jobs (directories)."""
    if not isinstance(base, Trace) and not isinstance(new, Trace) and (
            os.path.isdir(os.fspath(base)) or os.path.isdir(os.fspath(new))):
        return _result(json.loads(_tierscope.diff_jobs([_fs(base)], [_fs(new)])))
    a = base if isinstance(base, Trace) else read_trace(base)
    b = new if isinstance(new, Trace) else read_trace(new)
    return _result(json.loads(_tierscope.diff(a._native, b._native)))
