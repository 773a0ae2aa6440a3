"""Writes a synthetic job for the job benchmark: RANKS Kineto traces of about SIZE_MB each
(rank-N.json, with distributedInfo), every one the events of a real trace (default: the
corpus's sampled_rank-0, a DDP step with NCCL kernels) repeated back to back until the size
is reached, correlations and External ids kept unique, each rank's clock skewed a little,
and rank SLOW's kernels delayed so that it is the straggler.
Usage: python3 bench/job/make_job.py OUT_DIR [RANKS=8] [SIZE_MB=256] [SLOW=3] [SOURCE]
MAKE_JOB_RANKS=0,2,4 writes only those ranks (the job is the same: several processes can
write one job's ranks side by side)."""
from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SOURCE = REPO.parent / "shared" / "corpus" / "traces" / "field" / "hta__trace_filter__sampled_rank-0.json.gz"


def main():
    out = Path(sys.argv[1])
    ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    size_mb = float(sys.argv[3]) if len(sys.argv) > 3 else 256.0
    slow = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    source = Path(sys.argv[5]) if len(sys.argv) > 5 else DEFAULT_SOURCE
    with gzip.open(source, "rt") if source.suffix == ".gz" else open(source) as f:
        doc = json.load(f)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X" and "ts" in e and "dur" in e]
    t0 = min(e["ts"] for e in events)
    span = max(e["ts"] + e["dur"] for e in events) - t0
    max_id = 1 + max(max(int(e.get("args", {}).get(k, 0) or 0) for e in events)
                     for k in ("correlation", "External id"))
    steps = max(1, sum(1 for e in events if str(e.get("name", "")).startswith("ProfilerStep#")))
    out.mkdir(parents=True, exist_ok=True)
    target = int(size_mb * 1024 * 1024)
    only = os.environ.get("MAKE_JOB_RANKS")
    for rank in range(ranks):
        if only and str(rank) not in only.split(","):
            continue
        skew = rank * 137.0  # us: each host's clock reads a little differently
        path = out / f"rank-{rank}.json"
        with open(path, "w") as f:
            head = {"schemaVersion": 1, "deviceProperties": doc.get("deviceProperties", []),
                    "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": ranks}}
            f.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
            written, copy, first = 0, 0, True
            while written < target:
                shift = copy * (span + 1000.0) + skew
                lines = []
                for e in events:
                    e2 = dict(e)
                    e2["ts"] = e["ts"] - t0 + 1.7e12 + shift
                    if rank == slow and e.get("cat") == "kernel" and str(e.get("name", "")).startswith("nccl"):
                        late = min(2000.0, e["dur"] / 2)  # reaches each collective late, leaves with the others
                        e2["ts"] += late
                        e2["dur"] = e["dur"] - late
                    name = str(e.get("name", ""))
                    if name.startswith("ProfilerStep#") and name[13:].isdigit():
                        e2["name"] = "ProfilerStep#%d" % (int(name[13:]) + copy * steps)
                    args = dict(e.get("args", {}))
                    for k in ("correlation", "External id"):
                        if k in args and isinstance(args[k], int) and args[k] > 0:
                            args[k] += copy * max_id
                    e2["args"] = args
                    lines.append(json.dumps(e2))
                chunk = ("" if first else ",\n") + ",\n".join(lines)
                first = False
                f.write(chunk)
                written += len(chunk)
                copy += 1
            f.write("\n]}\n")
        print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB, {copy} copies of {len(events)} events", flush=True)


if __name__ == "__main__":
    main()
