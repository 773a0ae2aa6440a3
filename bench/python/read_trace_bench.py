"""tierscope.read_trace against Holistic Trace Analysis's parse of the same trace, in the
same run: wall time (best of REPEATS) to DataFrames; the DataFrames' memory
(memory_usage(deep=True)); and, each side in a fresh process, how much its peak resident
memory grows from the libraries imported to the DataFrames built and held (tierscope's
C++ trace and index included, HTA's parser's included). Goals (issue 18): >= 10x faster,
no more memory than HTA's (checked on the process growth, which counts everything held).
  ~/.cache/tierscope/venv/bin/python bench/python/read_trace_bench.py [TRACE] [REPEATS=3]
Default TRACE: the corpus's 53.7 MB DDP trace (df_index_resolver.json.gz)."""
from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT = REPO.parent / "shared" / "corpus" / "traces" / "df_index_resolver.json.gz"


def ours(path: Path):
    import tierscope
    t0 = time.perf_counter()
    t = tierscope.read_trace(path)
    frames = [t.table(n) for n in ("kernels", "ops", "runtime", "memops", "annotations", "syncs", "memory",
                                   "other", "flows")]
    seconds = time.perf_counter() - t0
    return seconds, sum(int(f.memory_usage(deep=True).sum()) for f in frames), len(t)


def hta(path: Path):
    warnings.filterwarnings("ignore")
    from hta.configs.config import logger
    logger.setLevel(logging.ERROR)
    from hta.trace_analysis import TraceAnalysis
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / path.name).symlink_to(path)
        t0 = time.perf_counter()
        ta = TraceAnalysis(trace_dir=d, include_last_profiler_step=True)
        seconds = time.perf_counter() - t0
        df = ta.t.get_trace(next(iter(ta.t.traces)))
        symbols = ta.t.symbol_table.get_sym_table()
        memory = int(df.memory_usage(deep=True).sum()) + sum(sys.getsizeof(s) for s in symbols)
        return seconds, memory, len(df)


GROWTH = """
import resource, sys, warnings, logging
warnings.filterwarnings("ignore")
which, path = sys.argv[1], sys.argv[2]
import pandas, numpy
if which == "tierscope":
    import tierscope
else:
    from hta.configs.config import logger
    logger.setLevel(logging.ERROR)
    from hta.trace_analysis import TraceAnalysis
def hwm():  # this process's peak resident KB (VmHWM: ru_maxrss carries a forking parent's)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0
base = hwm()
if which == "tierscope":
    t = tierscope.read_trace(path)
    frames = [t.table(n) for n in ("kernels", "ops", "runtime", "memops", "annotations", "syncs", "memory", "other", "flows")]
else:
    import tempfile, os
    d = tempfile.mkdtemp()
    os.symlink(path, os.path.join(d, os.path.basename(path)))
    ta = TraceAnalysis(trace_dir=d, include_last_profiler_step=True)
    df = ta.t.get_trace(next(iter(ta.t.traces)))
peak = hwm()
print((peak - base) / 1024)
"""


def growth(which: str, path: Path) -> float:
    import subprocess
    p = subprocess.run([sys.executable, "-c", GROWTH, which, str(path)], capture_output=True, text=True, check=True)
    return float(p.stdout.split()[-1])


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    if not path.exists():
        print(f"read_trace_bench: {path}: no such file", file=sys.stderr)
        return 1
    o = min((ours(path) for _ in range(repeats)), key=lambda r: r[0])
    h = min((hta(path) for _ in range(repeats)), key=lambda r: r[0])
    og, hg = growth("tierscope", path), growth("hta", path)
    print(f"trace: {path} ({os.path.getsize(path) / 1e6:.1f} MB on disk)")
    print(f"{'':28s}{'seconds':>10s}{'DataFrame MB':>14s}{'process +MB':>13s}{'rows':>10s}")
    print(f"{'tierscope.read_trace':28s}{o[0]:10.3f}{o[1] / 1e6:14.1f}{og:13.1f}{o[2]:10d}")
    print(f"{'HTA TraceAnalysis parse':28s}{h[0]:10.3f}{h[1] / 1e6:14.1f}{hg:13.1f}{h[2]:10d}")
    speed = h[0] / o[0]
    print(f"speed-up x{speed:.1f} (goal >= 10: {'PASS' if speed >= 10 else 'FAIL'}); "
          f"memory: process growth {og:.1f} MB vs HTA's {hg:.1f} MB ({'PASS' if og <= hg else 'FAIL'}), "
          f"DataFrames alone {o[1] / 1e6:.1f} MB vs {h[1] / 1e6:.1f} MB")
    return 0 if speed >= 10 and og <= hg else 2


if __name__ == "__main__":
    sys.exit(main())
