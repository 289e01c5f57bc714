"""Fixtures of the `toolpath` command's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import run_process


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory) -> Path:
    """A working directory where `toolpath demo` ran (as a real process) and left its default SQLite store and
    its output; the tests that read it only add runs of their own."""
    cwd = tmp_path_factory.mktemp("demo")
    result = run_process(cwd, "demo")
    assert result.returncode == 0, result.stderr
    (cwd / "stdout.txt").write_text(result.stdout)
    return cwd
