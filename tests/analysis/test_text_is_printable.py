"""What a trace names (its device, a kernel, a unit) reaches the terminal as printable
text: a name holding a terminal's escape sequence or a newline is shown with spaces in their
place, in the header, the tables and their notes, never sent to the terminal as control
characters; JSON keeps the name as written."""
from __future__ import annotations

import json
import subprocess

from test_outputs_keep_inputs import TRACE

EVIL = "\x1b[31mRED\x1b]0;title\x07\nsecond line"


def test_trace_names_reach_the_terminal_without_control_characters(tierscope_bin, tmp_path):
    t = json.loads(json.dumps(TRACE))
    t["deviceProperties"][0]["name"] = EVIL
    t["traceEvents"][2]["name"] = "sgemm" + EVIL
    p = tmp_path / "evil.json"
    p.write_text(json.dumps(t))
    for args in (("analyze", p), ("stats", p, "--report", "cuda_gpu_kern_sum,op_roofline"),
                 ("whatif", p, "--change", "gemm=0.5"), ("diff", p, p),
                 ("kernel", "--from-trace", p, "-o", tmp_path / "k.json")):
        r = subprocess.run([str(tierscope_bin), *map(str, args)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        bad = [c for c in r.stdout + r.stderr if ord(c) < 0x20 and c != "\n"]
        assert not bad, (args[0], bad[:5])
        # In tables and findings the name stays on its one line: the newline in it is a space.
        if args[0] != "kernel":
            assert all("second line" not in line or "RED" in line for line in r.stdout.splitlines()), r.stdout
    assert any("RED" in line and "second line" in line for line in
               subprocess.run([str(tierscope_bin), "analyze", str(p)], capture_output=True, text=True,
                              timeout=120).stdout.splitlines())
