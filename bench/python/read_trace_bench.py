"""tierscope.read_trace against Holistic Trace Analysis's parse of the same trace, in the
same run: wall time (best of REPEATS) to DataFrames, and the DataFrames' memory
(memory_usage(deep=True)). Goals (issue 18): >= 10x faster, no more memory than HTA's.
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


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    if not path.exists():
        print(f"read_trace_bench: {path}: no such file", file=sys.stderr)
        return 1
    o = min((ours(path) for _ in range(repeats)), key=lambda r: r[0])
    h = min((hta(path) for _ in range(repeats)), key=lambda r: r[0])
    print(f"trace: {path} ({os.path.getsize(path) / 1e6:.1f} MB on disk)")
    print(f"{'':28s}{'seconds':>10s}{'DataFrame MB':>14s}{'rows':>10s}")
    print(f"{'tierscope.read_trace':28s}{o[0]:10.3f}{o[1] / 1e6:14.1f}{o[2]:10d}")
    print(f"{'HTA TraceAnalysis parse':28s}{h[0]:10.3f}{h[1] / 1e6:14.1f}{h[2]:10d}")
    speed = h[0] / o[0]
    print(f"speed-up x{speed:.1f} (goal >= 10: {'PASS' if speed >= 10 else 'FAIL'}); "
          f"memory {o[1] / 1e6:.1f} MB vs HTA's {h[1] / 1e6:.1f} MB ({'PASS' if o[1] <= h[1] else 'FAIL'})")
    return 0 if speed >= 10 and o[1] <= h[1] else 2


if __name__ == "__main__":
    sys.exit(main())
