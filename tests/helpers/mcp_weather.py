"""A weather MCP server in a process of its own, traced by toolpath and exporting over OTLP, and the same tools in
process for comparison.

    python -m tests.helpers.mcp_weather stdio
    python -m tests.helpers.mcp_weather http PORT

The server reads the standard ``OTEL_EXPORTER_OTLP_*`` variables (the test points them at ``toolpath collect``).
:func:`server_env` gives a child process those variables and a short export delay.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
STATIONS = {"Oslo": 4.5, "Lima": 19.0}


def get_forecast(city: str) -> dict[str, Any]:
    """The forecast of a city."""
    if city not in STATIONS:
        raise ValueError(f"no station in {city}")
    return {"city": city, "celsius": STATIONS[city]}


def to_fahrenheit(celsius: float) -> float:
    """Celsius to Fahrenheit."""
    return round(celsius * 9 / 5 + 32, 1)


TOOLS = (get_forecast, to_fahrenheit)


def weather_agent(prompt: str) -> str:
    """A plain agent over the same tools, traced by ``@toolpath.tool`` (the agent ``toolpath mcp --agent`` runs)."""
    import toolpath

    forecast = toolpath.tool(get_forecast)(prompt.rstrip("?").split()[-1])
    return f"{forecast['celsius']}C in {forecast['city']}"


WEATHER_EVALSET: dict[str, Any] = {
    "eval_set_id": "weather",
    "eval_cases": [
        {
            "eval_id": "oslo",
            "conversation": [
                {
                    "invocation_id": "turn-1",
                    "user_content": {"role": "user", "parts": [{"text": "Weather in Oslo?"}]},
                    "final_response": {"role": "model", "parts": [{"text": "4.5C in Oslo"}]},
                    "intermediate_data": {"tool_uses": [{"name": "get_forecast", "args": {"city": "Oslo"}}]},
                }
            ],
        }
    ],
}


def otlp_env(collector_url: str, token: str) -> dict[str, str]:
    """The variables that send a process's spans to the collector at once."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector_url,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer%20{token}",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
    }


def server_env(collector_url: str, token: str) -> dict[str, str]:
    return {**os.environ, **otlp_env(collector_url, token), "PYTHONPATH": str(ROOT)}


@contextmanager
def tracing_into(
    collector_url: str, token: str, monkeypatch: Any, service_name: str, adapter: Any
) -> Iterator[dict[str, str]]:
    """This process traces into the collector as ``service_name`` with ``adapter`` (a toolpath adapter module)
    instrumented; yields the environment for a server process that traces into it too."""
    import toolpath

    for key, value in otlp_env(collector_url, token).items():
        monkeypatch.setenv(key, value)
    toolpath.shutdown()
    toolpath.init(store=False, service_name=service_name)
    adapter.instrument()
    try:
        yield server_env(collector_url, token)
    finally:
        adapter.uninstrument()
        toolpath.shutdown()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(process: subprocess.Popen[bytes], port: int, timeout: float = 60) -> None:
    """Wait until the server ``process`` listens on ``port`` (its error output, if it exits first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stderr.read().decode() if process.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server did not listen on {port} in {timeout}s")


@contextmanager
def http_server(env: Mapping[str, str]) -> Iterator[str]:
    """The server on Streamable HTTP on a free loopback port; yields its ``/mcp`` URL."""
    with python_on_port(lambda port: ["-m", "tests.helpers.mcp_weather", "http", str(port)], env) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@contextmanager
def python_on_port(args: Callable[[int], list[str]], env: Mapping[str, str] | None = None) -> Iterator[int]:
    """``python *args(port)`` run from the repository root for a free loopback port, until it listens there;
    yields the port and terminates the process after."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, *args(port)],
        env=None if env is None else dict(env),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(process, port)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


def build_app(port: int = 0) -> Any:
    from mcp.server.fastmcp import FastMCP

    app = FastMCP("weather", host="127.0.0.1", port=port or 8000, log_level="WARNING")
    for fn in TOOLS:
        app.tool()(fn)
    return app


def main(argv: list[str]) -> None:
    import toolpath
    from toolpath.adapters import mcp as tp_mcp

    toolpath.init(store=False, service_name="weather-mcp")
    tp_mcp.instrument()
    transport = argv[0]
    app = build_app(int(argv[1]) if transport == "http" else 0)
    try:
        app.run("stdio" if transport == "stdio" else "streamable-http")
    finally:
        toolpath.shutdown()


if __name__ == "__main__":
    main(sys.argv[1:])
