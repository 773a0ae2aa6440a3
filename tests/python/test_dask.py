"""tierscope.dask.analyze_job on a LocalCluster of 2 worker processes on loopback: the
corpus pair and a 4-rank job tiled from it give the CLI's reports and findings exactly
(only the "read" line differs: Dask's workers, not the CLI's threads); a bad rank raises
with its file named; the caller's own Client is used as given."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

tierscope = pytest.importorskip("tierscope")
pytest.importorskip("dask.distributed")
from dask.distributed import Client, LocalCluster  # noqa: E402

from tierscope.dask import analyze_job  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIELD = REPO.parent / "shared" / "corpus" / "traces" / "field"
PAIR = [FIELD / f"hta__trace_filter__sampled_rank-{r}.json.gz" for r in (0, 1)]


@pytest.fixture(scope="module")
def client():
    for p in PAIR:
        if not p.exists():
            pytest.skip(f"corpus file missing: {p}")
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def cli(bin_path, *paths):
    p = subprocess.run([str(bin_path), "analyze", *map(str, paths), "--format", "json"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def same_job(job, doc):
    assert job["read"] == {"in_flight": 2, "why": "Dask: 2 workers"}
    assert job["ranks"] == doc["ranks"]
    assert job["findings"] == doc["findings"]
    assert job["alignment"] == doc["alignment"]
    assert list(job["reports"]) == [r["name"] for r in doc["reports"]]
    for r in doc["reports"]:
        frame = job["reports"][r["name"]]
        assert list(frame.columns) == r["columns"]
        got = frame.to_dict(orient="records")
        assert len(got) == len(r["rows"]), r["name"]
        for a, b in zip(got, r["rows"]):
            for c in r["columns"]:
                if isinstance(b.get(c), float):
                    assert a[c] == pytest.approx(b[c], rel=1e-12), (r["name"], c)
                else:
                    assert a[c] == b.get(c), (r["name"], c)


def test_the_corpus_pair_equals_the_cli(client, tierscope_bin):
    same_job(analyze_job(PAIR, client=client), cli(tierscope_bin, *PAIR))


def test_a_four_rank_job_equals_the_cli(client, tierscope_bin, tmp_path):
    out = tmp_path / "job"
    p = subprocess.run([sys.executable, str(REPO / "bench" / "job" / "make_job.py"), str(out), "4", "4", "2",
                        str(PAIR[0])], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    job = analyze_job(out, client=client)
    same_job(job, cli(tierscope_bin, out))
    assert [r["rank"] for r in job["ranks"]] == [0, 1, 2, 3]
    assert any(f["rule"] == "straggler" and "rank 2" in f["title"] for f in job["findings"])


def test_relative_paths_reach_workers_whose_directory_differs(client, tierscope_bin, tmp_path, monkeypatch):
    job = tmp_path / "job"
    job.mkdir()
    for p in PAIR:
        (job / p.name).symlink_to(p)
    monkeypatch.chdir(tmp_path)  # the workers started elsewhere
    same_job(analyze_job("job", client=client), cli(tierscope_bin, job))


def test_a_bad_rank_raises_naming_its_file(client, tmp_path):
    shutil.copy(PAIR[0], tmp_path / "rank-0.json.gz")
    (tmp_path / "rank-1.json").write_text('{"traceEvents": [{"ph": "X",')
    with pytest.raises(ValueError, match="rank-1.json"):
        analyze_job(tmp_path, client=client)
