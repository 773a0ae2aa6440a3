"""bench/serve/serve_bench.py's padding bound: the mix's FLOPs padded to bucket edges over
its FLOPs packed, by the binary's own FLOP count, read into what the measured packed /
buckets ratio says of the packed path's efficiency per FLOP; a mix it cannot read, or one
past the largest edge, stops the run naming it."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "serve"))
import serve_bench  # noqa: E402


def flops_of(binary, n):
    out = subprocess.run([str(binary), "bench", "--batch-size", "1", "--seq-len", str(n), "--iterations", "1",
                          "--warmup", "0"], check=True, capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("RESULT_JSON="))
    return json.loads(line[len("RESULT_JSON="):])["flops_per_sample"]


def test_bound_is_the_padded_flops_over_the_packed_by_the_binarys_count(tierscope_bin):
    bound = serve_bench.padding_bound(str(tierscope_bin), "choice:8,20,20,64", [16, 32, 64])
    f = {n: flops_of(tierscope_bin, n) for n in (8, 16, 20, 32, 64)}
    expected = (f[16] + 2 * f[32] + f[64]) / (f[8] + 2 * f[20] + f[64])
    assert bound["flop_ratio"] == pytest.approx(expected, rel=1e-12)
    assert bound["flop_ratio"] > 1.0
    assert bound["padded_token_share"] == pytest.approx(1 - 112 / 144)


def test_lengths_on_the_edges_leave_nothing_to_save(tierscope_bin):
    bound = serve_bench.padding_bound(str(tierscope_bin), "choice:16,32", [16, 32, 64])
    assert bound == {"flop_ratio": 1.0, "padded_token_share": 0.0}


def test_the_goal_lines_read_the_measured_ratio_against_the_bound():
    rows = [{"run": "buckets, mix, closed loop x128", "throughput_rps": 1000.0, "errors": {}, "p99_ms": 90.0},
            {"run": "packed, mix, closed loop x128", "throughput_rps": 1300.0, "errors": {}, "p99_ms": 50.0}]
    lines = serve_bench.mix_goals(rows, {"flop_ratio": 1.2, "padded_token_share": 0.15})
    assert lines[0].startswith("packed / buckets closed-loop capacity: 1.30")
    assert "NOT met (87% of the capacity goal)" in lines[0]
    assert "at most 1.20x" in lines[1] and "needs the packed path at least 1.25x faster per FLOP" in lines[1]
    # Bucketed batches pad to their longest input, at most the edge: between 1x and the bound.
    assert "per FLOP the packed path ran between 1.08x and 1.30x as fast" in lines[2]


def test_without_closed_loop_runs_the_bound_is_stated_and_nothing_is_read_into_it():
    lines = serve_bench.mix_goals([], {"flop_ratio": 1.6, "padded_token_share": 0.3})
    assert lines[0].endswith("n/a (a closed-loop run is missing or served nothing)")
    assert "at most 1.60x" in lines[1] and "needs the packed path" not in lines[1]
    assert len(lines) == 2


@pytest.mark.parametrize("spec, lengths", [("fixed:8", [8]), ("uniform:3-5", [3, 4, 5]),
                                           ("choice:8,8,12", [8, 8, 12])])
def test_a_mix_reads_as_tierscope_load_draws_it(spec, lengths):
    assert serve_bench.mix_lengths(spec) == lengths


@pytest.mark.parametrize("spec, why", [("choice:x", "'x' is not a whole number"), ("foo:3", "unknown kind"),
                                       ("uniform:5", "uniform needs A-B"), ("uniform:8-4", "A <= B"),
                                       ("choice:", "choice needs lengths"), ("choice:8,,9", "'' is not"),
                                       ("fixed:+8", "'+8' is not"), ("uniform: 3-5", "' 3' is not"),
                                       ("choice:2,8", "length 2 is below 3")])
def test_a_mix_it_cannot_read_stops_naming_it(spec, why):
    with pytest.raises(SystemExit) as e:
        serve_bench.mix_lengths(spec)
    assert f"--mix {spec}:" in str(e.value) and why in str(e.value)


def test_bucket_edges_read_as_tierscope_serve_takes_them():
    assert serve_bench.bucket_edges("16,32,64") == [16, 32, 64]
    for spec, why in (("16,,32", "whole numbers"), ("32,16", "increasing"), ("16,16", "increasing"),
                      ("0,16", "positive"), ("a", "whole numbers")):
        with pytest.raises(SystemExit) as e:
            serve_bench.bucket_edges(spec)
        assert f"--buckets {spec}:" in str(e.value) and why in str(e.value)


def test_a_length_past_the_largest_edge_stops_naming_it():
    with pytest.raises(SystemExit) as e:  # before any binary runs
        serve_bench.padding_bound("/nonexistent/tierscope", "choice:8,600", [16, 512])
    assert "600 tokens is past the largest bucket edge (512)" in str(e.value)


def test_capacities_alternate_and_each_keeps_its_best(monkeypatch, tmp_path):
    import argparse
    calls, opened = [], []
    speed = {("buckets", 0): 2400.0, ("packed", 0): 3300.0, ("buckets", 1): 2800.0, ("packed", 1): 3200.0}

    def fake_closed(a, out, server_args, tag, lengths):
        batching = server_args[server_args.index("--batching") + 1]
        rnd = sum(1 for c in calls if c == batching)
        calls.append(batching)
        return {"throughput_rps": speed[(batching, rnd)], "tag": tag}

    def fake_open(a, out, server_args, tag, name, lengths, base, base_name, closed=None, closed_name=""):
        opened.append((name, base, closed["throughput_rps"], closed_name))
        return [{"run": f"{name}, closed loop x128{closed_name}", "throughput_rps": closed["throughput_rps"]}], base

    monkeypatch.setattr(serve_bench, "closed_loop", fake_closed)
    monkeypatch.setattr(serve_bench, "closed_and_open", fake_open)
    a = argparse.Namespace(batch=64, buckets="16,32", mix="choice:8", mix_rounds=2)
    rows = serve_bench.packed_vs_buckets(a, tmp_path)
    # Alternated, a slow minute for the first bucketed run does not set the capacity.
    assert calls == ["buckets", "packed", "buckets", "packed"]
    assert opened == [("buckets, mix", 2800.0, 2800.0, ", best of 2 alternated"),
                      ("packed, mix", 2800.0, 3300.0, ", best of 2 alternated")]
    assert [r["throughput_rps"] for r in rows] == [2800.0, 3300.0]
