"""tierscope.dask.analyze_job on a LocalCluster against HTA's multiprocessing parse of the
same ranks, in the same run: N synthetic ranks of SIZE_MB each (bench/job/make_job.py),
ranks per second end to end, each side's peak memory (the largest worker's for Dask, the
largest process's for HTA), and the bytes each worker sent back (summaries, not traces).
  ~/.cache/tierscope/venv/bin/python bench/python/dask_bench.py [RANKS=8] [SIZE_MB=64] [WORKERS=2]"""
from __future__ import annotations

import logging
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def peak_rss_mb() -> float:
    """This process's peak resident MB (VmHWM; ru_maxrss carries a forking parent's)."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_dask(job: Path, workers: int):
    from dask.distributed import Client, LocalCluster
    import tierscope.dask as tsd
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    client = Client(cluster)
    try:
        client.run(lambda: __import__("tierscope"))  # import once, outside the timing
        files = [str(p) for p in sorted(job.glob("rank-*.json"))]
        t0 = time.perf_counter()
        result = tsd.analyze_job(job, client=client)
        seconds = time.perf_counter() - t0
        peak = max(client.run(peak_rss_mb).values())
        sent = sum(len(b) for b in client.gather(client.map(tsd.rank_summary, files, pure=False)))
    finally:
        client.close()
        cluster.close()
    return seconds, peak, sent, result


def run_hta(job: Path):
    code = (
        "import logging, resource, sys, time, warnings\n"
        "warnings.filterwarnings('ignore')\n"
        "from hta.configs.config import logger\n"
        "logger.setLevel(logging.ERROR)\n"
        "from hta.trace_analysis import TraceAnalysis\n"
        "t0 = time.perf_counter()\n"
        "ta = TraceAnalysis(trace_dir=sys.argv[1])\n"
        "ta.get_temporal_breakdown(visualize=False)\n"
        "s = time.perf_counter() - t0\n"
        "own = max(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')) / 1024\n"
        "kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(s, max(own, kids))\n")
    p = subprocess.run([sys.executable, "-c", code, str(job)], capture_output=True, text=True, check=True)
    seconds, peak = p.stdout.split()[-2:]
    return float(seconds), float(peak)


def main() -> int:
    ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    size = float(sys.argv[2]) if len(sys.argv) > 2 else 64
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    warnings.filterwarnings("ignore")
    logging.getLogger("distributed").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as d:
        job = Path(d) / "job"
        subprocess.run([sys.executable, str(REPO / "bench" / "job" / "make_job.py"), str(job), str(ranks), str(size)],
                       check=True, capture_output=True)
        total_mb = sum(p.stat().st_size for p in job.glob("rank-*.json")) / 1e6
        ds, dpeak, sent, result = run_dask(job, workers)
        hs, hpeak = run_hta(job)
    named = [f["title"] for f in result["findings"] if f["rule"] == "straggler"]
    print(f"job: {ranks} ranks x {size:g} MB ({total_mb:.0f} MB of JSON); Dask LocalCluster of {workers} workers")
    print(f"{'':36s}{'seconds':>9s}{'ranks/s':>9s}{'peak MB':>9s}")
    print(f"{'tierscope.dask.analyze_job':36s}{ds:9.2f}{ranks / ds:9.2f}{dpeak:9.0f}")
    print(f"{'HTA TraceAnalysis + temporal (mp)':36s}{hs:9.2f}{ranks / hs:9.2f}{hpeak:9.0f}")
    print(f"speed-up x{hs / ds:.1f}; summaries sent to the client: {sent / 1e6:.2f} MB "
          f"({100 * sent / 1e6 / total_mb:.2f}% of the JSON)")
    print("straggler: " + (named[0] if named else "none named"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
