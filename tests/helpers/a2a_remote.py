"""A remote ADK agent served over A2A in a process of its own, traced by toolpath and exporting over OTLP.

    python -m tests.helpers.a2a_remote PORT

The ``forecaster`` agent answers a city's name by calling its ``get_forecast`` tool (tests/helpers/mcp_weather.py)
and saying the temperature; its model is scripted. The standard ``OTEL_EXPORTER_OTLP_*`` variables say where its
spans go (:func:`tests.helpers.mcp_weather.server_env`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from tests.helpers.adk_agent import ScriptedModel, answer, call, calls
from tests.helpers.mcp_weather import get_forecast, python_on_port

REMOTE_NAME = "forecaster"


def build_forecaster() -> object:
    from google.adk.agents import LlmAgent

    model = ScriptedModel(turns={"Oslo": [calls(call("get_forecast", city="Oslo")), answer("4.5C in Oslo.")]})
    return LlmAgent(name=REMOTE_NAME, model=model, tools=[get_forecast], description="Forecasts a city's weather.")


@contextmanager
def remote_agent(env: Mapping[str, str]) -> Iterator[str]:
    """The forecaster on a free loopback port; yields its base URL."""
    remote_env = {**env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
    with python_on_port(lambda port: ["-m", "tests.helpers.a2a_remote", str(port)], remote_env) as port:
        yield f"http://127.0.0.1:{port}"


def main(port: int) -> None:
    import uvicorn
    from google.adk.a2a.utils.agent_to_a2a import to_a2a

    import toolpath
    from toolpath.adapters import a2a as tp_a2a

    toolpath.init(store=False, service_name=REMOTE_NAME)
    tp_a2a.instrument()
    app = to_a2a(build_forecaster(), host="127.0.0.1", port=port)  # type: ignore[arg-type]
    try:
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    finally:
        toolpath.shutdown()


if __name__ == "__main__":
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    main(int(sys.argv[1]))
