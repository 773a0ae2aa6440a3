"""bench/peers/peers.py's no-cliff sweep: every size runs three times, up, down and up
again, and keeps its best run (drift between minutes is not a cliff); a size that failed in
any run is n/a (a failure is not drift)."""
import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "peers"))
import peers  # noqa: E402


def sweep_args():
    return argparse.Namespace(cliff_batches="16,64,256", iterations=10, batch_size=64, threads=2, seq_len=128)


def test_each_size_runs_up_then_down_and_keeps_its_better_run(monkeypatch):
    calls = []
    # The second pass runs in a slow minute for 16 and a fast one for 256; the third is
    # fastest for 64 only.
    speed = {("batch-fp32", 16): [1000.0, 700.0, 800.0], ("batch-fp32", 64): [900.0, 950.0, 990.0],
             ("batch-fp32", 256): [600.0, 980.0, 700.0]}

    def fake(binary, model, mode, a, engine="native"):
        calls.append((mode, a.batch_size, a.iterations))
        runs = speed.get((mode, a.batch_size), [2000.0, 2000.0, 2000.0])
        return {"samples_per_s": runs[sum(1 for c in calls if c[:2] == (mode, a.batch_size)) - 1]}

    monkeypatch.setattr(peers, "tierscope_bench", fake)
    out = peers.cliff("tierscope", "model", sweep_args())
    assert [c[1] for c in calls if c[0] == "batch-fp32"] == [16, 64, 256, 256, 64, 16, 16, 64, 256]
    assert out["batch-fp32"] == {16: 1000.0, 64: 990.0, 256: 980.0}
    assert out["batch-int8"] == {16: 2000.0, 64: 2000.0, 256: 2000.0}
    # Iterations scaled so each size times about as many samples: 640 / batch, at least 2.
    assert {c[1]: c[2] for c in calls} == {16: 40, 64: 10, 256: 2}


def test_a_size_that_failed_in_any_run_is_n_a(monkeypatch):
    seen = {}

    def fake(binary, model, mode, a, engine="native"):
        seen[a.batch_size] = seen.get(a.batch_size, 0) + 1
        if mode == "batch-int8" and a.batch_size == 64 and seen[a.batch_size] == 5:  # its second int8 run
            raise subprocess.CalledProcessError(1, "tierscope", stderr="out of memory")
        return {"samples_per_s": 1000.0}

    monkeypatch.setattr(peers, "tierscope_bench", fake)
    out = peers.cliff("tierscope", "model", sweep_args())
    assert out["batch-fp32"][64] == 1000.0
    assert out["batch-int8"][64] != out["batch-int8"][64]  # NaN
    assert out["batch-int8"][16] == 1000.0
