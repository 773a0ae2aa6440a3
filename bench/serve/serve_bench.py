#!/usr/bin/env python3
"""Dynamic batching, served live: `tierscope serve` against the engine offline.

For one sequence length (default 128 tokens, the study's), on loopback:
  1. offline: `tierscope bench --mode batch-fp32` at --batch (64, the study's batched
     run), the median of --repeats, as the reference throughput;
  2. the server with dynamic batching (--max-batch-size --batch), then with batching off
     (--max-batch-size 1): a closed-loop run (--concurrency clients) for its capacity,
     then open-loop Poisson runs at fractions of the offline throughput, so both
     servers face the same offered load;
  3. a table: sustained throughput, its share of offline, P50/P99, errors, mean batch;
  4. serving without padding (issue 30): on a realistic mix of lengths, --mix (default: a
     skewed choice of 8 to 256 tokens, median 24, mean 49, as embedding traffic of short
     queries with a long tail), `--batching packed` against `--batching buckets` (today's
     length buckets, padded to each batch's longest): each server's closed-loop capacity
     (alternated --mix-rounds times, the best of each), then both at the same open-loop
     rates (fractions of the bucketed capacity) for P50/P99; the goal: packed >= 1.5x the
     bucketed throughput at equal or lower P99; with it, the most packing can save on the
     mix at equal efficiency per FLOP (every input padded to its bucket's edge, by
     tierscope's own FLOP count), so a ratio above that bound is read as the packed path
     running faster per FLOP, and a goal above it as out of packing's reach.
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


def bench_result(binary: str, args: list[str]) -> dict:
    """`tierscope bench ARGS`'s RESULT_JSON object."""
    out = run([binary, "bench", *args])
    line = next(l for l in out.splitlines() if l.startswith("RESULT_JSON="))
    return json.loads(line[len("RESULT_JSON="):])


def offline(binary: str, seq_len: int, batch: int, repeats: int, threads: int) -> float:
    runs = [bench_result(binary, ["--mode", "batch-fp32", "--batch-size", str(batch), "--seq-len", str(seq_len),
                                  "--iterations", "30", "--threads", str(threads)])["samples_per_s"]
            for _ in range(repeats)]
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


