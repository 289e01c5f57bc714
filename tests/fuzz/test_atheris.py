"""Runs the atheris harness for a bounded time where atheris is installed (``pip install 'toolpath[fuzz]'``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).with_name("atheris_otlp.py")


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="atheris is not installed (toolpath[fuzz])")
def test_atheris_finds_nothing_in_the_otlp_decoders(tmp_path):
    result = subprocess.run(
        [sys.executable, str(HARNESS), "-max_total_time=15", "-rss_limit_mb=2048", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Done" in result.stderr or "DONE" in result.stderr, result.stderr[-3000:]
