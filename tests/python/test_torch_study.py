"""tierscope.torch.study: the lab through PyTorch from Python, returning summary.json as a
dict and the report's path; a missing binary or a model that cannot load is an exception
with one line saying so."""
from __future__ import annotations

import pytest

from tierscope.torch import study


def test_study_returns_the_summary_and_the_report(tierscope_bin, tmp_path):
    summary, report = study(device="cpu", out=tmp_path / "results", quick=True, threads=2, binary=tierscope_bin)
    assert summary["engine"] == "torch" and report == tmp_path / "results" / "report.html" and report.is_file()
    assert summary["tier1"]["batch"]["per_unit"]["operators"]["aten::linear"] == 13
    assert summary["headline"]["final_samples_per_s"] > 0


def test_study_errors_are_one_line(tierscope_bin, tmp_path):
    with pytest.raises(FileNotFoundError, match="tierscope command was not found"):
        study(binary=tmp_path / "nope")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text('{"model_type": "bert", "vocab_size": 1000}')
    with pytest.raises(RuntimeError, match="transformers cannot load it") as e:
        study(tmp_path / "model", out=tmp_path / "r", quick=True, threads=2, binary=tierscope_bin)
    assert "\n" not in str(e.value)
