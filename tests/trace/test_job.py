"""`tierscope analyze DIR` on a job the test makes itself: 3 CPU ranks under
torch.distributed's gloo backend, one of them slow on purpose; the straggler report must
name it, with ranks numbered from each trace's distributedInfo. Then `tierscope diff` of
two such jobs whose slow rank differs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent


def make_job(out: Path, slow_rank: int, world: int = 3):
    p = subprocess.run([sys.executable, str(HERE / "gloo_job.py"), str(out), str(world), str(slow_rank), "30"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    files = sorted(out.glob("rank-*.json"))
    assert len(files) == world, files
    return out


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    base = tmp_path_factory.mktemp("jobs")
    return make_job(base / "slow1", 1), make_job(base / "slow2", 2), make_job(base / "even", 99, world=2)


def analyze(bin_path, *args):
    p = subprocess.run([str(bin_path), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_straggler_report_names_the_slow_rank(jobs, tierscope_bin):
    out = json.loads(analyze(tierscope_bin, "analyze", jobs[0], "--format", "json"))
    assert [r["rank"] for r in out["ranks"]] == [0, 1, 2]
    assert {r["rank_from"] for r in out["ranks"]} == {"distributedInfo"}
    assert {r["backend"] for r in out["ranks"]} == {"gloo"}
    reports = {r["name"]: r for r in out["reports"]}
    iterations = reports["stragglers"]["rows"]
    assert len(iterations) == 8  # the 8 active steps
    assert [r["Last rank"] for r in iterations] == [1] * 8
    for r in iterations:
        assert r["Late max (ns)"] > 20e6  # about the 30 ms sleep
    stragglers = [f for f in out["findings"] if f["rule"] == "straggler"]
    assert len(stragglers) == 1 and "rank 1" in stragglers[0]["title"], out["findings"]
    assert "aligned by the ends of" in out["alignment"]
    text = analyze(tierscope_bin, "analyze", jobs[0])
    assert "Straggler: rank 1 reaches the collectives last" in text


def test_ranks_that_wait_alike_have_no_straggler(jobs, tierscope_bin):
    # Two ranks on one machine, neither slowed: one is last more often by scheduling noise,
    # which is not a straggler.
    out = json.loads(analyze(tierscope_bin, "analyze", jobs[2], "--format", "json"))
    assert [f for f in out["findings"] if f["rule"] == "straggler"] == []
    reports = {r["name"]: r for r in out["reports"]}
    assert len(reports["straggler_collectives"]["rows"]) == 16  # 8 steps x (all_reduce, broadcast)


def test_diff_of_two_jobs_shows_each_straggler(jobs, tierscope_bin):
    text = analyze(tierscope_bin, "diff", jobs[0], jobs[1])
    assert "stragglers (base): Straggler: rank 1" in text
    assert "stragglers (new): Straggler: rank 2" in text
    assert "== job_diff_ranks ==" in text
