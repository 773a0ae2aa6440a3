"""PyTorch execution traces (Chakra ET JSON) joined to their Kineto trace (issue 29), on the
corpus's real pair (HTA's test data): `analyze` finds the execution trace beside the trace,
or takes it as a second input, and joins exactly the operators Python's json joins by
record id and name (HTA's correlate_execution_trace, plus the name check); the joined
operators gain their shapes, so the roofline can read them; an execution trace alone, or of
another run, is a one-line error when named (a note when found beside the trace), never a
silent empty result. The Python
package reads the same."""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIR = REPO.parent / "shared" / "corpus" / "traces" / "vendors" / "execution_trace"
ET = DIR / "execution_trace__benchmark_simple_add_et.json.gz"
KINETO = DIR / "execution_trace__benchmark_simple_add_trace.json.gz"


@pytest.fixture(scope="module", autouse=True)
def corpus():
    if not ET.exists() or not KINETO.exists():
        pytest.fail(f"the execution-trace corpus is missing: {DIR}")


def run(tierscope_bin, *args):
    return subprocess.run([str(tierscope_bin), *map(str, args)], capture_output=True, text=True, timeout=120)


def import_stats(tierscope_bin, *paths):
    p = run(tierscope_bin, "analyze", *paths, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    rows = {r["Item"]: r["Count"] for r in doc["reports"][0]["rows"]}
    return rows, doc


def python_join():
    """(ops, joined) as HTA joins them: cpu_op and user_annotation events whose record id
    (Record function id, else External id) is a node's rf_id, with the node's name."""
    with gzip.open(ET, "rt") as f:
        nodes = {n["rf_id"]: n for n in json.load(f)["nodes"] if "execution_trace|" not in n["name"]}
    with gzip.open(KINETO, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    joined = 0
    for e in events:
        args = e.get("args", {})
        rid = args.get("Record function id", args.get("External id"))
        if rid in nodes and nodes[rid]["name"] == e["name"]:
            joined += 1
    return len(events), joined, len(nodes)


def joined_rows(rows):
    return {k: v for k, v in rows.items() if "execution trace" in k or "joined" in k or "given input" in k}


def test_the_execution_trace_beside_the_trace_is_joined_as_python_joins_it(tierscope_bin, tmp_path):
    ops, joined, nodes = python_join()
    assert joined > 0
    rows, _ = import_stats(tierscope_bin, KINETO)  # found beside it
    got = joined_rows(rows)
    assert got[f"execution trace nodes ({ET})"] == nodes, got
    assert got[f"  operators joined to a node by record id (of {ops})"] == joined, got
    assert got["  operators given input shapes and types from it"] == joined  # the trace has none of its own
    # Given as a second input, from another directory: the same join.
    shutil.copy(KINETO, tmp_path / KINETO.name)
    alone, _ = import_stats(tierscope_bin, tmp_path / KINETO.name)
    assert not joined_rows(alone)  # nothing beside it
    given, _ = import_stats(tierscope_bin, tmp_path / KINETO.name, ET)
    assert list(joined_rows(given).values()) == list(got.values())


def test_joined_shapes_reach_the_roofline(tierscope_bin, tmp_path):
    shutil.copy(KINETO, tmp_path / KINETO.name)
    def modelled(*paths):
        p = run(tierscope_bin, "stats", *paths[:1], "--report", "op_roofline", "--format", "json")
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["reports"][0]["rows"]
    def with_flops(rows):
        return [r["Name"] for r in rows if isinstance(r["GFLOP"], (int, float))]
    assert with_flops(modelled(tmp_path / KINETO.name)) == []  # no shapes: nothing to model
    assert with_flops(modelled(KINETO)) == ["aten::add"]  # the add of two 256x256 tensors


def test_an_execution_trace_alone_or_of_another_run_says_so(tierscope_bin, tmp_path):
    p = run(tierscope_bin, "analyze", ET)
    assert p.returncode != 0
    assert "a PyTorch execution trace (operators, not a timeline)" in p.stderr.splitlines()[0], p.stderr
    other = tmp_path / "other_et.json"
    with gzip.open(ET, "rt") as f:
        doc = json.load(f)
    doc["pid"] = doc["pid"] + 1
    other.write_text(json.dumps(doc))
    # Named, it is an error: the shapes asked for would be missing from every report.
    p = run(tierscope_bin, "analyze", KINETO, other)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "no execution trace joined" in p.stderr and "not the same run" in p.stderr, p.stderr
    missing = run(tierscope_bin, "analyze", tmp_path / "absent_et.json", KINETO)
    assert missing.returncode == 2 and "absent_et.json" in missing.stderr, missing.stderr
    # Found beside the trace, it is a note, and the trace is analysed without it.
    beside = tmp_path / "beside"
    beside.mkdir()
    shutil.copy(KINETO, beside / KINETO.name)
    shutil.copy(other, beside / other.name)
    rows, doc = import_stats(tierscope_bin, beside / KINETO.name)
    assert not joined_rows(rows)
    notes = doc["reports"][0].get("notes", [])
    assert any("no execution trace joined" in n and "not the same run" in n for n in notes), notes


def test_shapes_that_are_not_lists_are_left_out_and_said_never_counted_as_given(tierscope_bin, tmp_path):
    # Strings for shapes were once "given" to 36 operators whose Input Shapes then read "-".
    with gzip.open(ET, "rt") as f:
        doc = json.load(f)
    for node in doc["nodes"]:
        if "input_shapes" in node:
            node["input_shapes"] = "oops"
        elif isinstance(node.get("inputs"), dict) and "shapes" in node["inputs"]:
            node["inputs"]["shapes"] = "oops"
    bad = tmp_path / "bad_et.json"
    bad.write_text(json.dumps(doc))
    rows, out = import_stats(tierscope_bin, KINETO, bad)
    given = [v for k, v in rows.items() if "given input shapes" in k]
    assert given == [0], rows
    notes = out["reports"][0].get("notes", [])
    assert any(n.endswith("nodes have input shapes or types that are not lists: their operators were given none")
               for n in notes), notes


def test_the_python_package_joins_the_same(tmp_path):
    tierscope = pytest.importorskip("tierscope")
    _, joined, nodes = python_join()
    beside = tierscope.read_trace(KINETO).execution_trace
    assert (beside["source"], beside["nodes"], beside["joined"]) == (str(ET), nodes, joined)
    shutil.copy(KINETO, tmp_path / KINETO.name)
    assert tierscope.read_trace(tmp_path / KINETO.name).execution_trace["source"] == ""
    given = tierscope.read_trace(tmp_path / KINETO.name, execution_trace=ET).execution_trace
    assert given["joined"] == joined and given["shapes_added"] == joined
    with pytest.raises(FileNotFoundError, match="absent_et.json"):  # named and missing: never only a note
        tierscope.read_trace(tmp_path / KINETO.name, execution_trace=tmp_path / "absent_et.json")
