"""``toolpath mcp`` as a real process, called by the ``mcp`` SDK's client: on stdio (read-only) and on Streamable
HTTP on loopback (bearer token, Host check, --allow-write)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.cli import run_cli
from tests.helpers.doors import closed, door, dribble, send
from tests.helpers.mcp_weather import ROOT, WEATHER_EVALSET, python_on_port
from toolpath.evaluation.evalsets.files import load_eval_set
from toolpath.model import Invocation, ToolCall, ns_to_datetime
from toolpath.store.store import Store

TOKEN = "mcp-s3cret"
INITIALIZE = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
).encode()  # fmt: skip
"""The one request a client sends before it has a session: answered 200 when the port serves it."""


def turn(n: int, session: str, calls: list[ToolCall], response: str) -> Invocation:
    return Invocation(
        invocation_id=f"{n:032x}-{n:016x}",
        session_id=session,
        agent_name="weather_bot",
        prompt=f"question {n} about Oslo",
        response=response,
        tool_calls=calls,
        trace_id=f"{n:032x}",
        started_at=ns_to_datetime(1_700_000_000_000_000_000 + n * 1_000_000_000),
        latency_seconds=0.5,
        failure=0,
    )


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'mcp.db'}"
    store = Store(url)
    store.write(
        [
            turn(1, "s-ok", [ToolCall(name="get_forecast", args={"city": "Oslo"}, result={"celsius": 4.5})], "4.5C"),
            turn(
                2,
                "s-bad",
                [
                    ToolCall(name="get_forecast", args={"city": "Mars"}, error="tool_error: no station in Mars"),
                    ToolCall(name="get_forecast", args={"city": "Mars"}, error="tool_error: no station in Mars"),
                ],
                "Sorry.",
            ),
        ]
    )
    store.close()
    return url


def text_of(result: Any) -> Any:
    assert not result.isError, result.content
    return (
        json.loads(result.content[0].text) if len(result.content) == 1 else [json.loads(c.text) for c in result.content]
    )


async def exercise_read_only(session: ClientSession) -> dict[str, Any]:
    await session.initialize()
    names = {t.name for t in (await session.list_tools()).tools}
    listed = (await session.call_tool("list_sessions", {"limit": 10})).structuredContent
    found = (await session.call_tool("search_sessions", {"text": "Mars"})).structuredContent
    shown = (await session.call_tool("show_trajectory", {"session_id": "s-bad"})).structuredContent
    scored = (await session.call_tool("score_session", {"session_id": "s-bad"})).structuredContent
    refused = await session.call_tool("add_session_to_evalset", {"session_id": "s-ok", "evalset": "x"})
    missing = await session.call_tool("show_trajectory", {"session_id": "nope"})
    return {"names": names, "listed": listed, "found": found, "shown": shown, "scored": scored,
            "refused": refused, "missing": missing}  # fmt: skip


def test_stdio_read_only(store_url: str, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolpath.cli", "mcp", "--store", store_url, "--evalsets", str(tmp_path / "evalsets")],
        cwd=str(ROOT),
    )

    async def main() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await exercise_read_only(session)

    got = anyio.run(main)
    assert "add_session_to_evalset" not in got["names"]
    assert {"list_sessions", "search_sessions", "show_trajectory", "score_session", "score_evalset"} <= got["names"]
    assert [s["session_id"] for s in got["listed"]["result"]] == ["s-bad", "s-ok"]
    assert [s["session_id"] for s in got["found"]["result"]] == ["s-bad"]
    [shown_turn] = got["shown"]["turns"]
    assert [(c["name"], c["args"], c["error"]) for c in shown_turn["tool_calls"]] == [
        ("get_forecast", {"city": "Mars"}, "tool_error: no station in Mars")
    ] * 2
    [scored_turn] = got["scored"]["turns"]
    assert scored_turn["tool_error_rate"] == 1.0 and scored_turn["redundant_tool_calls"] == 1.0
    assert got["refused"].isError and "Unknown tool" in got["refused"].content[0].text  # not offered read-only
    assert got["missing"].isError and "no session 'nope'" in got["missing"].content[0].text
    assert not (tmp_path / "evalsets").exists()


@pytest.fixture
def http_server(store_url: str, tmp_path: Path) -> Iterator[str]:
    def command(port: int) -> list[str]:
        return ["-m", "toolpath.cli", "mcp", "--store", store_url, "--transport", "http", "--port", str(port),
                "--token", TOKEN, "--allow-write", "--evalsets", str(tmp_path / "evalsets")]  # fmt: skip

    with python_on_port(command) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def test_http_needs_the_token_and_a_loopback_host_and_may_write(http_server: str, tmp_path: Path) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    assert httpx.post(http_server, json=hello, headers=accept).status_code == 401
    wrong = {**accept, "Authorization": "Bearer nope"}
    assert httpx.post(http_server, json=hello, headers=wrong).status_code == 401
    rebound = {**accept, "Authorization": f"Bearer {TOKEN}", "Host": "evil.test"}
    assert httpx.post(http_server, json=hello, headers=rebound).status_code == 421

    async def main() -> tuple[set[str], Any, Any]:
        client = httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        async with (
            client,
            streamable_http_client(http_server, http_client=client) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            added = await session.call_tool("add_session_to_evalset", {"session_id": "s-ok", "evalset": "regress"})
            again = await session.call_tool("add_session_to_evalset", {"session_id": "s-ok", "evalset": "regress"})
            escape = await session.call_tool("add_session_to_evalset", {"session_id": "s-ok", "evalset": "../x"})
            return names, (added, again), escape

    names, (added, again), escape = anyio.run(main)
    assert "add_session_to_evalset" in names
    assert added.structuredContent["eval_id"] == "s-ok" and again.structuredContent["eval_id"] == "s-ok-2"
    eval_set = load_eval_set(tmp_path / "evalsets" / "regress.evalset.json")
    assert [c.eval_id for c in eval_set.cases] == ["s-ok", "s-ok-2"]
    assert escape.isError and not (tmp_path / "x.evalset.json").exists()


def test_stdio_refuses_http_options(store_url: str, tmp_path: Path) -> None:
    result = run_cli(tmp_path, "mcp", "--store", store_url, "--token", "t")
    assert result.returncode == 2 and result.stderr.startswith(
        "error: --token, --host and --port apply to --transport http"
    )
    missing = run_cli(tmp_path, "mcp", "--store", f"sqlite:///{tmp_path / 'none.db'}")
    assert missing.returncode == 2 and "does not exist" in missing.stderr and not (tmp_path / "none.db").exists()


def test_score_evalset_runs_only_a_named_agent_and_saves_nothing_read_only(store_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "evalsets"
    folder.mkdir()
    (folder / "weather.evalset.json").write_text(json.dumps(WEATHER_EVALSET), encoding="utf-8")

    def server(*extra: str) -> StdioServerParameters:
        args = ["-m", "toolpath.cli", "mcp", "--store", store_url, "--evalsets", str(folder), *extra]
        return StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT))

    async def score(params: StdioServerParameters) -> tuple[Any, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.call_tool("list_evalsets", {})
            return listed, await session.call_tool("score_evalset", {"evalset": "weather"})

    _, refused = anyio.run(score, server())
    assert refused.isError and "--agent" in refused.content[0].text
    listed, scored = anyio.run(score, server("--agent", "tests.helpers.mcp_weather:weather_agent"))
    assert listed.structuredContent["result"] == ["weather"]
    assert not scored.isError, scored.content
    assert scored.structuredContent["passed"] is True
    [case] = scored.structuredContent["eval_cases"]
    assert case["eval_id"] == "oslo"
    assert Store(store_url).list_eval_runs() == []  # read-only: the run is not saved


def test_http_refuses_every_host_but_this_very_server(http_server: str) -> None:
    port = int(http_server.split(":")[2].split("/")[0])
    ping = INITIALIZE
    base = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json"}  # fmt: skip
    expected = {f"127.0.0.1:{port}@evil.test": 400, "": 400, "evil.test": 421, f"evil.test:{port}": 421,
                "127.0.0.1:1": 421, "127.0.0.1": 421}  # fmt: skip
    for host, status in expected.items():
        reply = send(port, "POST", "/mcp", {**base, "Host": host}, ping)
        assert (reply.status, reply.header("content-type")) == (status, "text/plain"), host  # ours, not the SDK's
    assert send(port, "POST", "/mcp", {**base, "Host": f"127.0.0.1:{port}"}, ping).status == 200
    huge = {**base, "Host": f"127.0.0.1:{port}", "X-Big": "a" * 20 * 1024}  # whole in one piece: past uvicorn's
    assert send(port, "POST", "/mcp", huge, ping).status == 431
    page = {**base, "Host": f"127.0.0.1:{port}", "Origin": f"http://127.0.0.1:{port}"}
    assert send(port, "POST", "/mcp", page, ping).status == 403  # no web page is a client


def test_http_closes_dribbled_heads_at_the_deadline_and_caps_connections(store_url: str, tmp_path: Path) -> None:
    """The MCP port under the UI's rules (served as the command serves it, with a short deadline and a low cap)."""
    from toolpath.mcp_server.serving import http_app
    from toolpath.mcp_server.store_tools import StoreTools

    store = Store(store_url)
    app = http_app(StoreTools(store, tmp_path / "evalsets"), token=TOKEN)
    ping = INITIALIZE
    try:
        with door(app, header_seconds=1.0, max_connections=20, lifespan="on") as port:
            headers = {"Host": f"127.0.0.1:{port}", "Authorization": f"Bearer {TOKEN}",
                       "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}  # fmt: skip
            held = dribble(port, 19)
            try:
                assert send(port, "POST", "/mcp", headers, ping).status == 503  # the twentieth connection
                time.sleep(2.0)  # past the head deadline
                assert all(closed(conn) for conn in held)
                assert send(port, "POST", "/mcp", headers, ping).status == 200
            finally:
                for conn in held:
                    conn.close()
    finally:
        store.close()


def test_score_session_bounds_its_judge_calls_and_never_waits_for_the_budget(
    store_url: str, tmp_path: Path, monkeypatch
) -> None:
    """A read-only client asking for 100 samples of a judge metric is refused before any call; past the process's
    judge budget, calls are refused at once (the result says so), never held until the budget has room."""
    from tests.helpers.fake_gemini import json_reply, serving_gemini
    from toolpath.errors import ConfigError
    from toolpath.judges import client
    from toolpath.judges.process_budget import BudgetLimits, ProcessBudget
    from toolpath.mcp_server.store_tools import MAX_JUDGE_CALLS, StoreTools

    budget = ProcessBudget(BudgetLimits(calls_per_minute=1))
    monkeypatch.setattr(client, "process_budget", lambda: budget)
    store = Store(store_url)
    tools = StoreTools(store, tmp_path / "evalsets")
    with serving_gemini(monkeypatch, lambda prompt, seen: json_reply(score=4, explanation="clear")) as fake:
        with pytest.raises(ConfigError, match=f"at most {MAX_JUDGE_CALLS} times"):
            tools.score_session("s-bad", ["coherence(num_samples=100)"])
        assert fake.requests == 0
        scored = tools.score_session("s-bad", ["coherence", "coherence(name=again)"])
    [turn_scores] = scored["turns"]
    assert fake.requests == 1  # the minute's one call; the other refused, not held
    assert sorted([turn_scores["coherence"], turn_scores["again"]], key=lambda s: s is None) == [4.0, None]
    refused = turn_scores["coherence/explanation"] or turn_scores["again/explanation"]
    assert "judge budget spent" in str(scored) and refused is not None  # said at once: held, both would score
    store.close()


def test_sigterm_stops_a_stdio_server_whose_client_keeps_its_pipe_open(store_url: str, tmp_path: Path) -> None:
    """The stdio server's reader waits on stdin; SIGTERM still ends the process, after its usual cleanup."""
    import signal
    import subprocess

    server = subprocess.Popen(
        [sys.executable, "-m", "toolpath.cli", "mcp", "--store", store_url, "--evalsets", str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(INITIALIZE + b"\n")
        server.stdin.flush()
        assert b'"result"' in server.stdout.readline()  # it serves, and its reader waits on the open pipe
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 143  # before: it said "terminated" and went on until stdin closed
    finally:
        if server.poll() is None:
            server.kill()
