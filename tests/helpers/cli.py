"""The ``toolpath`` command as users run it from a shell in a working directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_process(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``toolpath ARGS`` as a real process in ``cwd`` (``$TOOLPATH_STORE`` unset, 200 columns)."""
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    full_env.pop("TOOLPATH_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "toolpath.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=full_env,
    )
