"""A Kineto trace with RANGES annotation ranges (user_annotation, nested two deep: an outer
"step" range around inner "layer_K" ranges) on 4 host threads, each inner range launching
one kernel onto its thread's stream; written as JSON (uncompressed). With --sqlite, the
same ranges and kernels as an nsys-shaped SQLite file (NVTX_EVENTS,
CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_KERNEL, StringIds) for the join nsys's
users write by hand.
  python3 bench/nvtx/make_ranges.py OUT.json RANGES [--sqlite OUT.sqlite]"""
from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

THREADS = 4
INNER = 7  # inner ranges per outer one


def events(ranges: int):
    """Yields (kind, tid, start_ns, end_ns, name, correlation) in time order per thread."""
    per_thread = ranges // THREADS
    corr = 0
    for t in range(THREADS):
        tid = 100 + t
        ts = 1_000_000 + t * 3_000
        made = 0
        while made < per_thread:
            inner = min(INNER, per_thread - made - 1)
            outer_start = ts
            ts += 500
            yield ("range", tid, outer_start, outer_start + 1 + inner * 2_000 + 500, "step", 0)
            made += 1
            for k in range(max(inner, 0)):
                start = ts
                yield ("range", tid, start, start + 1_500, f"layer_{k}", 0)
                corr += 1
                yield ("launch", tid, start + 100, start + 900, "cudaLaunchKernel", corr)
                yield ("kernel", tid, start + 1_000, start + 1_000 + 400 + 37 * k, f"gemm_{k % 5}", corr)
                ts += 2_000
                made += 1
            ts = outer_start + 1 + inner * 2_000 + 1_000


def write_json(path: str, ranges: int) -> None:
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        first = True
        for kind, tid, start, end, name, corr in events(ranges):
            us, dur = start / 1000.0, (end - start) / 1000.0
            if kind == "range":
                line = (f'{{"ph": "X", "cat": "user_annotation", "name": "{name}", "pid": 1, "tid": {tid}, '
                        f'"ts": {us:.3f}, "dur": {dur:.3f}}}')
            elif kind == "launch":
                line = (f'{{"ph": "X", "cat": "cuda_runtime", "name": "{name}", "pid": 1, "tid": {tid}, '
                        f'"ts": {us:.3f}, "dur": {dur:.3f}, "args": {{"correlation": {corr}}}}}')
            else:
                line = (f'{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": {tid - 93}, '
                        f'"ts": {us:.3f}, "dur": {dur:.3f}, "args": {{"correlation": {corr}, '
                        f'"stream": {tid - 93}, "device": 0}}}}')
            f.write(("" if first else ",\n") + line)
            first = False
        f.write("\n]}\n")


def write_sqlite(path: str, ranges: int) -> None:
    Path(path).unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.executescript("""
      CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
      CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT,
                                globalTid INTEGER, textId INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, globalTid INTEGER,
                                                correlationId INTEGER, nameId INTEGER);
      CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
                                               streamId INTEGER, correlationId INTEGER,
                                               shortName INTEGER, demangledName INTEGER);""")
    names: dict[str, int] = {}

    def sid(s: str) -> int:
        if s not in names:
            names[s] = len(names)
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (names[s], s))
        return names[s]

    rows_r, rows_l, rows_k = [], [], []
    for kind, tid, start, end, name, corr in events(ranges):
        if kind == "range":
            rows_r.append((start, end, 59, name, tid, None))
        elif kind == "launch":
            rows_l.append((start, end, tid, corr, sid(name)))
        else:
            rows_k.append((start, end, 0, tid - 93, corr, sid(name), sid(name)))
    db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?)", rows_r)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?)", rows_l)
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?)", rows_k)
    db.commit()
    db.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("ranges", type=int)
    ap.add_argument("--sqlite")
    a = ap.parse_args()
    write_json(a.out, a.ranges)
    if a.sqlite:
        write_sqlite(a.sqlite, a.ranges)


if __name__ == "__main__":
    main()
