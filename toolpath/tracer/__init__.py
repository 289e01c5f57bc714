"""Tracing: agent runs become ``invoke_agent`` spans, tool calls ``execute_tool`` spans (docs/spec.md §2).

Adapters use only :mod:`toolpath.tracer.spans`, which needs nothing but the OpenTelemetry *API*: before
``toolpath.init`` every span is a no-op. Attribute keys live in :mod:`toolpath.tracer.semconv` and nowhere else;
what is captured and how it is redacted and cut is :mod:`toolpath.tracer.content`. Setting up the SDK, the
collector and the store is :mod:`toolpath.tracing`'s job, so importing this package stays light.
"""
