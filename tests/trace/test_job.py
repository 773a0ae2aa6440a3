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
    # One more try when the job itself fails to run (gloo's rendezvous port, picked free, can
    # be taken before the ranks bind it); a real failure fails twice.
    for _ in range(2):
        p = subprocess.run([sys.executable, str(HERE / "gloo_job.py"), str(out), str(world), str(slow_rank), "30"],
                           capture_output=True, text=True, timeout=300)
        if p.returncode == 0:
            break
    noise = ("USDT:", "gpuGetDeviceCount", "ActivityProfiler")
    assert p.returncode == 0, "\n".join(l for l in p.stderr.splitlines() if not any(n in l for n in noise))[-2000:]
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
        # About the 30 ms sleep; 3 ranks share 2 cores, so the others can lose part of it to
        # scheduling too (17.6 ms seen once) — still 100x the ~0.1 ms of unslowed ranks.
        assert r["Late max (ns)"] > 10e6
    stragglers = [f for f in out["findings"] if f["rule"] == "straggler"]
    assert len(stragglers) == 1 and "rank 1" in stragglers[0]["title"], out["findings"]
    assert "aligned by the ends of" in out["alignment"]
    text = analyze(tierscope_bin, "analyze", jobs[0])
    assert "Straggler: rank 1 reaches the collectives last" in text


def test_ranks_that_wait_alike_have_no_material_straggler(jobs, tierscope_bin):
    # Two ranks on one 2-core machine, neither slowed. Rank 1 often trails by ~0.1 ms at
    # every collective (process scheduling: a real, tiny lag that the permutation test may
    # call significant), but nothing like the 30 ms of a slowed rank: no straggler finding
    # may claim a millisecond of lateness per collective.
    out = json.loads(analyze(tierscope_bin, "analyze", jobs[2], "--format", "json"))
    reports = {r["name"]: r for r in out["reports"]}
    assert len(reports["straggler_collectives"]["rows"]) == 16  # 8 steps x (all_reduce, broadcast)
    for f in out["findings"]:
        if f["rule"] != "straggler":
            continue
        ranks = {r["Rank"]: r for r in reports["straggler_ranks"]["rows"]}
        worst = max(ranks.values(), key=lambda r: r["Late total (ns)"])
        assert worst["Late total (ns)"] / max(1, worst["Times last"]) < 1e6, f["evidence"]


def test_diff_of_two_jobs_shows_each_straggler(jobs, tierscope_bin):
    text = analyze(tierscope_bin, "diff", jobs[0], jobs[1])
    assert "stragglers (base): Straggler: rank 1" in text
    assert "stragglers (new): Straggler: rank 2" in text
    assert "== job_diff_ranks ==" in text
