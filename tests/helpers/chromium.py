"""Real pages in real headless Chromium (the HTML reports)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium_dom(page: Path, screenshot: Path) -> str:
    """Load ``page`` in headless Chromium: take a screenshot, fail on console errors, return the DOM (after scripts
    ran)."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run must install it (apt-get install -y chromium)")
        pytest.skip("chromium not found (apt-get install -y chromium)")
    flags = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"]
    # one launch takes the screenshot and dumps the DOM (Chromium does both in one headless run)
    shown = subprocess.run([*flags, "--window-size=1280,2000", f"--screenshot={screenshot}", "--dump-dom", page.as_uri()],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert shown.returncode == 0 and screenshot.stat().st_size > 10_000, shown.stderr[-2000:]
    console_errors = [line for line in shown.stderr.splitlines() if "CONSOLE" in line and "rror" in line]
    assert console_errors == []
    return shown.stdout
