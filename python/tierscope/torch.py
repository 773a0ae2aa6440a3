"""The study on your own model, from a notebook: tierscope's lab through PyTorch.

    from tierscope.torch import study
    summary, report = study("path/to/hf-model", device="cuda", quick=True)
    summary["headline"]["final_samples_per_s"], report      # report.html's path

It runs `tierscope lab --engine torch` with this Python (so the torch and transformers
installed here run the model) and returns summary.json as a dict and the report's path.
The `tierscope` command comes from `binary=`, else $TIERSCOPE_BIN, else PATH. The lab's
progress lines go to stderr as they come; a failure raises RuntimeError with the lab's
one-line error.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional, Tuple, Union

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["study"]


def _binary(binary: Optional[PathLike]) -> str:
    exe = str(binary) if binary else os.environ.get("TIERSCOPE_BIN") or shutil.which("tierscope")
    if not exe or not os.access(exe, os.X_OK):
        raise FileNotFoundError(f"the tierscope command was not found ({exe or 'not on PATH'}): build it "
                                "(bash scripts/build.sh) and pass binary=, set TIERSCOPE_BIN or put it on PATH")
    return exe


def study(model_dir: Optional[PathLike] = None, device: str = "cpu", out: Optional[PathLike] = None,
          quick: bool = False, threads: int = 0, batch_size: int = 64, seq_len: int = 128,
          binary: Optional[PathLike] = None, timeout: float = 1800) -> Tuple[dict, Path]:
    """Runs the whole study on `model_dir` (None: the built-in model) on `device` and
    returns (summary, report path). `out`: the results directory (default: a new
    temporary one). `timeout`: seconds one run (or one profiler's run) may take before it
    is stopped (0: no limit)."""
    out_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="tierscope-study-"))
    cmd = [_binary(binary), "lab", "--engine", "torch", "--python", sys.executable, "--device", device,
           "--out", str(out_dir), "--threads", str(threads), "--batch-size", str(batch_size), "--seq-len",
           str(seq_len), "--timeout", str(timeout)]
    if model_dir is not None:
        cmd += ["--model", str(model_dir)]
    if quick:
        cmd.append("--quick")
    last = ""
    # Its own session: an interrupt in the notebook stops the lab and what it started
    # (the PyTorch worker, a profiler), instead of waiting for the whole study.
    with subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, start_new_session=True) as proc:
        assert proc.stderr is not None
        try:
            for line in proc.stderr:
                sys.stderr.write(line)
                last = line.strip() or last
        except BaseException:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            raise
    if proc.returncode != 0:
        raise RuntimeError(last.removeprefix("tierscope: error: ") or f"tierscope lab exited with {proc.returncode}")
    summary = json.loads((out_dir / "summary.json").read_text())
    return summary, out_dir / "report.html"
