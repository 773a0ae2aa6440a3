"""A small multi-rank CPU job with torch.distributed's gloo backend, profiled, one trace
per rank: python gloo_job.py OUT_DIR WORLD SLOW_RANK [SLOW_MS]. Every step multiplies two
matrices, sums, all-reduces and broadcasts; SLOW_RANK sleeps SLOW_MS before its
all-reduce, so every other rank waits for it (a SLOW_RANK outside the world: none
is slow). 8 steps are profiled, after one warm-up step. Used by test_job.py and bench/job."""
from __future__ import annotations

import os
import socket
import sys
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, world, out, slow_rank, slow_ms, port):
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile, schedule

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    x, w = torch.randn(128, 128), torch.randn(128, 128)

    def step():
        y = x @ w
        if rank == slow_rank:
            time.sleep(slow_ms / 1000.0)
        t = y.sum(0)
        dist.all_reduce(t)
        dist.broadcast(t, 0)

    def save(p):
        p.export_chrome_trace(os.path.join(out, f"rank-{rank}.json"))

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=8),
                 on_trace_ready=save) as p:
        for _ in range(9):
            step()
            p.step()
    dist.destroy_process_group()


def main():
    import torch.multiprocessing as mp
    out, world, slow = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    slow_ms = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
    os.makedirs(out, exist_ok=True)
    mp.spawn(rank_main, args=(world, out, slow, slow_ms, free_port()), nprocs=world)


if __name__ == "__main__":
    main()
