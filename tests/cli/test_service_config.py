"""``toolpath collect`` configured as services are: a TOML file, ``TOOLPATH_*`` variables and the command line
(the command line wins, then the environment, then the file), with JSON logs, as a real process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import click

from tests.helpers.builders import otlp_json
from tests.helpers.collector import free_port, post_traces
from toolpath.cli.collect import collect


def post(port: int, body: bytes, token: str) -> int:
    return post_traces(f"http://127.0.0.1:{port}", body, "application/json", token)[0]


def listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_command_line_beats_environment_beats_file_and_logs_are_json(tmp_path):
    http_file, http_cli, grpc_file, grpc_env = (free_port() for _ in range(4))
    (tmp_path / "collector.toml").write_text(
        f'store = "{tmp_path / "c.db"}"\n'
        f"http_port = {http_file}\n"  # the command line says otherwise
        f"grpc_port = {grpc_file}\n"  # the environment says otherwise
        'token = "from-file"\n'  # the environment says otherwise
        "max-body-bytes = 2000\n"  # only the file says (dashes work too)
        'log_format = "json"\n'
        'redact_key = ["customer_id"]\n'
    )
    env = {**os.environ, "TOOLPATH_GRPC_PORT": str(grpc_env), "TOOLPATH_TOKEN": "from-env"}
    env.pop("TOOLPATH_STORE", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "toolpath.cli", "collect", "--config", str(tmp_path / "collector.toml"),
         "--http-port", str(http_cli)],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while (
            not (listening(http_cli) and listening(grpc_env)) and time.monotonic() < deadline and process.poll() is None
        ):
            time.sleep(0.1)
        assert listening(http_cli) and not listening(http_file)
        assert listening(grpc_env) and not listening(grpc_file)
        assert post(http_cli, otlp_json(f"{1:032x}", tool_calls=1), "from-file") == 401
        assert post(http_cli, otlp_json(f"{1:032x}", tool_calls=1), "from-env") == 200
        assert post(http_cli, otlp_json(f"{2:032x}", tool_calls=1, big="x" * 3000), "from-env") == 413
    finally:
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert stdout == ""  # in JSON mode every line goes to the log
    lines = [json.loads(line) for line in stderr.splitlines()]  # every line is one JSON object
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    started = next(line for line in lines if line["message"].startswith("toolpath collecting"))
    assert started["logger"] == "toolpath.service" and started["level"] == "info" and started["token_required"]
    access = [line for line in lines if line["logger"] == "uvicorn.access"]
    assert [(a["method"], a["path"], a["status"]) for a in access] == [
        ("POST", "/v1/traces", s) for s in (401, 200, 413)
    ]
    assert lines[-1]["message"].startswith("stopped; 2 span(s) stored") and lines[-1]["spans_stored"] == 2


def test_every_collect_option_has_its_variable_and_file_key():
    options = [p for p in collect.params if isinstance(p, click.Option)]
    for option in options:
        long_name = max(option.opts, key=len).lstrip("-")
        assert option.envvar == "TOOLPATH_" + long_name.upper().replace("-", "_"), option.name
    assert "config" in {max(p.opts, key=len).lstrip("-") for p in options}
