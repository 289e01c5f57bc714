"""Real pages in real headless Chromium (the HTML reports)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium_dom(page: Path, screenshot: Path) -> str:
    """Load ``page`` in headless Chromium: take a screenshot, fail on console errors, return the DOM."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run must install it (apt-get install -y chromium)")
        pytest.skip("chromium not found (apt-get install -y chromium)")
    flags = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"]
    shot = subprocess.run([*flags, "--window-size=1280,2000", f"--screenshot={screenshot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert shot.returncode == 0 and screenshot.stat().st_size > 10_000, shot.stderr[-2000:]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    console_errors = [line for line in (shot.stderr + dom.stderr).splitlines() if "CONSOLE" in line and "rror" in line]
    assert console_errors == []
    return dom.stdout
