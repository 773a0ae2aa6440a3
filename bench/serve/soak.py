#!/usr/bin/env python3
"""Soak: `tierscope serve` under a bounded, loopback-only mix of good and bad clients on
HTTP and gRPC at once, then SIGTERM.

Clients (threads, each looping until the duration is up):
  * valid: /embed, /v1/embeddings, KServe v2 JSON infer over HTTP, ModelInfer over gRPC;
  * malformed: bad JSON, wrong dtypes, ids outside the vocabulary, a bad binary tensor;
  * oversized: too many inputs (413) and a body over the limit (413);
  * disconnecting: a request whose connection is closed before the answer, or mid-body;
  * slow: a request whose body trickles in a few bytes at a time.
Reported: every request that got a 2xx was answered (and every one sent got some answer
or was one we cut off ourselves), resident memory after warm-up vs at the end (goal:
within 5%), open file descriptors at the start vs after the clients stop (goal: back to
baseline), and a SIGTERM sent while requests are in flight: every one answered, exit 0.

Usage: bash bench/serve/soak.sh [--duration 120] [--warmup 20]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter

import numpy as np


def rss_kb(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.codes = Counter()  # (kind, code) -> count
        self.lost = []           # kinds of requests that got no answer although we waited

    def add(self, kind: str, code) -> None:
        with self.lock:
            self.codes[(kind, code)] += 1


def post(port: int, path: str, body, headers=None, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        conn.request("POST", path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


def oversized_body(port: int):
    """A 9 MiB body: the server may answer 413 from the headers and close while the body is
    still being sent; the answer is then read after the failed send."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    body = b"{" + b" " * (9 << 20) + b"}"
    head = f"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    try:
        s.sendall(head.encode() + body)
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused before the body was all sent
    reply = b""
    try:
        while chunk := s.recv(65536):
            reply += chunk
    except ConnectionResetError:
        pass
    s.close()
    m = re.match(rb"HTTP/1.1 (\d+)", reply)
    return int(m.group(1)) if m else "closed without an answer"


def infer_body(ids):
    return {"inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [len(ids), len(ids[0])],
                        "data": [x for row in ids for x in row]}]}


