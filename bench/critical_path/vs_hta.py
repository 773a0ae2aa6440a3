"""Critical path: tierscope against HTA's critical_path_analysis on the same steps, in one
run — each step's path length from both, and the time each takes, best of REPEATS: whole
(HTA: loading the trace and the analysis in this process; tierscope: the whole `stats
--report critical_path` process, reading the trace included), and the analysis alone (HTA:
critical_path_analysis after the load; tierscope: that process less one that reads and
indexes the same trace, `--report units`).

    ~/.cache/tierscope/venv/bin/python bench/critical_path/vs_hta.py [REPEATS]
"""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO.parent / "shared" / "corpus" / "traces"
BIN = REPO / "build" / "release" / "tierscope"
# (trace, HTA's annotation, its instance, tierscope's --unit, which of its rows)
CASES = [
    (TRACES / "benchmark_result_2869224_1695835535_trace.json.gz",
     "[param|pytorch.model.alex_net|0|0|0|measure|forward]", 0, "[param|pytorch.model.alex_net|0|0|0|measure|forward]", 0),
    (TRACES / "field" / "hta__trace_filter__sampled_rank-0.json.gz", "ProfilerStep", 0, "", 0),
    (TRACES / "field" / "hta__trace_filter__sampled_rank-0.json.gz", "ProfilerStep", 1, "", 1),
    (TRACES / "df_index_resolver.json.gz", "ProfilerStep", 0, "", 0),
]


def hta(trace: Path, annotation: str, instance: int):
    warnings.filterwarnings("ignore")
    from hta.configs.config import logger
    logger.setLevel(logging.CRITICAL)
    from hta.trace_analysis import TraceAnalysis
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / trace.name).symlink_to(trace)
        t0 = time.perf_counter()
        ta = TraceAnalysis(trace_dir=d)
        t1 = time.perf_counter()
        try:
            graph, ok = ta.critical_path_analysis(rank=0, annotation=annotation, instance_id=instance)
            length = float(graph.get_critical_path_breakdown().duration.sum()) if ok else "fails: not ok"
        except Exception as e:  # noqa: BLE001 - HTA's failure is a result here
            return time.perf_counter() - t0, time.perf_counter() - t1, f"fails: {type(e).__name__}"
        return time.perf_counter() - t0, time.perf_counter() - t1, length


def timed(args):
    t0 = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - t0, out


def ours(trace: Path, unit: str, row: int, repeats: int):
    args = [str(BIN), "stats", str(trace), "--unit", unit, "--format", "json", "--report"]
    whole, out = min(timed(args + ["critical_path"]) for _ in range(repeats))
    base = min(timed(args + ["units"])[0] for _ in range(repeats))
    return whole, whole - base, json.loads(out)["reports"][0]["rows"][row]["Length (ns)"] / 1000


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(f"{'trace':32s} {'step':>4s} {'HTA us':>24s} {'ours us':>10s} {'whole: HTA s':>12s} {'ours s':>7s} {'x':>5s}"
          f" {'analysis: HTA s':>15s} {'ours s':>7s} {'x':>6s}")
    for trace, annotation, instance, unit, row in CASES:
        if not trace.exists():
            print(f"{trace.name}: missing")
            continue
        runs = [hta(trace, annotation, instance) for _ in range(repeats)]
        h_whole, h_analysis, length = min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2]
        o_whole, o_analysis, o_length = ours(trace, unit, row, repeats)
        length = length if isinstance(length, str) else f"{length:.0f}"
        # Below a few milliseconds the difference of two processes' times is noise: a bound.
        floor = 0.005
        ours_a = f"{o_analysis:7.3f}" if o_analysis >= floor else f"{'<' + str(floor):>7s}"
        ratio = f"{h_analysis / o_analysis:6.1f}" if o_analysis >= floor else f"{'>' + format(h_analysis / floor, '.0f'):>6s}"
        if isinstance(runs[0][2], str):
            ratio = f"{'-':>6s}"  # HTA failed: no analysis to compare
        print(f"{trace.name[:32]:32s} {row:4d} {length:>24s} {o_length:10.0f} {h_whole:12.2f} {o_whole:7.3f}"
              f" {h_whole / o_whole:5.1f} {h_analysis:15.3f} {ours_a} {ratio}")


if __name__ == "__main__":
    main()
