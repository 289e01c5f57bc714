"""The README's set-up commands are what CI and users run; keep them honest."""

from __future__ import annotations

import re
import types
from pathlib import Path

import toolpath

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return [b.strip() for b in blocks[:2]]


def test_readme_opens_with_demo_and_test_commands():
    demo, tests = readme_commands()
    assert "toolpath demo" in demo
    assert "pytest" in tests


def test_ci_runs_exactly_the_readme_test_command():
    _, tests = readme_commands()
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert tests in ci_lines


def test_exported_names():
    exported = {
        name
        for name in dir(toolpath)
        if not name.startswith("_") and not isinstance(getattr(toolpath, name), types.ModuleType)
    }
    assert set(toolpath.__all__) == exported


def test_every_builtin_metric_is_documented():
    readme = (ROOT / "README.md").read_text()
    for name in toolpath.metric_names():
        assert f"`{name}" in readme, name
