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


HEAVY = ("pydantic", "google.genai", "google.adk", "toolpath.model", "toolpath.judges.client", "toolpath.judges.vertex",
         "toolpath.evaluation.catalog", "toolpath.metrics", "alembic", "sqlalchemy.orm")  # fmt: skip
"""What a command that only lists must not load: each costs start-up time that command would pay every time."""


def modules_loaded_by(cwd, argv: list[str]) -> set[str]:
    """The modules ``toolpath <argv>`` has loaded once it is done, in a process of its own."""
    script = (
        "import sys\nfrom toolpath.cli import main\ntry:\n    main(sys.argv[1:])\nfinally:\n"
        "    print('\\n'.join(sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return set(done.stderr.splitlines())


def test_listing_commands_load_only_what_they_need(tmp_path):
    from tests.helpers.builders import invocation
    from toolpath.store.store import Store

    url = f"sqlite:///{tmp_path / 'toolpath.db'}"
    Store(url).write([invocation(i) for i in range(3)])  # a store at the schema's head: nothing to migrate
    for argv, ran, also in (
        (["--help"], "toolpath.cli", ("sqlalchemy",)),
        (["metrics", "--json"], "toolpath.cli.metrics_command", ("sqlalchemy",)),
        # a store at the schema's head is read through its driver: SQLAlchemy's import alone would double the run
        (
            ["sessions", "list", "--store", url, "--json"],
            "toolpath.store.session_list",
            ("sqlalchemy", "rich.progress"),
        ),
        (["sessions", "list", "--store", url], "toolpath.cli.display", ("sqlalchemy", "rich.progress")),
    ):
        loaded = modules_loaded_by(tmp_path, argv)
        assert ran in loaded  # it did run
        heavy = sorted(m for m in loaded if any(m == h or m.startswith(f"{h}.") for h in (*HEAVY, *also)))
        assert heavy == [], f"toolpath {' '.join(argv)}"


def test_sessions_list_reads_postgresql_through_its_driver(tmp_path, postgres_url):
    """A PostgreSQL store at the schema's head is listed through psycopg alone, as a SQLite file is."""
    import json

    from tests.helpers.builders import invocation
    from toolpath.store.store import Store

    store = Store(postgres_url)
    store.write([invocation(i, agent="pg-lister") for i in range(900_001, 900_004)])
    store.close()
    argv = ["sessions", "list", "--store", postgres_url, "--agent-name", "pg-lister", "--json"]
    loaded = modules_loaded_by(tmp_path, argv)
    assert "psycopg" in loaded and not any(m == "sqlalchemy" or m.startswith("sqlalchemy.") for m in loaded)
    listed = json.loads(run_cli(tmp_path, *argv).stdout)
    assert sorted((row["session_id"], row["invocations"], row["tool_calls"]) for row in listed) == [
        (f"s-{i}", 1, 1) for i in (900_001, 900_002, 900_003)
    ]
