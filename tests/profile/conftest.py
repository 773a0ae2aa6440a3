"""Fixtures for the trace-format suite: runs `tierscope bench --profile --trace` and parses
what it writes with nothing but Python's json/gzip modules.

The binary is build/release/tierscope (TIERSCOPE_BIN overrides it); a missing binary is a
failure, not a skip. TIERSCOPE_CACHE_DIR points at a session temp dir, so the built-in model
is generated fresh for the session and the user's cache is never read or written.
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

THREADS = 2
BATCH = 8
SEQ_LEN = 16
RUN_TIMEOUT_S = 120






def load_trace(path: Path) -> dict:
    """The whole trace document, read independently of tierscope (json, gzip for .json.gz)."""
    if str(path).endswith(".json.gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@dataclass
class BenchRun:
    """One `tierscope bench` invocation: its command, output and (if any) trace."""

    cmd: list
    proc: subprocess.CompletedProcess
    trace_path: Path | None
    result: dict = field(default_factory=dict)
    trace: dict | None = None

    @property
    def stdout(self) -> str:
        return self.proc.stdout

    @property
    def events(self) -> list:
        return self.trace["traceEvents"]

    def describe(self) -> str:
        return (f"cmd: {' '.join(self.cmd)}\n  rc: {self.proc.returncode}\n"
                f"  stderr: {self.proc.stderr.strip()[-2000:]}\n"
                f"  stdout tail: {self.proc.stdout.strip()[-2000:]}")


class BenchRunner:
    def __init__(self, binary: Path, workdir: Path, cache_dir: Path):
        self.binary = binary
        self.workdir = workdir
        self.cache_dir = cache_dir
        self._n = 0

    def run(self, mode: str, *, suffix=".json", batch=BATCH, seq_len=SEQ_LEN, warmup=1,
            iterations=3, extra=()) -> BenchRun:
        """Runs bench with --profile --trace; asserts rc 0 and a RESULT_JSON last line."""
        self._n += 1
        trace_path = self.workdir / f"run{self._n}_{mode}" / f"trace{suffix}"
        trace_path.parent.mkdir(parents=True)
        cmd = [str(self.binary), "bench", "--mode", mode, "--batch-size", str(batch),
               "--seq-len", str(seq_len), "--warmup", str(warmup), "--iterations",
               str(iterations), "--threads", str(THREADS), "--profile", "--trace",
               str(trace_path), *map(str, extra)]
        env = dict(os.environ)
        env["TIERSCOPE_CACHE_DIR"] = str(self.cache_dir)
        env["HF_HUB_OFFLINE"] = "1"
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                              env=env, cwd=self.workdir)
        run = BenchRun(cmd, proc, trace_path)
        assert proc.returncode == 0, f"tierscope bench failed\n  {run.describe()}"
        lines = proc.stdout.strip().splitlines()
        assert lines and lines[-1].startswith("RESULT_JSON="), (
            f"last stdout line is not RESULT_JSON=...\n  {run.describe()}")
        run.result = json.loads(lines[-1][len("RESULT_JSON="):])
        assert trace_path.is_file(), f"no trace written at {trace_path}\n  {run.describe()}"
        if suffix == ".json.gz":
            with open(trace_path, "rb") as f:
                assert f.read(2) == b"\x1f\x8b", f"{trace_path} is not gzip"
        run.trace = load_trace(trace_path)
        return run



@pytest.fixture(scope="session")
def bench(tierscope_bin, tmp_path_factory) -> BenchRunner:
    return BenchRunner(tierscope_bin, tmp_path_factory.mktemp("trace_runs"),
                       tmp_path_factory.mktemp("tierscope_cache"))


@pytest.fixture(scope="session")
def batch_run(bench) -> BenchRun:
    return bench.run("batch-fp32")


@pytest.fixture(scope="session")
def serial_run(bench) -> BenchRun:
    return bench.run("serial-fp32")


@pytest.fixture(scope="session")
def runs(batch_run, serial_run) -> dict:
    return {"batch-fp32": batch_run, "serial-fp32": serial_run}
