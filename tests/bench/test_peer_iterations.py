"""bench/peers/peers.py's calls per timed round: --iterations where that many batches fit in
--seconds, else as many as fit (never below 3, nor above --iterations), from one
calibrating batch-fp32 iteration; the same count then holds for every peer of the model
(serial peers time half of it, at least 3)."""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "peers"))
import peers  # noqa: E402


def args(iterations=10, seconds=8.0):
    return argparse.Namespace(iterations=iterations, seconds=seconds, batch_size=64, threads=2, seq_len=128)


def calibrated(monkeypatch, samples_per_s, a):
    calls = []

    def fake(binary, model, mode, ns, engine="native"):
        calls.append((mode, ns.iterations))
        return {"samples_per_s": samples_per_s}

    monkeypatch.setattr(peers, "tierscope_bench", fake)
    its, batch_s = peers.model_iterations("tierscope", "model", a)
    assert calls == [("batch-fp32", 1)]  # one calibrating iteration, of the reference mode
    return its, batch_s


def test_a_fast_model_keeps_the_requested_iterations(monkeypatch):
    its, batch_s = calibrated(monkeypatch, 500.0, args())  # 0.128 s a batch: 10 take 1.3 s
    assert its == 10 and abs(batch_s - 0.128) < 1e-9


def test_a_slow_model_times_just_enough_calls_to_fill_the_seconds(monkeypatch):
    its, _ = calibrated(monkeypatch, 32.0, args())  # 2 s a batch: 4 fill 8 s
    assert its == 4
    its, _ = calibrated(monkeypatch, 25.6, args())  # 2.5 s a batch: 3 fit in 8 s, not 4
    assert its == 3
    its, _ = calibrated(monkeypatch, 40.0, args())  # 1.6 s a batch: 5 fill 8 s
    assert its == 5


def test_a_very_slow_model_still_times_three_calls(monkeypatch):
    its, _ = calibrated(monkeypatch, 2.0, args())  # 32 s a batch
    assert its == 3


def test_fewer_requested_iterations_than_the_minimum_are_kept(monkeypatch):
    its, _ = calibrated(monkeypatch, 2.0, args(iterations=2))
    assert its == 2


def test_a_calibration_that_measured_nothing_stops_the_run(monkeypatch):
    for bad in (0.0, float("nan"), None):
        monkeypatch.setattr(peers, "tierscope_bench", lambda *x, **k: {"samples_per_s": bad})
        try:
            peers.model_iterations("tierscope", "model", args())
        except SystemExit as e:
            assert "calibrating batch-fp32 run reported" in str(e)
        else:
            raise AssertionError(f"{bad!r} samples/s went unnoticed")


def test_serial_peers_time_half_the_calls_but_never_fewer_than_three():
    assert peers.serial_iterations(args(iterations=10)) == 5
    assert peers.serial_iterations(args(iterations=5)) == 3
    assert peers.serial_iterations(args(iterations=3)) == 3
    assert peers.serial_iterations(args(iterations=2)) == 2
