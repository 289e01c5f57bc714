"""The collector's HTTP front end on raw sockets: framing (bad and missing lengths, chunked bodies, unread
bodies on keep-alive), content types, Host checks, slow and idle clients, and shutdown with connections open."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tests.helpers.builders import otlp_json
from toolpath.collector.http import HttpServer
from toolpath.collector.ingestor import Ingestor
from toolpath.errors import ConfigError
from toolpath.store.store import Store


@pytest.fixture
def served(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'h.db'}")
    server = HttpServer(
        Ingestor(store, token="t0k", max_body_bytes=64 * 1024), "127.0.0.1", 0, read_timeout=1.0, keep_alive_seconds=2
    ).start()
    deadline = time.monotonic() + 10
    while not server.server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield server, store
    server.shutdown(timeout=15)
    store.close()


def exchange(port: int, raw: bytes, *, read_for: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=read_for) as conn:
        conn.sendall(raw)
        return read_all(conn, read_for)


def read_all(conn: socket.socket, seconds: float) -> bytes:
    conn.settimeout(seconds)
    data = b""
    try:
        while chunk := conn.recv(65536):
            data += chunk
    except TimeoutError:
        pass
    return data


def request(body: bytes, *, headers: dict[str, str] | None = None, host: str = "127.0.0.1") -> bytes:
    base = {"Host": host, "Authorization": "Bearer t0k", "Content-Type": "application/json", "Connection": "close"}
    base.update(headers if headers is not None else {"Content-Length": str(len(body))})
    lines = "".join(f"{k}: {v}\r\n" for k, v in base.items() if v is not None)
    return f"POST /v1/traces HTTP/1.1\r\n{lines}\r\n".encode() + body


def status(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1])


def test_a_good_request_is_stored(served):
    server, store = served
    assert status(exchange(server.port, request(otlp_json("1" * 32, tool_calls=1)))) == 200
    assert len(store.spans_of_trace("1" * 32)) == 2


@pytest.mark.parametrize("length", ["-1", "abc", "1e3"])
def test_a_bad_content_length_is_refused_and_nothing_is_stored(served, length):
    server, store = served
    body = otlp_json("2" * 32, tool_calls=1)
    reply = exchange(server.port, request(body, headers={"Content-Length": length}))
    assert status(reply) == 400
    assert store.spans_of_trace("2" * 32) == []


def test_a_chunked_body_is_read_and_stored(served):
    server, store = served
    body = otlp_json("3" * 32, tool_calls=2)
    chunked = (
        b"".join(f"{len(part):x}\r\n".encode() + part + b"\r\n" for part in (body[:100], body[100:])) + b"0\r\n\r\n"
    )
    assert status(exchange(server.port, request(chunked, headers={"Transfer-Encoding": "chunked"}))) == 200
    assert len(store.spans_of_trace("3" * 32)) == 3


def test_a_chunked_body_over_the_limit_is_refused(served):
    server, _ = served
    part = b"x" * 60_000
    chunked = (f"{len(part):x}\r\n".encode() + part + b"\r\n") * 3 + b"0\r\n\r\n"
    assert status(exchange(server.port, request(chunked, headers={"Transfer-Encoding": "chunked"}))) == 413


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Content-Type": None}, 415),  # a browser's no-cors "simple" request cannot set a JSON/protobuf type
        ({"Content-Type": "text/plain"}, 415),
        ({"Authorization": None}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
    ],
)
def test_refusals_keep_the_keep_alive_connection_in_step(served, headers, expected):
    """A refused request's body is not mistaken for the next request on the same connection."""
    server, store = served
    body = otlp_json("4" * 32, tool_calls=1)
    first = request(body, headers={"Content-Length": str(len(body)), "Connection": "keep-alive", **headers})
    second = request(otlp_json("5" * 32, tool_calls=1))
    reply = exchange(server.port, first + second)
    codes = [int(line.split(b" ", 2)[1]) for line in reply.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]
    assert codes[0] == expected
    if len(codes) > 1:  # the server kept the connection: the second request must be read as a request
        assert codes[1] == 200
        assert len(store.spans_of_trace("5" * 32)) == 2
    assert store.spans_of_trace("4" * 32) == []


