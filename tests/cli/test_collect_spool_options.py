"""``toolpath collect --spool DIR --spool-max-bytes N`` as options, ``TOOLPATH_*`` variables and ``--config`` keys:
every bad value one ``error:`` line naming where it came from, exit 2, nothing created; and their help."""

from __future__ import annotations

import socket

import pytest

from tests.helpers.cli import run_cli

COLLECT = ("collect", "--store", "c.db", "--http-port", "0", "--grpc-port", "0")


@pytest.mark.parametrize(
    ("args", "env", "config", "first"),
    [
        ([], {"TOOLPATH_SPOOL": "notes.txt"}, None, "error: --spool notes.txt: not a folder"),
        ([], {"TOOLPATH_SPOOL_MAX_BYTES": "100"}, None, "error: --spool-max-bytes needs --spool"),
        (
            ["--spool", "spool"],
            {"TOOLPATH_SPOOL_MAX_BYTES": "0"},
            None,
            "error: Invalid value for '--spool-max-bytes' (from $TOOLPATH_SPOOL_MAX_BYTES): 0 is not in the range "
            "x>=1. (see 'toolpath collect --help')",
        ),
        (["--spool", ""], {}, None, "error: --spool: empty; give the folder to spool in"),
        ([], {"TOOLPATH_SPOOL": " "}, None, "error: --spool: empty; give the folder to spool in"),
        ([], {}, "spool = 5\n", "error: collector.toml: spool: expected a path (a string), got 5"),
        ([], {}, 'spool = "notes.txt"\n', "error: --spool notes.txt: not a folder"),
        (
            [],
            {},
            'spool = "spool"\nspool_max_bytes = -1\n',
            "error: collector.toml: spool_max_bytes: -1 is not in the range x>=1.",
        ),
    ],
    ids=[
        "env-a-file",
        "env-bound-alone",
        "env-bound-zero",
        "empty",
        "env-empty",
        "file-a-number",
        "file-a-file",
        "file-bound-negative",
    ],
)
def test_bad_spool_settings_are_one_error_line_and_create_nothing(tmp_path, args, env, config, first):
    (tmp_path / "notes.txt").write_text("notes\n")
    before = ["notes.txt"]
    if config is not None:
        (tmp_path / "collector.toml").write_text(config)
        args = ["--config", "collector.toml", *args]
        before.insert(0, "collector.toml")
    result = run_cli(tmp_path, *COLLECT, *args, env=env)
    assert result.returncode == 2 and result.stderr.splitlines() == [first]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_port_in_use_leaves_no_spool_folder_behind(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = run_cli(tmp_path, "collect", "--store", "c.db", "--http-port", port, "--grpc-port", "0",
                         "--workers", "1", "--spool", "spool")  # fmt: skip
    assert result.returncode == 2 and "cannot listen on" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_help_names_the_folder_and_the_bound_with_its_default_and_variable(tmp_path):
    result = run_cli(tmp_path, "collect", "--help")
    text = " ".join(result.stdout.split())
    assert "--spool DIR Answer exports once their spans (redacted) are synced to a spool in this folder" in text
    assert "(all --workers together, each its share)" in text
    assert "An export larger than a worker's share alone is written to the store before its answer." in text
    assert "[env var: TOOLPATH_SPOOL_MAX_BYTES; default: 1073741824; x>=1]" in text
    assert "committed (with --spool: to the spool)" in text
