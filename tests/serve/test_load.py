"""`tierscope load` and the wrk script against a live `tierscope serve` on loopback."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def load(tierscope_bin, url, tmp_path, *args, check=True):
    out = tmp_path / "report.json"
    proc = subprocess.run([str(tierscope_bin), "load", "--url", url, "--json", str(out), *args],
                          capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def url(server):
    return f"http://127.0.0.1:{server.port}"


def test_closed_loop_reports_latency_errors_and_server_batches(serve, tierscope_bin, tmp_path):
    s = serve("--threads", "1", "--max-queue-delay-ms", "5")
    proc, r = load(tierscope_bin, url(s), tmp_path, "--mode", "closed", "--concurrency", "8",
                   "--duration", "1.5", "--lengths", "uniform:8-40", "--inputs-per-request", "2")
    assert r["ok"] > 20 and all(v == 0 for v in r["errors"].values())
    lat = r["latency_ms"]
    assert 0 < lat["p50"] <= lat["p90"] <= lat["p95"] <= lat["p99"] <= lat["max"]
    assert r["throughput_rps"] > 0 and r["inputs_per_s"] == pytest.approx(2 * r["throughput_rps"], rel=0.01)
    sb = r["server_batches"]
    assert sb["count"] >= 1 and sb["mean_size"] > 1  # eight clients, two inputs each: batched
    assert sum(sb["histogram"].values()) == sb["count"]
    # The server's own count of answered requests agrees with the client's.
    assert s.metric("tierscope_batch_size_sum") >= 2 * r["ok"]
    assert "p99" in proc.stdout and "mean size" in proc.stdout


def test_open_loop_offers_the_rate_and_counts_429s(serve, tierscope_bin, tmp_path):
    s = serve("--threads", "1", "--max-queue", "2", "--max-queue-delay-ms", "300",
              "--max-batch-size", "64")
    _, r = load(tierscope_bin, url(s), tmp_path, "--mode", "open", "--rate", "200",
                "--duration", "2", "--lengths", "fixed:16", "--timeout", "10")
    assert 100 < r["offered_rps"] < 300
    assert r["errors"].get("429", 0) > 0  # the queue holds two inputs: most are refused
    assert r["ok"] > 0 and r["issued"] == r["ok"] + sum(r["errors"].values())


def test_infer_endpoint_uses_the_servers_model_name(serve, tierscope_bin, tmp_path):
    s = serve("--threads", "1", "--model-name", "tiny")
    _, r = load(tierscope_bin, url(s), tmp_path, "--endpoint", "infer", "--mode", "closed",
                "--concurrency", "2", "--duration", "1", "--lengths", "choice:8,16")
    assert r["ok"] > 0 and all(v == 0 for v in r["errors"].values())
    assert 'endpoint="/v2/models/{name}/infer",code="200"' in s.get("/metrics").body.decode()


def test_unreachable_server_gives_a_report_and_exit_1(tierscope_bin, tmp_path):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc, r = load(tierscope_bin, f"http://127.0.0.1:{port}", tmp_path, "--mode", "closed",
                   "--concurrency", "2", "--duration", "0.5", check=False)
    assert proc.returncode == 1 and "no request succeeded" in proc.stderr
    assert r["ok"] == 0 and r["errors"]["connect"] > 0 and r["server_batches"] is None


@pytest.mark.parametrize("args,fragment", [
    (["--url", "http://10.1.2.3:8080"], "not a loopback"),
    (["--url", "https://127.0.0.1:8080"], "https"),
    (["--rate", "0"], "--rate"),
    (["--lengths", "fixed:2"], "--lengths"),
])
def test_bad_options_exit_2_naming_the_option(tierscope_bin, args, fragment):
    proc = subprocess.run([str(tierscope_bin), "load", "--duration", "1", *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and fragment in proc.stderr, proc.stderr


def test_wrk_script_posts_embed_without_errors(serve, tmp_path):
    wrk = shutil.which("wrk")
    if wrk is None:
        pytest.skip("wrk is not installed (scripts/setup.sh installs it)")
    s = serve("--threads", "1")
    proc = subprocess.run([wrk, "-t1", "-c4", "-d1s", "-s", str(REPO / "bench/serve/embed.lua"),
                           url(s), "--", "30"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "non-200 responses 0" in proc.stdout, proc.stdout
    assert s.metric("tierscope_batch_size_count") > 0