def table_row(r: dict) -> str:
    offered = f"{r['offered_rps']:.0f}" if r["offered_rps"] else "-"
    errors = ", ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "0"
    mean_batch = f"{r['mean_batch']:.1f}" if r["mean_batch"] else "-"
    return (f"| {r['run']} | {offered} | {r['throughput_rps']:.1f} | {100 * r['share_of_offline']:.0f}% | "
            f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {errors} | {mean_batch} |")


MIX = "choice:8,8,8,8,12,12,12,16,16,16,20,24,24,32,32,40,48,64,64,96,128,192,256"


def closed_args(a, lengths: str) -> list[str]:
    """`tierscope load`'s arguments for a closed-loop run (a server's capacity) on `lengths`."""
    return ["--mode", "closed", "--concurrency", str(a.concurrency), "--duration", str(a.duration),
            "--warmup", str(a.warmup), "--lengths", lengths]


def closed_loop(a, out: Path, server_args: list, tag: str, lengths: str) -> dict:
    """One server's closed-loop run on `lengths` (its capacity), the server stopped after."""
    server = Server(a.tierscope, ["--threads", str(a.threads), *server_args])
    try:
        return load(a.tierscope, server.url, out / f"{tag}_closed.json", closed_args(a, lengths))
    finally:
        server.stop()
        time.sleep(0.5)


def closed_and_open(a, out: Path, server_args: list, tag: str, name: str, lengths: str, base, base_name: str,
                    closed: dict | None = None, closed_name: str = ""):
    """One server on `lengths`: the closed loop (or `closed`, a closed_loop report already
    taken, `closed_name` after the row's name), then the open loop at each --fractions x
    `base` req/s (None: this server's closed-loop capacity), every row's share of `base`.
    Returns the rows and the base."""
    rows = []
    server = Server(a.tierscope, ["--threads", str(a.threads), *server_args])
    try:
        r = closed if closed is not None else load(a.tierscope, server.url, out / f"{tag}_closed.json",
                                                   closed_args(a, lengths))
        base = r["throughput_rps"] if base is None else base
        rows.append(row(f"{name}, closed loop x{a.concurrency}{closed_name}", r, base))
        print(json.dumps(rows[-1]), flush=True)
        for f in (float(x) for x in a.fractions.split(",")):
            r = load(a.tierscope, server.url, out / f"{tag}_open_{f:.2f}.json",
                     ["--mode", "open", "--rate", f"{f * base:.1f}", "--duration", str(a.duration),
                      "--warmup", str(a.warmup), "--lengths", lengths, "--timeout", "30"])
            rows.append(row(f"{name}, open loop at {f:.2f} x {base_name}", r, base))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        server.stop()
        time.sleep(0.5)
    return rows, base


def packed_vs_buckets(a, out: Path) -> list:
    """Section 4: packed against bucketed batching on the --mix of lengths. Their capacities
    (closed loop) alternate --mix-rounds times, each keeping its best: this machine's speed
    drifts by tens of percent between minutes, and one run each read anywhere from 1.21x to
    1.35x. Then both are offered the same open-loop rates (fractions of the bucketed
    capacity)."""
    args = {b: ["--max-batch-size", str(a.batch), "--batching", b, "--buckets", a.buckets]
            for b in ("buckets", "packed")}
    runs: dict = {b: [] for b in args}
    for rnd in range(max(1, a.mix_rounds)):
        for b in args:
            runs[b].append(closed_loop(a, out, args[b], f"mix_{b}_{rnd + 1}", a.mix))
    best = {b: max(runs[b], key=lambda r: r["throughput_rps"]) for b in runs}
    label = f", best of {len(runs['buckets'])} alternated" if len(runs["buckets"]) > 1 else ""
    rows, capacity = [], best["buckets"]["throughput_rps"]
    for b in args:
        more, _ = closed_and_open(a, out, args[b], f"mix_{b}", f"{b}, mix", a.mix, capacity, "bucketed capacity",
                                  closed=best[b], closed_name=label)
        rows += more
    return rows


def mix_lengths(spec: str) -> list[int]:
    """The lengths of a `tierscope load --lengths` spec, each as likely as it is in it
    (fixed:N, uniform:A-B, choice:A,B,C), read as `tierscope load` reads it (whole numbers
    of at least 3 tokens: lengths count [CLS] and [SEP]); a spec it cannot read stops the
    run, naming it, before any server runs."""
    kind, _, arg = spec.partition(":")

    def number(text: str) -> int:
        if not re.fullmatch(r"[0-9]+", text):
            raise ValueError(f"'{text}' is not a whole number")
        return int(text)

    try:
        if kind == "fixed":
            out = [number(arg)]
        elif kind == "uniform":
            a, sep, b = arg.partition("-")
            if not sep:
                raise ValueError("uniform needs A-B")
            a, b = number(a), number(b)
            if a > b:
                raise ValueError("uniform needs A <= B")
            out = list(range(a, b + 1))
        elif kind == "choice":
            out = [number(x) for x in arg.split(",")] if arg else []
            if not out:
                raise ValueError("choice needs lengths")
        else:
            raise ValueError(f"unknown kind '{kind}'")
        if min(out) < 3:
            raise ValueError(f"length {min(out)} is below 3 (lengths count [CLS] and [SEP])")
    except ValueError as e:
        sys.exit(f"--mix {spec}: not fixed:N, uniform:A-B or choice:A,B,C ({e})")
    return out


def bucket_edges(spec: str) -> list[int]:
    """--buckets as `tierscope serve` takes it: increasing whole numbers; else the run stops
    here, naming it."""
    parts = spec.split(",")
    if not all(re.fullmatch(r"[0-9]+", p) for p in parts):
        sys.exit(f"--buckets {spec}: not a comma-separated list of whole numbers")
    edges = [int(p) for p in parts]
    if edges[0] < 1 or any(b <= a for a, b in zip(edges, edges[1:])):
        sys.exit(f"--buckets {spec}: the edges must be positive and increasing")
    return edges


def padding_bound(binary: str, spec: str, edges: list[int]) -> dict:
    """FLOPs of the mix padded to bucket edges over its FLOPs packed, by `tierscope bench`'s
    flops_per_sample (the one FLOP count): the packed / bucketed ratio packing reaches at
    equal efficiency per FLOP when every bucketed batch is padded to its edge (a batch pads
    to its longest input, at most the edge: no more is saved)."""
    def flops_of(n: int) -> float:
        try:
            return bench_result(binary, ["--batch-size", "1", "--seq-len", str(n), "--iterations", "1",
                                         "--warmup", "0"])["flops_per_sample"]
        except subprocess.CalledProcessError as e:
            last = ((e.stderr or "").strip().splitlines() or [f"exit status {e.returncode}"])[-1]
            sys.exit(f"the padding bound: tierscope bench at {n} tokens failed: {last}")

    lengths = mix_lengths(spec)
    if max(lengths) > max(edges):
        sys.exit(f"--mix {spec}: a length of {max(lengths)} tokens is past the largest bucket edge ({max(edges)})")
    edge = {n: min(e for e in edges if e >= n) for n in set(lengths)}
    flops = {n: flops_of(n) for n in set(lengths) | set(edge.values())}  # one bench run a length
    packed = sum(flops[n] for n in lengths)
    padded = sum(flops[edge[n]] for n in lengths)
    tokens = sum(lengths)
    padded_tokens = sum(edge[n] for n in lengths)
    return {"flop_ratio": padded / packed, "padded_token_share": 1 - tokens / padded_tokens}


def mix_goals(rows: list, bound: dict | None = None) -> list[str]:
    """Packed / buckets capacity (goal >= 1.5) and P99 at each shared open-loop rate; with
    `bound` (padding_bound), what the ratio needs of the packed path's efficiency."""
    by = {r["run"]: r for r in rows}
    closed = [r for r in rows if "closed" in r["run"]]
    lines, p99_ok = [], True
    for r in rows:
        if r["run"].startswith("buckets, mix, open"):
            twin = by.get(r["run"].replace("buckets", "packed", 1))
            if not twin or twin["p99_ms"] is None or r["p99_ms"] is None:
                p99_ok = False
                lines.append(f"{r['run']}: no P99 to compare")
                continue
            ok = twin["p99_ms"] <= r["p99_ms"]
            p99_ok &= ok
            lines.append(f"{r['run'].split(', ', 2)[2]}: P99 packed {twin['p99_ms']:.1f} ms vs buckets "
                         f"{r['p99_ms']:.1f} ms ({'equal or lower' if ok else 'HIGHER'})")
    errors = sum(sum(r["errors"].values()) for r in rows)
    ratio = None  # packed / buckets closed-loop capacity
    if len(closed) == 2 and closed[0]["throughput_rps"] > 0:
        ratio = closed[1]["throughput_rps"] / closed[0]["throughput_rps"]
        met = ratio >= 1.5 and p99_ok and errors == 0
        why = [] if met else ([f"{ratio / 1.5:.0%} of the capacity goal"] if ratio < 1.5 else []) + \
            ([] if p99_ok else ["a higher P99"]) + ([f"{errors} errors"] if errors else [])
        lines.insert(0, f"packed / buckets closed-loop capacity: {ratio:.2f} (goal >= 1.50 at equal or lower P99, "
                        f"no errors) {'met' if met else 'NOT met (' + ', '.join(why) + ')'}")
    else:
        lines.insert(0, "packed / buckets closed-loop capacity: n/a (a closed-loop run is missing or served nothing)")
    if bound:
        r = bound["flop_ratio"]
        lines.insert(1, f"padding on this mix: {bound['padded_token_share']:.0%} of the tokens padded to bucket edges; "
                        f"buckets compute at most {r:.2f}x the packed FLOPs, so packing alone reaches at most "
                        f"{r:.2f}x at equal efficiency per FLOP" +
                        (f"; the 1.50 goal needs the packed path at least {1.5 / r:.2f}x faster per FLOP"
                         if r < 1.5 else ""))
        if ratio is not None:
            # The bucketed batches pad to their longest input (at most the edge), and the
            # padded attention skips keys past the last real one: they compute between 1x
            # and r x the packed FLOPs, so per FLOP the packed path ran between these.
            lines.insert(2, f"measured {ratio:.2f} against the bound {r:.2f}: per FLOP the packed path ran between "
                            f"{ratio / r:.2f}x and {ratio:.2f}x as fast as the bucketed one")
    return lines


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
    ap.add_argument("--mix-rounds", type=int, default=2,
                    help="section 4's capacity runs, packed and bucketed alternated, the best of each")
    ap.add_argument("--buckets", default="16,32,64,128,256,512",
                    help="both servers' bucket edges (tierscope serve --buckets; its default)")
    ap.add_argument("--mix", default=MIX, help="section 4's lengths (tierscope load --lengths; its padding bound "
                    "runs `tierscope bench` once a distinct length); '' skips it")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    lengths = f"fixed:{a.seq_len}"
    # Checked before any server runs: a mix past the largest edge stops here.
    bound = padding_bound(a.tierscope, a.mix, bucket_edges(a.buckets)) if a.mix else None

    reference = offline(a.tierscope, a.seq_len, a.batch, a.repeats, a.threads)
    print(f"offline batch-fp32, batch {a.batch} x seq {a.seq_len}: {reference:.1f} samples/s "
          f"(median of {a.repeats})", flush=True)
    rows = []
    for name, extra in ((f"batching (max {a.batch})", ["--max-batch-size", str(a.batch)]),
                        ("max-batch 1", ["--max-batch-size", "1"])):
        tag = "unbatched" if extra[-1] == "1" else "batched"
        rows += closed_and_open(a, out, extra, tag, name, lengths, reference, "offline")[0]

    mix_rows = packed_vs_buckets(a, out) if a.mix else []
    goals = mix_goals(mix_rows, bound)
    table = ["| run | offered req/s | sustained req/s | share of offline | P50 ms | P99 ms | errors | mean batch |",
             "|---|---|---|---|---|---|---|---|"]
    table += [table_row(r) for r in rows]
    if mix_rows:
        table += ["", f"Lengths {a.mix} (share: of the bucketed server's closed-loop capacity)", "",
                  table[0], table[1]]
        table += [table_row(r) for r in mix_rows]
        table += ["", "goals (serving without padding):", *("  " + g for g in goals)]
    text = (f"offline batch-fp32 (batch {a.batch}, seq {a.seq_len}): {reference:.1f} samples/s\n\n" +
            "\n".join(table) + "\n")
    (out / "serve_bench.md").write_text(text)
    (out / "serve_bench.json").write_text(json.dumps({"offline_samples_per_s": reference,
                                                      "seq_len": a.seq_len, "batch": a.batch,
                                                      "rows": rows, "mix": a.mix, "mix_rows": mix_rows,
                                                      "padding_bound": bound, "mix_goals": goals}, indent=2))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
