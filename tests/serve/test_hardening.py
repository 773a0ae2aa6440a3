"""`tierscope serve` against hostile clients: many idle sockets under a low descriptor
limit, slow-loris headers, outputs repeated to amplify a response, a pipelined request
then a disconnect; gRPC's limits (message size, streams and headers advertised to every
connection, idle connections closed); flags out of range; a second signal; /tokenize while
draining; and /info that keeps the model's path to itself. /health must keep answering
throughout."""
from __future__ import annotations

import json
import re
import resource
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from test_serve import infer_body, words


def health_answers(s, timeout: float = 5) -> bool:
    return s.request("GET", "/health", timeout=timeout).status == 200


def descriptor_limit(n: int):
    def lower():
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return lower


# ------------------------------------------------------------------ amplification


def test_repeated_and_unknown_outputs_are_400_naming_them(serve):
    s = serve("--threads", "1", "--model-name", "m")
    body = infer_body([[101, 7592, 102]])
    body["outputs"] = [{"name": "last_hidden_state"}] * 1000  # 31 KB once gave an 11 MB response
    r = s.post("/v2/models/m/infer", body)
    assert r.status == 400, r.body[:200]
    assert "`last_hidden_state` is requested more than once" in r.json()["error"]
    assert len(r.body) < 1000
    body["outputs"] = [{"name": "logits"}]
    r = s.post("/v2/models/m/infer", body)
    assert r.status == 400 and "unknown output `logits`" in r.json()["error"], r.json()
    body["outputs"] = [{"name": "x" * 100000}]
    r = s.post("/v2/models/m/infer", body)
    assert r.status == 400 and len(r.body) < 1000  # the name is clipped, not echoed
    body["outputs"] = [{"name": "pooler_output"}, {"name": "last_hidden_state"}]
    r = s.post("/v2/models/m/infer", body)
    assert r.status == 200 and [o["name"] for o in r.json()["outputs"]] == ["pooler_output", "last_hidden_state"]


def test_grpc_repeated_outputs_are_invalid_argument(serve):
    grpcclient = pytest.importorskip("tritonclient.grpc")
    from test_clients import grpc_port

    s = serve("--threads", "1", "--model-name", "tiny", "--grpc-port", "0")
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port(s)}")
    t = grpcclient.InferInput("input_ids", [1, 3], "INT64")
    t.set_data_from_numpy(np.array([[101, 2000, 102]], dtype=np.int64))
    outs = [grpcclient.InferRequestedOutput("last_hidden_state") for _ in range(50)]
    with pytest.raises(grpcclient.InferenceServerException, match="requested more than once"):
        client.infer("tiny", [t], outputs=outs)
    with pytest.raises(grpcclient.InferenceServerException, match="unknown output `logits`"):
        client.infer("tiny", [t], outputs=[grpcclient.InferRequestedOutput("logits")])
    assert client.infer("tiny", [t]).as_numpy("last_hidden_state").shape == (1, 3, 128)


def test_grpc_messages_over_the_body_limit_are_refused(serve):
    grpcclient = pytest.importorskip("tritonclient.grpc")
    from test_clients import grpc_port

    s = serve("--threads", "1", "--model-name", "tiny", "--grpc-port", "0", "--max-body-bytes", "4096")
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port(s)}")
    t = grpcclient.InferInput("input_ids", [1, 600], "INT64")  # 4,800 bytes of raw contents
    t.set_data_from_numpy(np.full((1, 600), 2000, dtype=np.int64))
    with pytest.raises(grpcclient.InferenceServerException, match="(?i)larger than max|RESOURCE_EXHAUSTED"):
        client.infer("tiny", [t])
    small = grpcclient.InferInput("input_ids", [1, 3], "INT64")
    small.set_data_from_numpy(np.array([[101, 2000, 102]], dtype=np.int64))
    assert client.infer("tiny", [small]).as_numpy("last_hidden_state").shape == (1, 3, 128)
    assert health_answers(s)


