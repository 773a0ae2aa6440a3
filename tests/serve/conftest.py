"""Starts `tierscope serve` on a free loopback port for the HTTP end-to-end tests."""
from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

import pytest


@dataclass
class Reply:
    status: int
    headers: dict
    body: bytes

    def json(self):
        return json.loads(self.body)


@dataclass
class Server:
    proc: subprocess.Popen
    port: int
    stderr_lines: list = field(default_factory=list)
    reader: threading.Thread | None = None  # collects stderr_lines

    def request(self, method: str, path: str, body=None, headers=None, timeout: float = 60) -> Reply:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = body if body is None or isinstance(body, (bytes, str)) else json.dumps(body)
            h = {"Content-Type": "application/json"} if data is not None else {}
            h.update(headers or {})
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            return Reply(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            conn.close()

    def get(self, path: str) -> Reply:
        return self.request("GET", path)

    def post(self, path: str, body) -> Reply:
        return self.request("POST", path, body)

    def metric(self, name: str) -> float:
        """The value of an unlabelled metric line, or the sum of its labelled ones."""
        text = self.get("/metrics").body.decode()
        total, found = 0.0, False
        for line in text.splitlines():
            m = re.match(rf"^{re.escape(name)}(\{{[^}}]*\}})? (\S+)$", line)
            if m:
                total += float(m.group(2))
                found = True
        assert found, f"{name} not in /metrics"
        return total

    def wait_for(self, predicate, timeout: float = 20, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what}")

    def model_dir(self) -> str:
        """The model directory, from the server's own log line (clients' /info names the
        model, not where it lies on the server's disk)."""
        pattern = re.compile(r"^tierscope serve: model .* \((/.*)\), ")
        self.wait_for(lambda: any(pattern.match(l) for l in self.stderr_lines), what="the model line")
        return next(pattern.match(l).group(1) for l in self.stderr_lines if pattern.match(l))

    def stop(self, sig=signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout=timeout)
        if self.reader is not None:
            self.reader.join(timeout=timeout)  # every line the server wrote is in stderr_lines
        return code


def start_server(tierscope_bin, *args, preexec_fn=None) -> Server:
    """`preexec_fn` runs in the child before exec (e.g. to lower its RLIMIT_NOFILE)."""
    proc = subprocess.Popen([str(tierscope_bin), "serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
    line = proc.stdout.readline()
    m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
    if not m:
        proc.kill()
        out, err = proc.communicate(timeout=30)
        raise AssertionError(f"tierscope serve did not start: {line}{out}{err}")
    server = Server(proc, int(m.group(1)))

    def drain_stderr():
        for l in proc.stderr:
            server.stderr_lines.append(l)

    server.reader = threading.Thread(target=drain_stderr, daemon=True)
    server.reader.start()
    return server


@pytest.fixture
def serve(tierscope_bin):
    """A factory: serve(*flags) starts a server; every one started is stopped afterwards."""
    started = []

    def make(*args, preexec_fn=None) -> Server:
        s = start_server(tierscope_bin, *args, preexec_fn=preexec_fn)
        started.append(s)
        return s

    yield make
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait(timeout=30)
