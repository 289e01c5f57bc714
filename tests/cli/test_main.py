"""The `toolpath` entry point: as a real process (the other command tests run it in-process) it starts and lists
every command; a bad invocation is a usage error with exit 2."""

from __future__ import annotations

import re

from tests.helpers.cli import run_cli, run_process

COMMANDS = {"collect", "db", "demo", "eval", "export", "metrics", "replay", "report", "runs", "sessions", "ui", "watch"}


def test_help_lists_every_command(tmp_path):
    result = run_process(tmp_path, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: toolpath [OPTIONS] COMMAND [ARGS]...")
    listed = set(re.findall(r"^  (\w+)  ", result.stdout.split("Commands:")[1], re.M))
    assert listed == COMMANDS


def test_an_unknown_command_is_a_usage_error(tmp_path):
    result = run_cli(tmp_path, "evaluate")
    assert result.returncode == 2
    assert "No such command 'evaluate'" in result.stderr and "Traceback" not in result.stderr
