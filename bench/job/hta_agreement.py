"""tierscope's temporal and kernel-type breakdowns against HTA's, printed as figures: for
the corpus's 2-rank pair, HTA's NCCL trace and the big DDP trace, per rank, the largest
difference in percentage points of the temporal breakdown and, for the kernel types, the
largest difference as a share of HTA's total kernel time. HTA runs two ways:
  comparable   include_last_profiler_step=True, HTA_DISABLE_NS_ROUNDING=1 (the test's way)
  default      HTA as a user runs it: last ProfilerStep dropped, timestamps rounded to us
so the README can say how far HTA's defaults move its own figures.
  ~/.cache/tierscope/venv/bin/python bench/job/hta_agreement.py"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("TIERSCOPE_BIN", REPO / "build" / "release" / "tierscope"))
FIELD = REPO.parent / "shared" / "corpus" / "traces" / "field"
TRACES = REPO.parent / "shared" / "corpus" / "traces"
CASES = {
    "pair": [FIELD / "hta__trace_filter__sampled_rank-0.json.gz", FIELD / "hta__trace_filter__sampled_rank-1.json.gz"],
    "nccl": [FIELD / "hta__nccl_parser_config__nccl_data.json.gz"],
    "ddp": [TRACES / "df_index_resolver.json.gz"],
}
LABELS = {"COMPUTATION": "computation", "COMMUNICATION": "communication", "MEMORY": "memory"}
COLUMNS = [("Idle (%)", "idle_time_pctg"), ("Compute (%)", "compute_time_pctg"),
           ("Non-compute (%)", "non_compute_time_pctg")]


def run_hta(trace_dir: str, comparable: bool):
    if comparable:
        os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    else:
        os.environ.pop("HTA_DISABLE_NS_ROUNDING", None)
    from hta.trace_analysis import TraceAnalysis
    ta = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=comparable)
    temporal = ta.get_temporal_breakdown(visualize=False)
    types, _ = ta.get_gpu_kernel_breakdown(visualize=False)
    return temporal, types


def run_tierscope(files):
    p = subprocess.run([str(BIN), "analyze", *map(str, files), "--format", "json"],
                       capture_output=True, text=True, check=True)
    return {r["name"]: r for r in json.loads(p.stdout)["reports"]}


def compare(case: str, files, comparable: bool) -> str:
    with tempfile.TemporaryDirectory() as d:
        for f in files:
            (Path(d) / f.name).symlink_to(f)
        temporal, types = run_hta(d, comparable)
    ours = run_tierscope(files)
    rows = {int(r["Rank"]): r for r in ours["temporal_breakdown"]["rows"]}
    worst_pts = 0.0
    for _, h in temporal.iterrows():
        r = rows[int(h["rank"])]
        for ours_col, hta_col in COLUMNS:
            worst_pts = max(worst_pts, abs(r[ours_col] - h[hta_col]))
    label_rank = "all" if len(files) > 1 else str(int(temporal["rank"].iloc[0]))
    ours_types = {r["Types"]: r["Time (ns)"] / 1e3 for r in ours["kernel_type_breakdown"]["rows"]
                  if str(r["Rank"]) == label_rank}
    total = float(types["sum"].sum())
    worst_types = 0.0
    for _, h in types.iterrows():
        label = " + ".join(LABELS[p] for p in h["kernel_type"].split(" overlapping "))
        worst_types = max(worst_types, abs(ours_types.get(label, 0.0) - float(h["sum"])) / total * 100)
    spans = " ".join(f"r{int(h['rank'])}:{rows[int(h['rank'])]['Span (ns)'] / 1e3:.0f}/{h['kernel_time(us)']:.0f}us"
                     for _, h in temporal.iterrows())
    return (f"{case:5s} {'comparable' if comparable else 'default':10s} temporal max diff {worst_pts:6.3f} pts  "
            f"kernel types max diff {worst_types:6.3f}% of total  span ours/HTA {spans}")


def main() -> int:
    warnings.filterwarnings("ignore")
    from hta.configs.config import logger
    logger.setLevel(logging.ERROR)
    status = 0
    for case, files in CASES.items():
        missing = [f for f in files if not f.exists()]
        if missing:
            print(f"{case}: missing {missing[0]}", file=sys.stderr)
            status = 1
            continue
        for comparable in (True, False):
            try:
                print(compare(case, files, comparable), flush=True)
            except Exception as e:  # HTA's own failure, reported as a figure
                print(f"{case:5s} {'comparable' if comparable else 'default':10s} HTA failed: "
                      f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
