"""The in-process pipeline: spans -> collector -> SQLite file, and that it never hurts the agent."""

from __future__ import annotations

import socket
import threading

import pytest
from opentelemetry import trace
from sqlalchemy import create_engine, event

import toolpath
from toolpath.store.store import Store


@toolpath.tool
def read_thermostat(room: str) -> float:
    return {"living_room": 20.0}.get(room, 18.0)


@toolpath.tool
def set_temperature(location: str, temperature: float) -> dict:
    if location == "garage":
        raise ValueError("garage has no thermostat")
    return {"location": location, "temperature": temperature}


@toolpath.agent(name="home")
def home_agent(prompt: str) -> str:
    current = read_thermostat("living_room")
    set_temperature("living_room", current + 1.5)
    try:
        set_temperature("garage", 16.5)
    except ValueError as exc:
        return f"Living room raised; {exc}."
    return "done"


def stored(store_url: str) -> Store:
    toolpath.flush()
    return Store(store_url)


class TestPipeline:
    def test_invocation_with_ordered_tool_calls(self, tracing, store_url):
        home_agent("Warm up the living room and the garage", session_id="s-1")
        session = stored(store_url).get_session("s-1")
        assert session is not None and session.agent_name == "home"
        [inv] = session.invocations
        assert inv.prompt == "Warm up the living room and the garage"
        assert inv.response == "Living room raised; garage has no thermostat."
        assert [c.name for c in inv.tool_calls] == ["read_thermostat", "set_temperature", "set_temperature"]
        assert inv.tool_calls[0].args == {"room": "living_room"} and inv.tool_calls[0].result == 20.0
        assert inv.tool_calls[1].args == {"location": "living_room", "temperature": 21.5}
        assert inv.tool_calls[2].error == "ValueError: garage has no thermostat"
        assert inv.tool_calls[2].result is None
        assert all(c.call_id and c.call_id.startswith("call_") for c in inv.tool_calls)
        assert inv.failure == 0 and inv.latency_seconds is not None and inv.latency_seconds > 0
        assert inv.trace_id and len(inv.trace_id) == 32

    def test_turns_group_into_a_session_in_order(self, tracing, store_url):
        for prompt in ("first", "second", "third"):
            home_agent(prompt, session_id="conv")
        invocations = stored(store_url).get_session("conv").invocations
        assert [i.prompt for i in invocations] == ["first", "second", "third"]

    def test_without_session_id_each_run_is_its_own_session(self, tracing, store_url):
        home_agent("a")
        home_agent("b")
        store = stored(store_url)
        sessions = store.list_sessions()
        assert len(sessions) == 2
        inv = store.list_invocations()[0]
        assert inv.session_id == inv.trace_id

    def test_failed_run(self, tracing, store_url):
        @toolpath.agent(name="flaky")
        def flaky(prompt: str) -> str:
            read_thermostat("office")
            raise TimeoutError("model timed out")

        with pytest.raises(TimeoutError):
            flaky("hello", session_id="f")
        [inv] = stored(store_url).get_session("f").invocations
        assert inv.failure == 1
        assert inv.latency_seconds is None
        assert inv.error == "TimeoutError: model timed out"
        assert [c.name for c in inv.tool_calls] == ["read_thermostat"]

    def test_returned_trajectory_used_when_no_tool_spans(self, tracing, store_url):
        @toolpath.agent(name="custom")
        def custom(prompt: str) -> dict:
            return {
                "response": "ok",
                "predicted_trajectory": [{"tool_name": "search", "tool_input": {"q": prompt}}],
            }

        custom("cats", session_id="c")
        [inv] = stored(store_url).get_session("c").invocations
        assert inv.response == "ok"
        assert inv.predicted_trajectory == [{"tool_name": "search", "tool_input": {"q": "cats"}}]

    def test_sub_agents_belong_to_the_outer_run(self, tracing, store_url):
        @toolpath.agent(name="helper")
        def helper(prompt: str) -> str:
            set_temperature("bedroom", 19)
            return "helped"

        @toolpath.agent(name="boss")
        def boss(prompt: str) -> str:
            read_thermostat("bedroom")
            helper("please")
            return "all done"

        boss("go", session_id="nest")
        store = stored(store_url)
        [inv] = store.get_session("nest").invocations
        assert inv.agent_name == "boss"
        assert [c.name for c in inv.tool_calls] == ["read_thermostat", "set_temperature"]
        assert store.counts()["invocations"] == 1

    def test_agent_inside_an_application_span(self, tracing, store_url, app_spans):
        with trace.get_tracer("web").start_as_current_span("POST /chat"):
            home_agent("inside a request", session_id="web")
            home_agent("second in same request", session_id="web")
        invocations = stored(store_url).get_session("web").invocations
        assert [i.prompt for i in invocations] == ["inside a request", "second in same request"]
        assert all(len(i.tool_calls) == 3 for i in invocations)
        # the application's own processor still saw everything
        assert "POST /chat" in {s.name for s in app_spans.get_finished_spans()}

    def test_two_runs_at_once_in_one_application_span_stay_two(self, tracing, store_url):
        """The first run to end has the other still open in its trace: it waits, and is its own run when the
        other ends without containing it."""
        import contextvars

        started, release = threading.Barrier(2), threading.Event()

        @toolpath.agent(name="slow")
        def slow(prompt: str) -> str:
            started.wait(5)
            release.wait(5)
            read_thermostat("attic")
            return "slow done"

        @toolpath.agent(name="quick")
        def quick(prompt: str) -> str:
            started.wait(5)
            set_temperature("office", 20)
            return "quick done"

        with trace.get_tracer("web").start_as_current_span("POST /batch"):
            ctx = contextvars.copy_context()
            other = threading.Thread(target=ctx.run, args=(slow, "s"), kwargs={"session_id": "two-at-once"})
            other.start()
            quick("q", session_id="two-at-once")
            release.set()
            other.join(10)
        invocations = stored(store_url).get_session("two-at-once").invocations
        assert sorted((i.agent_name, [c.name for c in i.tool_calls]) for i in invocations) == [
            ("quick", ["set_temperature"]),
            ("slow", ["read_thermostat"]),
        ]

    def test_raw_spans_are_stored(self, tracing, store_url):
        home_agent("x", session_id="raw")
        store = stored(store_url)
        [inv] = store.get_session("raw").invocations
        names = sorted(s.name for s in store.spans_of_trace(inv.trace_id))
        assert names == [
            "execute_tool read_thermostat",
            "execute_tool set_temperature",
            "execute_tool set_temperature",
            "invoke_agent home",
        ]


