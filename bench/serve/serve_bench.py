#!/usr/bin/env python3
"""Dynamic batching, served live: `tierscope serve` against the engine offline.

For one sequence length (default 128 tokens, the study's), on loopback:
  1. offline: `tierscope bench --mode batch-fp32` at --batch (64, the study's batched
     run), the median of --repeats, as the reference throughput;
  2. the server with dynamic batching (--max-batch-size --batch), then with batching off
     (--max-batch-size 1): a closed-loop run (--concurrency clients) for its capacity,
     then open-loop Poisson runs at fractions of the offline throughput, so both
     servers face the same offered load;
  3. a table: sustained throughput, its share of offline, P50/P99, errors, mean batch.
Every `tierscope load` report is kept as JSON under --out. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path


def run(cmd, **kw) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def offline(binary: str, seq_len: int, batch: int, repeats: int, threads: int) -> float:
    runs = []
    for _ in range(repeats):
        out = run([binary, "bench", "--mode", "batch-fp32", "--batch-size", str(batch),
                   "--seq-len", str(seq_len), "--iterations", "30", "--threads", str(threads)])
        line = next(l for l in out.splitlines() if l.startswith("RESULT_JSON="))
        runs.append(json.loads(line[len("RESULT_JSON="):])["samples_per_s"])
    return sorted(runs)[len(runs) // 2]


class Server:
    def __init__(self, binary: str, args: list[str]):
        self.proc = subprocess.Popen([binary, "serve", "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        m = re.search(r"listening on (http://\S+)", self.proc.stdout.readline())
        if not m:
            self.proc.kill()
            sys.exit("tierscope serve did not start")
        self.url = m.group(1)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def load(binary: str, url: str, out: Path, args: list[str]) -> dict:
    run([binary, "load", "--url", url, "--json", str(out), *args])
    return json.loads(out.read_text())


def row(name: str, r: dict, reference: float) -> dict:
    lat = r.get("latency_ms") or {}
    sb = r.get("server_batches") or {}
    errors = {k: v for k, v in (r.get("errors") or {}).items() if v}
    return {"run": name, "offered_rps": r.get("offered_rps"), "throughput_rps": r["throughput_rps"],
            "share_of_offline": r["throughput_rps"] / reference, "p50_ms": lat.get("p50"),
            "p99_ms": lat.get("p99"), "errors": errors, "mean_batch": sb.get("mean_size")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tierscope", default="build/release/tierscope")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=64, help="offline batch and the server's max batch")
    ap.add_argument("--duration", type=float, default=15)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--fractions", default="0.8,0.9", help="open-loop rates, as fractions of offline")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", default="results/serve_bench")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    lengths = f"fixed:{a.seq_len}"

    reference = offline(a.tierscope, a.seq_len, a.batch, a.repeats, a.threads)
    print(f"offline batch-fp32, batch {a.batch} x seq {a.seq_len}: {reference:.1f} samples/s "
          f"(median of {a.repeats})", flush=True)
    rows = []
    for name, extra in ((f"batching (max {a.batch})", ["--max-batch-size", str(a.batch)]),
                        ("max-batch 1", ["--max-batch-size", "1"])):
        server = Server(a.tierscope, ["--threads", str(a.threads), *extra])
        try:
            tag = "unbatched" if extra[-1] == "1" else "batched"
            r = load(a.tierscope, server.url, out / f"{tag}_closed.json",
                     ["--mode", "closed", "--concurrency", str(a.concurrency), "--duration",
                      str(a.duration), "--warmup", str(a.warmup), "--lengths", lengths])
            rows.append(row(f"{name}, closed loop x{a.concurrency}", r, reference))
            print(json.dumps(rows[-1]), flush=True)
            for f in (float(x) for x in a.fractions.split(",")):
                r = load(a.tierscope, server.url, out / f"{tag}_open_{f:.2f}.json",
                         ["--mode", "open", "--rate", f"{f * reference:.1f}", "--duration",
                          str(a.duration), "--warmup", str(a.warmup), "--lengths", lengths,
                          "--timeout", "30"])
                rows.append(row(f"{name}, open loop at {f:.2f} x offline", r, reference))
                print(json.dumps(rows[-1]), flush=True)
        finally:
            server.stop()
            time.sleep(0.5)

    table = ["| run | offered req/s | sustained req/s | share of offline | P50 ms | P99 ms | errors | mean batch |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        offered = f"{r['offered_rps']:.0f}" if r["offered_rps"] else "-"
        errors = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0"
        mean_batch = f"{r['mean_batch']:.1f}" if r["mean_batch"] else "-"
        table.append(f"| {r['run']} | {offered} | {r['throughput_rps']:.1f} | "
                     f"{100 * r['share_of_offline']:.0f}% | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
                     f"{errors} | {mean_batch} |")
    text = (f"offline batch-fp32 (batch {a.batch}, seq {a.seq_len}): {reference:.1f} samples/s\n\n" +
            "\n".join(table) + "\n")
    (out / "serve_bench.md").write_text(text)
    (out / "serve_bench.json").write_text(json.dumps({"offline_samples_per_s": reference,
                                                      "seq_len": a.seq_len, "batch": a.batch,
                                                      "rows": rows}, indent=2))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