def test_a_host_that_is_not_loopback_is_refused_on_a_loopback_collector(served):
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 still sends Host: evil.example."""
    server, store = served
    reply = exchange(server.port, request(otlp_json("6" * 32, tool_calls=1), host="evil.example:4318"))
    assert status(reply) == 403
    assert store.spans_of_trace("6" * 32) == []
    assert status(exchange(server.port, request(otlp_json("7" * 32, tool_calls=1), host="localhost:4318"))) == 200


@pytest.mark.parametrize("body", [b"[]", b'"x"', b"[" * 5000 + b"]" * 5000, b'{"resourceSpans": ' + b"[" * 3000])
def test_json_that_is_not_an_export_request_is_a_400(served, body):
    server, _ = served
    assert status(exchange(server.port, request(body))) == 400


def test_a_client_that_stops_sending_is_cut_off_and_holds_no_thread(served):
    server, _ = served
    threads_before = threading.active_count()
    stalled = []
    for _ in range(100):
        conn = socket.create_connection(("127.0.0.1", server.port))
        conn.sendall(request(b"", headers={"Content-Length": "1000"}))  # headers, then no body
        stalled.append(conn)
    time.sleep(0.3)
    assert threading.active_count() - threads_before < 10  # an event loop, not a thread per connection
    replies = [read_all(conn, 5.0) for conn in stalled]
    assert all(status(r) == 408 for r in replies), {status(r) for r in replies if r}
    for conn in stalled:
        conn.close()


def test_shutdown_is_not_held_by_an_idle_keep_alive_connection(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'k.db'}")
    server = HttpServer(Ingestor(store), "127.0.0.1", 0).start()
    while not server.server.started:
        time.sleep(0.02)
    idle = socket.create_connection(("127.0.0.1", server.port))
    body = otlp_json("8" * 32, tool_calls=1)
    idle.sendall(
        request(body, headers={"Content-Length": str(len(body)), "Connection": "keep-alive"}, host="localhost")
    )
    assert b"200" in idle.recv(4096).split(b"\r\n")[0]
    started = time.monotonic()
    server.shutdown(timeout=15)
    assert time.monotonic() - started < 5  # the idle connection is closed, not waited for
    idle.close()
    store.close()


def test_a_port_in_use_is_a_configuration_error(served):
    server, store = served
    with pytest.raises(ConfigError, match="cannot listen"):
        HttpServer(Ingestor(store), "127.0.0.1", server.port)


def test_content_length_beside_transfer_encoding_is_refused(served):
    """Both framings on one request is how requests are smuggled past a proxy that reads the other one."""
    server, store = served
    body = otlp_json("5" * 32, tool_calls=1)
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    headers = {"Transfer-Encoding": "chunked", "Content-Length": str(len(body))}
    assert status(exchange(server.port, request(chunked, headers=headers))) == 400
    assert store.spans_of_trace("5" * 32) == []


def test_a_host_with_a_loopback_prefix_is_not_loopback(served):
    server, store = served
    reply = exchange(server.port, request(otlp_json("6" * 32, tool_calls=1), host=f"127.0.0.1:{server.port}@evil.test"))
    assert status(reply) == 403
    assert store.spans_of_trace("6" * 32) == []


def test_slowloris_connections_are_closed_and_real_requests_are_served_meanwhile(tmp_path):
    """300 connections dribbling a request head: each is closed once the head deadline passes, and a real
    export and /healthz are answered while they hang on."""
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    server = HttpServer(Ingestor(store, token="t0k"), "127.0.0.1", 0, header_seconds=1.5).start()
    slow: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 10
        while not server.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        for _ in range(300):
            conn = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            conn.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(conn)
        assert status(exchange(server.port, request(otlp_json("7" * 32, tool_calls=1)))) == 200
        health = exchange(server.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert status(health) == 200
        time.sleep(2.5)
        closed = 0
        for conn in slow:
            try:
                conn.sendall(b"X-Slow: 1\r\n")
                conn.settimeout(2)
                closed += conn.recv(1) == b""
            except OSError:
                closed += 1
        assert closed == len(slow)
        assert len(store.spans_of_trace("7" * 32)) == 2
    finally:
        for conn in slow:
            conn.close()
        server.shutdown(timeout=15)
        store.close()


def test_a_huge_request_head_is_refused(served):
    server, store = served
    body = otlp_json("8" * 32, tool_calls=1)
    headers = {"Content-Length": str(len(body)), "X-Big": "a" * 100 * 1024}
    assert status(exchange(server.port, request(body, headers=headers))) == 431
    assert store.spans_of_trace("8" * 32) == []
