"""Shared by every Python suite: where the tierscope binary is, as a session fixture.

TIERSCOPE_BIN overrides the default build/release/tierscope; a missing binary fails
(never skips) the tests that need it."""
from __future__ import annotations

import os
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