class TestNeverInTheAgentsWay:
    def test_agent_thread_does_no_sql(self, store_url, app_spans):
        store = Store(store_url)
        sql_threads: set[int] = set()
        event.listen(store.engine, "before_cursor_execute", lambda *a, **k: sql_threads.add(threading.get_ident()))
        toolpath.init(store=store)
        for i in range(5):
            home_agent(f"turn {i}", session_id="threads")
        toolpath.flush()
        writers = set(sql_threads)  # before this test reads the store itself
        assert len(store.get_session("threads").invocations) == 5
        assert writers, "the collector wrote nothing"
        assert threading.get_ident() not in writers

    def test_store_down_costs_the_agent_nothing(self, store_url, app_spans, caplog):
        store = Store(store_url)
        store.engine = create_engine("sqlite:////nonexistent-folder/for/toolpath.db")
        toolpath.init(store=store)
        assert home_agent("still works") == "Living room raised; garage has no thermostat."
        toolpath.flush()
        stats = toolpath.stats()
        assert stats["invocations_lost"] == 1
        assert stats["store_errors"] >= 1
        assert "could not write 1 invocation" in caplog.text

    def test_full_queue_drops_and_counts_instead_of_blocking(self, store_url, app_spans):
        toolpath.init(store=store_url, max_queue=10)

        @toolpath.agent(name="busy")
        def busy(prompt: str) -> list:
            return [read_thermostat("living_room") for _ in range(300)]

        assert busy("go") == [20.0] * 300
        toolpath.flush()
        stats = toolpath.stats()
        assert stats["spans_dropped"] > 0
        assert stats["spans_dropped"] + stats["spans_received"] == 301

    def test_spans_outside_agent_runs_are_not_collected(self, tracing, store_url, app_spans):
        for _ in range(5):
            read_thermostat("office")
        with trace.get_tracer("web").start_as_current_span("GET /health"):
            pass
        home_agent("counted", session_id="only")
        toolpath.flush()
        assert toolpath.stats()["spans_received"] == 4  # the agent span and its three tools
        assert len(app_spans.get_finished_spans()) == 10  # the application's exporter got everything

    def test_exporter_down_costs_the_agent_nothing(self, store_url, app_spans, monkeypatch):
        with socket.socket() as sock:  # a port nobody listens on
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
        toolpath.init(store=store_url, otlp_endpoint=f"http://127.0.0.1:{port}")
        assert home_agent("export is down", session_id="down").startswith("Living room raised")
        toolpath.flush(timeout=15)
        stats = toolpath.stats()
        assert stats["spans_export_dropped"] == 4
        assert stats["invocations_written"] == 1  # the store still got it

    def test_existing_provider_processors_are_kept_and_not_stacked(self, store_url, app_spans):
        provider = trace.get_tracer_provider()
        before = len(provider._active_span_processor._span_processors)
        for _ in range(3):
            toolpath.init(store=store_url)
            toolpath.shutdown()
        toolpath.init(store=store_url)
        assert trace.get_tracer_provider() is provider
        assert len(provider._active_span_processor._span_processors) <= max(before, 2)
        home_agent("x")
        assert any(s.name == "invoke_agent home" for s in app_spans.get_finished_spans())

    def test_init_is_idempotent(self, store_url, app_spans):
        first = toolpath.init(store=store_url)
        assert toolpath.init(store="sqlite://") is first


@toolpath.tool
def read_sensor(name: str) -> dict:
    return {"name": name, "reading": float("nan"), "raw": "\x00\x01", "peak": float("inf")}


@toolpath.agent(name="sensors")
def sensor_agent(prompt: str) -> str:
    read_sensor(prompt)
    return "read \x00 done"


def test_values_no_store_column_takes_are_cleaned_and_marked(store):
    """NaN, infinity and NUL characters from a tool and an agent reach the store (SQLite and PostgreSQL) cleaned."""
    toolpath.shutdown()
    toolpath.init(store=store.url)
    sensor_agent("hall\x00way", session_id="s-clean")
    toolpath.flush()
    [inv] = store.get_session("s-clean").invocations
    assert inv.response == "read \ufffd done" and inv.prompt == "hall\ufffdway"
    assert inv.tool_calls[0].result == {"name": "hall\ufffdway", "reading": "NaN", "raw": "\ufffd\x01",
                                        "peak": "Infinity"}  # fmt: skip
    assert {"prompt", "response", "tool_calls"} <= set(inv.attributes["toolpath.cleaned"])
