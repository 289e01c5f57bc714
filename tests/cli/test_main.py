"""The `toolpath` entry point: as a real process (the other command tests run it in-process) it starts and lists
every command; a bad invocation is a usage error with exit 2."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.helpers.cli import run_cli, run_process

COMMANDS = {"collect", "db", "demo", "eval", "export", "ingest", "mcp", "metrics", "replay", "report", "runs", "sessions",
            "ui", "watch"}  # fmt: skip


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


def test_help_lists_each_command_as_its_own_help_says_without_loading_it(tmp_path):
    from toolpath.cli import COMMANDS as TABLE
    from toolpath.cli import cli

    for name, (_, _, short) in TABLE.items():
        assert cli.commands[name].name == name
        assert cli.commands[name].get_short_help_str(limit=1000) == short, f"toolpath.cli.COMMANDS[{name!r}]"
    script = (
        "import sys\nfrom toolpath.cli import cli\ncli.main(['--help'], standalone_mode=False)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('toolpath.cli.', 'sqlalchemy', 'toolpath.tracing'))))"
    )
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert "Receive OTLP traces from agents" in shown
    assert shown.splitlines()[-1] == "[]"  # no command's module, no store, no tracing: only the table
