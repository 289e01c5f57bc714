"""Tracing: agent runs become ``invoke_agent`` spans, tool calls ``execute_tool`` spans (SPEC §2).

    import toolpath

    toolpath.init()                      # spans -> in-process collector -> sqlite:///toolpath.db

    @toolpath.tool
    def get_weather(city: str) -> dict:
        return {"city": city, "sky": "clear"}

    @toolpath.agent(name="weather_bot")
    def bot(prompt: str) -> str:
        return f"It is {get_weather('Paris')['sky']} in Paris."

    bot("Weather in Paris?", session_id="s-1")
    toolpath.flush()                     # the invocation and its tool call are now in the store

Adapters use only :mod:`toolpath.tracer.spans`, which needs nothing but the OpenTelemetry API: before
``init`` every span is a no-op. Attribute keys live in :mod:`toolpath.tracer.semconv` and nowhere else.
"""

from toolpath.tracer.setup import CountingExporter, Tracing, current, flush, init, shutdown, stats

__all__ = ["CountingExporter", "Tracing", "current", "flush", "init", "shutdown", "stats"]
