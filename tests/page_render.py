"""Headless Chromium (Debian's) for the suites that draw self-contained pages — the lab's
report and the analysis page: a page's DOM after its script ran, its console, a
screenshot. A module of its own (not conftest.py: several suites have a conftest, and
`from conftest import` would find whichever came first)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def chromium():
    """Debian's headless Chromium (scripts/test.sh installs it), or None."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def render_page(page: Path, tmp: Path, screenshot: Path | None = None, window: str = "1200,2600"):
    """A self-contained page's DOM after its script ran, and Chromium's console output;
    with `screenshot`, a PNG of it there too."""
    browser = chromium()
    if browser is None:
        pytest.skip("chromium is not installed (scripts/test.sh installs Debian's chromium)")
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={tmp / 'chromium-profile'}", "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=10000", f"--window-size={window}"]
    run = subprocess.run(flags + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        shot = subprocess.run(flags + [f"--screenshot={screenshot}", page.as_uri()],
                              capture_output=True, text=True, timeout=180)
        assert shot.returncode == 0 and screenshot.is_file(), shot.stderr[-2000:]
    return run.stdout, run.stderr


def console_errors(console: str) -> list:
    """Chromium's console lines that report a script error."""
    return [l for l in console.splitlines() if "CONSOLE" in l and ("Uncaught" in l or "Error" in l)]