def http2_frames(sock: socket.socket, until: float):
    """Reads HTTP/2 frames (type, flags, payload) from `sock` until EOF or `until`."""
    buf = b""
    while time.monotonic() < until:
        while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
            n = int.from_bytes(buf[:3], "big")
            yield buf[3], buf[4], buf[9:9 + n]
            buf = buf[9 + n:]
        sock.settimeout(max(0.01, until - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, ConnectionResetError):
            return
        if not chunk:
            return
        buf += chunk


def http2_open(port: int) -> socket.socket:
    """A raw HTTP/2 connection to the gRPC port: the client preface and empty SETTINGS."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    return sock


def grpc_settings(port: int) -> dict[int, int]:
    """The SETTINGS the gRPC server sends a new connection (id -> value)."""
    with http2_open(port) as sock:
        for kind, flags, payload in http2_frames(sock, time.monotonic() + 5):
            if kind == 0x4 and not flags & 0x1:  # SETTINGS, not an ACK
                return {int.from_bytes(payload[i:i + 2], "big"): int.from_bytes(payload[i + 2:i + 6], "big")
                        for i in range(0, len(payload), 6)}
    raise AssertionError("the gRPC port sent no SETTINGS frame")


def test_grpc_advertises_its_stream_and_metadata_limits(serve):
    """--grpc-max-streams reaches every connection as HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS
    (a client opens no more calls at once on it), and headers are capped at 16 KiB."""
    from test_clients import grpc_port

    s = serve("--threads", "1", "--model-name", "tiny", "--grpc-port", "0", "--grpc-max-streams", "3")
    settings = grpc_settings(grpc_port(s))
    assert settings.get(0x3) == 3, settings  # MAX_CONCURRENT_STREAMS
    assert settings.get(0x6) == 16 << 10, settings  # MAX_HEADER_LIST_SIZE
    s = serve("--threads", "1", "--model-name", "tiny", "--grpc-port", "0")
    assert grpc_settings(grpc_port(s)).get(0x3) == 64  # the default
    assert health_answers(s)


def test_grpc_idle_connections_are_closed_after_the_idle_timeout(serve):
    """A gRPC connection with no call is sent GOAWAY and closed after --idle-timeout, as an
    idle HTTP connection is; one with the default 60 s is still open after the same wait."""
    from test_clients import grpc_port

    s = serve("--threads", "1", "--model-name", "tiny", "--grpc-port", "0", "--idle-timeout", "1")
    start = time.monotonic()
    with http2_open(grpc_port(s)) as sock:
        kinds = [kind for kind, _, _ in http2_frames(sock, start + 8)]
    waited = time.monotonic() - start
    assert 0x7 in kinds, kinds  # GOAWAY
    assert 0.8 < waited < 6, waited
    s = serve("--threads", "1", "--model-name", "tiny", "--grpc-port", "0")
    with http2_open(grpc_port(s)) as sock:
        kinds = [kind for kind, _, _ in http2_frames(sock, time.monotonic() + 3)]
    assert 0x7 not in kinds, kinds
    assert health_answers(s)


# ------------------------------------------------------------------ connections


def test_idle_sockets_beyond_the_descriptor_limit_never_stop_health(serve):
    """The issue's case: ulimit -n 64 and 80 idle `POST /embed` sockets once made /health
    time out and stderr fill with "accept failed" 20 times a second."""
    s = serve("--threads", "1", "--idle-timeout", "60", preexec_fn=descriptor_limit(64))
    info = s.get("/info").json()
    assert 0 < info["max_connections"] < 64, info  # a default below the descriptor limit
    head = b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n"
    idle = []
    try:
        for i in range(80):
            c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
            c.sendall(head)  # headers never finished
            idle.append(c)
            if i % 10 == 9:
                assert health_answers(s), f"/health failed after {i + 1} idle sockets"
        for _ in range(10):
            assert health_answers(s)
        assert s.post("/embed", {"inputs": "still serving"}).status == 200
        evicted = s.metric('tierscope_connections_closed_total{reason="evicted"}')
        assert evicted >= 80 - info["max_connections"], evicted
    finally:
        for c in idle:
            c.close()
    assert s.stop() == 0
    floods = [l for l in s.stderr_lines if "accept failed" in l]
    assert len(floods) <= 5, floods  # rate-limited, if any at all


def test_slow_loris_headers_do_not_hold_the_server(serve):
    """Clients that send a header byte at a time hold a connection each; at the cap the
    one waiting longest for its request is closed to make room for /health."""
    s = serve("--threads", "1", "--max-connections", "8", "--idle-timeout", "60")
    stop = threading.Event()
    socks = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(16)]

    def drip():
        line = b"POST /embed HTTP/1.1\r\nX-Slow: " + b"a" * 200
        for byte in line:
            if stop.is_set():
                return
            for c in socks:
                try:
                    c.send(bytes([byte]))
                except OSError:
                    pass  # closed by the server to make room: expected
            time.sleep(0.02)

    t = threading.Thread(target=drip, daemon=True)
    t.start()
    try:
        for _ in range(20):
            assert health_answers(s)
            time.sleep(0.05)
    finally:
        stop.set()
        t.join(timeout=10)
        for c in socks:
            c.close()
    assert s.metric('tierscope_connections_closed_total{reason="evicted"}') >= 8
    assert s.post("/embed", {"inputs": "after the drip"}).status == 200


def read_response_head(c: socket.socket) -> bytes:
    """What arrives on `c` up to the end of a response's headers (the server must not close first)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = c.recv(65536)
        assert chunk, data
        data += chunk
    return data


def raw_get_health(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        return c.recv(4096)


def test_connections_over_the_cap_with_requests_in_hand_get_503(serve):
    """Every connection holds a queued request (none can be evicted): the next one is
    answered 503 and closed, and the queued ones are still answered."""
    s = serve("--threads", "1", "--max-connections", "4", "--max-queue-delay-ms", "3000",
              "--max-batch-size", "64")
    held = []
    for i in range(4):
        c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        body = json.dumps({"inputs": f"held {i}"}).encode()
        c.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        held.append(c)
    time.sleep(0.5)  # each request is read (and queued) long before its 3 s batch window ends
    reply = raw_get_health(s.port)
    assert reply.startswith(b"HTTP/1.1 503") and b"--max-connections" in reply, reply
    for c in held:
        assert read_response_head(c).startswith(b"HTTP/1.1 200")
        c.close()
    assert s.metric('tierscope_connections_closed_total{reason="refused"}') >= 1
    assert health_answers(s)


def test_request_bytes_beyond_the_buffer_budget_get_503(serve):
    s = serve("--threads", "1", "--max-body-bytes", str(1 << 20), "--max-buffered-bytes", str(1 << 20))
    size = 800000
    head = (b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: " + str(size).encode() + b"\r\n\r\n")
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as holder:
        # One body announced and partly sent holds most of the budget...
        holder.sendall(head + b'{"inputs": "' + b"a" * 1000)
        time.sleep(0.2)
        # ...so the next large body is refused at its header, and small requests still pass.
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
            c.sendall(head)
            reply = c.recv(4096)
        assert reply.startswith(b"HTTP/1.1 503") and b"--max-buffered-bytes" in reply, reply
        assert health_answers(s)
    assert s.post("/embed", {"inputs": "budget released"}).status == 200


def test_headers_that_announce_a_body_and_stall_lose_their_share_of_the_budget(serve):
    """Headers alone (a length announced, no body) once held the budget until the idle
    timeout: an upload stalled past 2 s is closed when another request needs its room."""
    s = serve("--threads", "1", "--max-body-bytes", str(1 << 20), "--max-buffered-bytes", str(1 << 20),
              "--idle-timeout", "60")
    stalled = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    stalled.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 900000\r\n\r\n{")
    time.sleep(2.5)
    text = "budget " * 100000  # 700 KB: more than the stalled upload leaves
    r = s.post("/embed", {"inputs": text, "truncate": True})
    assert r.status == 200, r.body[:300]
    assert stalled.recv(4096) == b""  # closed to make room
    stalled.close()
    assert s.metric('tierscope_connections_closed_total{reason="evicted"}') == 1


def test_an_upload_in_progress_is_never_evicted_at_the_connection_cap(serve):
    """At the cap, a connection whose header is in and whose body is still arriving holds a
    request: a new connection is answered 503, and the upload completes."""
    s = serve("--threads", "1", "--max-connections", "2", "--max-queue-delay-ms", "1")
    body = json.dumps({"inputs": "slow upload " * 50}).encode()
    ups = []
    for _ in range(2):
        c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        c.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:10])
        ups.append(c)
    time.sleep(0.5)  # both headers read
    reply = raw_get_health(s.port)
    assert reply.startswith(b"HTTP/1.1 503"), reply
    for c in ups:
        c.sendall(body[10:])
        assert read_response_head(c).startswith(b"HTTP/1.1 200")
        c.close()
    assert s.metric('tierscope_connections_closed_total{reason="evicted"}') == 0


def test_pipelined_request_then_disconnect_is_seen_as_leaving(serve):
    """A request queued, a second pipelined behind it, then the client leaves: the watch
    re-armed after the pipelined bytes sees the close and drops the queued input."""
    s = serve("--threads", "1", "--max-queue-delay-ms", "20000")
    body = json.dumps({"inputs": "going away"}).encode()
    c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    c.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    s.wait_for(lambda: s.metric("tierscope_queue_depth") == 1, what="queued")
    c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.2)
    c.close()
    s.wait_for(lambda: s.metric("tierscope_queue_depth") == 0, timeout=10, what="the cancel before the batch")
    text = s.get("/metrics").body.decode()
    assert 'tierscope_requests_total{endpoint="/embed",code="499"} 1' in text, text
    assert health_answers(s)


# ------------------------------------------------------------------ flags


@pytest.mark.parametrize("flag,value,fragment", [
    ("--max-body-bytes", "-1", "[1, 1073741824] bytes"),
    ("--idle-timeout", "0", "[0.01, 86400] s"),
    ("--port", "70000", "[0, 65535]"),
    ("--threads", "1e12", "[0, 1024]"),
    ("--drain-timeout", "nan", "[0, 86400] s"),
    ("--max-connections", "-1", "[0, 1048576]"),
    ("--max-queue", "0", "[1, 1048576]"),
    ("--max-queue-delay-ms", "1e300", "[0, 60000] ms"),
    ("--max-input-length", "1", "leaves no token between [CLS] and [SEP]"),  # once embedded [SEP] alone
    ("--max-input-length", "2", "give at least 3, or 0 for the model's"),
])
def test_serve_flags_out_of_range_exit_2_in_one_line(tierscope_bin, flag, value, fragment):
    proc = subprocess.run([str(tierscope_bin), "serve", "--port", "0", flag, value] if flag != "--port"
                          else [str(tierscope_bin), "serve", flag, value],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and flag in lines[0] and fragment in lines[0], proc.stderr


def test_max_connections_above_what_the_descriptor_limit_leaves_is_refused(tierscope_bin):
    proc = subprocess.run([str(tierscope_bin), "serve", "--port", "0", "--max-connections", "1000"],
                          capture_output=True, text=True, timeout=60, preexec_fn=descriptor_limit(64))
    assert proc.returncode == 2, proc.stderr
    assert "--max-connections must be in [1, 32]" in proc.stderr and "ulimit -n 64" in proc.stderr


@pytest.mark.parametrize("args,fragment", [
    (["--concurrency", "100000000"], "--concurrency"),
    (["--duration", "-1"], "--duration"),
    (["--rate", "1e300"], "--rate"),
])
def test_load_flags_out_of_range_exit_2_naming_the_flag(tierscope_bin, args, fragment):
    proc = subprocess.run([str(tierscope_bin), "load", "--url", "http://127.0.0.1:9", *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and fragment in proc.stderr, proc.stderr
    assert len([l for l in proc.stderr.splitlines() if l.strip()]) == 1, proc.stderr


# ------------------------------------------------------------------ signals and draining


BUCKET_LENGTHS = (12, 28, 60, 120, 250, 500)  # words: one input length per bucket edge


def serve_with_a_batch_per_bucket(serve):
    """A server whose batches never fill (a batch per length bucket, a minute's delay), so
    that a drain has a batch per bucket to run, one after another (--batching buckets:
    packed batching would put every length in one queue)."""
    return serve("--threads", "1", "--batching", "buckets", "--max-queue-delay-ms", "60000", "--max-batch-size", "256",
                 "--max-batch-tokens", "131072", "--drain-timeout", "600")


def queue_in_every_bucket(s, pool, per: int, reqs: int) -> list:
    """`reqs` requests of `per` inputs in each bucket, waited for until all are queued."""
    futures = [pool.submit(s.post, "/embed", {"inputs": [words(k, seed=i)] * per})
               for k in BUCKET_LENGTHS for i in range(reqs)]
    total = len(BUCKET_LENGTHS) * reqs * per
    s.wait_for(lambda: s.metric("tierscope_queue_depth") == total, what="every request queued")
    assert s.metric("tierscope_batch_size_count") == 0
    return futures


def test_a_second_signal_stops_at_once(serve):
    """The first signal drains: every queued input would run, a batch per length bucket
    (none is full, so none has left before). The second stops now, dropping what is
    still queued, and the exit status says the drain was cut short."""
    per, reqs = 8, 6  # 48 inputs in each of 6 buckets
    s = serve_with_a_batch_per_bucket(serve)
    n = len(BUCKET_LENGTHS) * reqs
    with ThreadPoolExecutor(n) as pool:
        futures = queue_in_every_bucket(s, pool, per, reqs)
        s.proc.send_signal(signal.SIGTERM)
        s.wait_for(lambda: any("draining" in l for l in s.stderr_lines), what="the drain")
        s.proc.send_signal(signal.SIGTERM)
        code = s.proc.wait(timeout=60)
        answered = 0
        for f in futures:
            try:
                answered += f.result(timeout=60).status == 200
            except OSError:
                pass  # the connection closed without an answer: expected
    s.reader.join(timeout=30)
    assert code == 1, (code, s.stderr_lines)
    line = next((l for l in s.stderr_lines if "second signal: stopping now" in l), None)
    assert line is not None, s.stderr_lines
    dropped = int(re.search(r"(\d+) queued inputs are dropped", line).group(1))
    # Only the inputs of the batches run before the second signal were answered.
    assert dropped > 0 and answered < n, (line, answered)
    assert not any("every accepted request was answered" in l for l in s.stderr_lines)


def test_tokenize_is_refused_while_draining(serve):
    per, reqs = 32, 5  # 160 inputs in each of 6 buckets: the drain lasts while the test asks
    s = serve_with_a_batch_per_bucket(serve)
    with ThreadPoolExecutor(len(BUCKET_LENGTHS) * reqs) as pool:
        held = queue_in_every_bucket(s, pool, per, reqs)
        s.proc.send_signal(signal.SIGTERM)
        s.wait_for(lambda: s.get("/v2/health/ready").status == 503, what="draining")
        r = s.post("/tokenize", {"inputs": "hello"})
        assert r.status == 503 and "draining" in r.json()["error"], r.body
        assert all(f.result(timeout=120).status == 200 for f in held)
    assert s.proc.wait(timeout=60) == 0


def test_info_names_the_model_without_its_path(serve, tmp_path):
    s = serve("--threads", "1")
    info = s.get("/info")
    assert "/" not in info.json()["model_id"], info.json()
    assert info.json()["model_id"]
    assert b"/work" not in info.body and b"/tmp" not in info.body and b"/home" not in info.body, info.body



# ------------------------------------------------------------------ framing


def raw_exchange(port: int, data: bytes, timeout: float = 10) -> bytes:
    """Sends `data` on one connection and reads until the server closes it (or times out)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as c:
        c.sendall(data)
        out = b""
        try:
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                out += chunk
        except socket.timeout:
            pass
        return out


def statuses(reply: bytes) -> list[int]:
    return [int(m) for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", reply)]


@pytest.mark.parametrize("head, code", [
    # The body's end is unknown: what follows must never be read as the next request.
    (b"POST /embed HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
    (b"POST /embed HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 400),
    (b"POST /embed HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
    (b"POST /embed HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
    (b"POST /embed HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \r\nContent-Length: 2\r\n\r\n{}", 400),
    (b"POST /embed HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 400),  # HTTP/1.1 needs a Host
    (b"BREW /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 501),
    (b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    (b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (64 << 10) + b"\r\n\r\n", 431),
], ids=["te-gzip", "te-chunked-not-last", "te-gzip-chunked", "te-two-lines", "te-empty", "no-host", "unknown-method",
        "http2-version", "huge-header"])
def test_a_request_framed_badly_is_refused_and_its_connection_closed(serve, head, code):
    s = serve("--threads", "1")
    smuggled = b"GET /info HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    reply = raw_exchange(s.port, head + smuggled)
    assert statuses(reply) == [code], reply[:300]  # and /info behind it is never answered
    assert b"Connection: close" in reply or b"connection: close" in reply.lower()
    assert health_answers(s)


def test_a_refused_request_read_whole_keeps_its_connection_for_the_next(serve):
    # A validation error (OpenAI answers it 400) once closed the connection, and a
    # pipelined request behind it went unanswered.
    s = serve("--threads", "1", "--model-name", "m")
    bad = json.dumps({"input": "hello", "model": "m", "dimensions": 64}).encode()
    good = json.dumps({"input": "hello", "model": "m"}).encode()

    def post(path: bytes, body: bytes, last: bool = False) -> bytes:
        return (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + (b"Connection: close\r\n" if last else b"") + b"Content-Length: " + str(len(body)).encode()
                + b"\r\n\r\n" + body)

    reply = raw_exchange(s.port, post(b"/v1/embeddings", bad) + post(b"/embed", b'{"inputs": []}')
                         + post(b"/v1/embeddings", good, last=True), timeout=60)
    assert statuses(reply) == [400, 422, 200], reply[:600]
    gz = b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"
    reply = raw_exchange(s.port, gz)
    assert statuses(reply) == [415] and b"Content-Encoding gzip is not supported" in reply, reply[:300]
    two = gz.replace(b"Content-Encoding: gzip\r\n", b"Content-Encoding: Identity\r\nContent-Encoding: br\r\n")
    reply = raw_exchange(s.port, two)  # every line is read, identity in any case passes
    assert statuses(reply) == [415] and b"Content-Encoding br is not supported" in reply, reply[:300]


def test_json_nested_past_any_request_is_refused_before_it_is_built(serve):
    # 4 MB of '[' once built a tree of ~90 bytes a byte (several at once took 1.2 GB).
    s = serve("--threads", "1", "--model-name", "m", "--max-body-bytes", str(16 << 20))
    deep = b'{"inputs":' + b"[" * (4 << 20) + b"]" * (4 << 20) + b"}"
    for path in ("/embed", "/v1/embeddings", "/v2/models/m/infer", "/tokenize"):
        r = s.request("POST", path, body=deep, headers={"Content-Type": "application/json"}, timeout=60)
        assert r.status in (400, 422) and "nests deeper than 32 levels" in r.body.decode(), (path, r.body[:200])
    assert s.post("/embed", {"inputs": "hello"}).status == 200
    # 32 levels are taken (and judged by the API); 33 are not. A bracket inside a string is text.
    for levels, refused in ((32, False), (33, True)):
        body = '{"inputs": "[[[[", "x":' + "[" * (levels - 1) + "]" * (levels - 1) + "}"
        r = s.request("POST", "/embed", body=body)
        assert ("nests deeper than 32 levels" in r.body.decode()) == refused, (levels, r.body[:200])
    assert health_answers(s)


def test_a_client_gone_mid_body_is_its_endpoints_499_and_grpc_calls_are_timed(serve):
    # It was counted as {endpoint="other",code="400"}: the server refusing a bad request.
    grpcclient = pytest.importorskip("tritonclient.grpc")
    from test_clients import grpc_port

    s = serve("--threads", "1", "--model-name", "tiny", "--grpc-port", "0")
    with socket.create_connection(("127.0.0.1", s.port), timeout=10) as c:
        c.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                  b'{"inputs":')
        time.sleep(0.2)
    s.wait_for(lambda: 'endpoint="/embed",code="499"' in s.get("/metrics").body.decode(), timeout=10,
               what="the abandoned upload to be counted")
    assert 'endpoint="other",code="400"' not in s.get("/metrics").body.decode()
    before = s.metric("tierscope_request_seconds_count")
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port(s)}")
    t = grpcclient.InferInput("input_ids", [1, 3], "INT64")
    t.set_data_from_numpy(np.array([[101, 2000, 102]], dtype=np.int64))
    client.infer("tiny", [t])
    with pytest.raises(grpcclient.InferenceServerException):
        client.infer("nosuch", [t])
    # Both gRPC calls are in the latency histogram as in the request count (the /metrics GET
    # that read `before` is in it too).
    assert s.metric("tierscope_request_seconds_count") >= before + 3
    text = s.get("/metrics").body.decode()
    assert 'endpoint="grpc:ModelInfer",code="200"' in text and 'endpoint="grpc:ModelInfer",code="404"' in text