def client_loop(kind: str, port: int, grpc_port: int, stop: threading.Event, tally: Tally, seed: int) -> None:
    rng = random.Random(seed)
    words = ["tierscope", "serves", "bert", "kernels", "tiers", "batch", "profile", "trace"]
    grpc = None
    if kind == "grpc":
        import tritonclient.grpc as grpcclient
        grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
    while not stop.is_set():
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 40)))
        try:
            if kind == "embed":
                tally.add(kind, post(port, "/embed", {"inputs": [text] * rng.randint(1, 4)}))
            elif kind == "openai":
                tally.add(kind, post(port, "/v1/embeddings", {"model": "soak", "input": text}))
            elif kind == "kserve":
                n = rng.randint(2, 30)
                tally.add(kind, post(port, "/v2/models/soak/infer", infer_body([[101] + [2000 + i for i in range(n)] + [102]])))
            elif kind == "grpc":
                t = grpcclient.InferInput("input_ids", [1, 5], "INT64")
                t.set_data_from_numpy(np.array([[101, 2000, 2001, 2002, 102]], dtype=np.int64))
                grpc.infer("soak", [t])
                tally.add(kind, 200)
            elif kind == "malformed":
                bad = rng.choice([b"{not json", json.dumps({"inputs": 3}), json.dumps(infer_body([[10 ** 9]])),
                                  json.dumps({"model": "soak", "input": [[1, -5]]})])
                path = rng.choice(["/embed", "/v2/models/soak/infer", "/v1/embeddings"])
                tally.add(kind, post(port, path, bad))
            elif kind == "oversized":
                if rng.random() < 0.5:
                    tally.add(kind, post(port, "/embed", {"inputs": ["x"] * 1000}))
                else:
                    tally.add(kind, oversized_body(port))
            elif kind == "disconnect":
                s = socket.create_connection(("127.0.0.1", port))
                body = json.dumps({"inputs": [text]}).encode()
                head = f"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                cut = rng.random() < 0.5
                s.sendall(head.encode() + (body[: len(body) // 2] if cut else body))
                time.sleep(rng.random() * 0.05)
                s.close()
                tally.add(kind, "closed mid-body" if cut else "closed before the answer")
            elif kind == "slow":
                s = socket.create_connection(("127.0.0.1", port), timeout=60)
                body = json.dumps({"inputs": [text]}).encode()
                s.sendall(f"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
                for i in range(0, len(body), 7):
                    s.sendall(body[i:i + 7])
                    time.sleep(0.01)
                reply = b""
                while chunk := s.recv(65536):
                    reply += chunk
                s.close()
                m = re.match(rb"HTTP/1.1 (\d+)", reply)
                tally.add(kind, int(m.group(1)) if m else "no answer")
                if not m:
                    tally.lost.append(kind)
        except Exception as e:  # noqa: BLE001 - a failure is a finding, counted
            tally.add(kind, f"error {type(e).__name__}")
            if kind not in ("disconnect",):
                tally.lost.append(f"{kind}: {type(e).__name__}: {str(e)[:80]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tierscope", default="build/release/tierscope")
    ap.add_argument("--duration", type=float, default=120, help="seconds of load after warm-up")
    ap.add_argument("--warmup", type=float, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokenization-workers", type=int, default=2,
                    help="the server's parse pool (2: on, so disconnects and drains meet it; 0: the io thread)")
    a = ap.parse_args()

    proc = subprocess.Popen([a.tierscope, "serve", "--port", "0", "--grpc-port", "0", "--model-name", "soak",
                             "--threads", str(a.threads), "--max-queue", "256",
                             "--tokenization-workers", str(a.tokenization_workers)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port = int(re.search(r":(\d+)", proc.stdout.readline()).group(1))
    grpc_port = int(re.search(r":(\d+)$", proc.stdout.readline().strip()).group(1))
    stderr_lines = []
    threading.Thread(target=lambda: stderr_lines.extend(proc.stderr), daemon=True).start()
    time.sleep(0.5)
    fds0 = open_fds(proc.pid)
    rss0 = rss_kb(proc.pid)

    kinds = ["embed", "embed", "openai", "kserve", "grpc", "grpc", "malformed", "oversized", "disconnect", "slow"]
    stop = threading.Event()
    tally = Tally()
    threads = [threading.Thread(target=client_loop, args=(k, port, grpc_port, stop, tally, i), daemon=True)
               for i, k in enumerate(kinds)]
    for t in threads:
        t.start()
    time.sleep(a.warmup)
    rss_warm = rss_kb(proc.pid)
    samples = []
    t_end = time.monotonic() + a.duration
    while time.monotonic() < t_end:
        time.sleep(min(5, max(0.1, t_end - time.monotonic())))
        samples.append(rss_kb(proc.pid))
    rss_end = rss_kb(proc.pid)
    stop.set()
    for t in threads:
        t.join(timeout=120)
    time.sleep(1.0)  # let the server close what the clients left
    fds_after = open_fds(proc.pid)

    # SIGTERM with requests in flight: each must be answered.
    results = []
    long_text = " ".join(["tierscope drains every request it accepted"] * 12)
    import tritonclient.grpc as grpcclient

    def grpc_call():
        c = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
        t = grpcclient.InferInput("input_ids", [4, 5], "INT64")
        t.set_data_from_numpy(np.tile(np.array([[101, 2000, 2001, 2002, 102]], dtype=np.int64), (4, 1)))
        try:
            c.infer("soak", [t])
            results.append(200)
        except grpcclient.InferenceServerException as e:  # UNAVAILABLE: it came after the signal
            results.append(503 if "UNAVAILABLE" in str(e.status()) else f"grpc {e.status()}")

    inflight = [threading.Thread(target=lambda: results.append(post(port, "/embed", {"inputs": [long_text] * 16})))
                for _ in range(12)] + [threading.Thread(target=grpc_call) for _ in range(4)]
    for t in inflight:
        t.start()
    time.sleep(0.02)  # the first requests are running, the rest queued or still arriving
    proc.send_signal(signal.SIGTERM)
    for t in inflight:
        t.join(timeout=120)
    code = proc.wait(timeout=120)
    time.sleep(0.2)

    total = sum(tally.codes.values())
    print(f"soak: {a.duration:.0f} s after a {a.warmup:.0f} s warm-up, {len(kinds)} client threads, HTTP and gRPC, "
          f"{a.tokenization_workers} tokenization workers")
    print(f"  requests: {total}")
    for (kind, c), n in sorted(tally.codes.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        print(f"    {kind:11s} {str(c):28s} {n}")
    growth = 100.0 * (rss_end - rss_warm) / rss_warm
    print(f"  resident memory: {rss0 / 1024:.1f} MiB idle at the start, {rss_warm / 1024:.1f} MiB after warm-up, {rss_end / 1024:.1f} MiB at the end "
          f"({growth:+.2f}%; max {max(samples) / 1024:.1f} MiB) -> {'within 5%' if abs(growth) <= 5 else 'NOT within 5%'}")
    print(f"  open file descriptors: {fds0} at the start, {fds_after} after the clients stopped -> "
          f"{'back to baseline' if fds_after <= fds0 else 'NOT back to baseline'}")
    answered = sum(1 for r in results if r == 200)
    refused = sum(1 for r in results if r == 503)  # arrived after SIGTERM: refused, as documented
    print(f"  SIGTERM among {len(inflight)} requests (12 HTTP of 16 inputs, 4 gRPC of 4): {answered} accepted and answered 200, "
          f"{refused} arrived after it and got 503, {len(results) - answered - refused} otherwise; exit code {code}; "
          f"server: {''.join(l for l in stderr_lines if 'drain' in l).strip()}")
    # A valid client answered with a server error, or a bad one accepted, is a failure too.
    wrong = {k: n for k, n in tally.codes.items()
             if (k[0] in ("embed", "openai", "kserve", "grpc", "slow") and isinstance(k[1], int) and k[1] >= 500)
             or (k[0] in ("malformed", "oversized") and isinstance(k[1], int) and k[1] < 400)}
    if wrong:
        print(f"  unexpected answers: {wrong}")
    ok = (not tally.lost and not wrong and abs(growth) <= 5 and fds_after <= fds0 and code == 0 and
          answered + refused == len(inflight) == len(results))
    if tally.lost:
        print(f"  requests without an answer: {len(tally.lost)}: {tally.lost[:5]}")
    print("soak: " + ("PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
