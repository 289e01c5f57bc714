"""The ports people's tools reach (``toolpath ui``, ``toolpath mcp --transport http``) served as their commands serve
them — uvicorn with :func:`toolpath.cli.ui_command.door_config`, on a free port of 127.0.0.1, in a thread — and
raw HTTP/1.1 to talk to them: every header as written, none added."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from toolpath.cli.ui_command import door_config
from toolpath.collector.http import bind


@contextlib.contextmanager
def door(
    app: Any,
    *,
    header_seconds: float | None = None,
    max_connections: int | None = None,
    lifespan: Literal["auto", "on", "off"] = "off",
) -> Iterator[int]:
    """``app`` served by uvicorn under ``door_config`` on a free port of 127.0.0.1; yields the port."""
    import uvicorn

    sock = bind("127.0.0.1", 0)
    limits: dict[str, Any] = {"header_seconds": header_seconds}
    if max_connections is not None:
        limits["max_connections"] = max_connections
    server = uvicorn.Server(door_config(app, lifespan=lifespan, **limits))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the server did not start"
    try:
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()


@dataclass
class Reply:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        found = [value for key, value in self.headers if key.lower() == name.lower()]
        assert len(found) <= 1, found
        return found[0] if found else None

    def all(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name.lower()]


def send(port: int, method: str, target: str, headers: dict[str, str], body: bytes = b"") -> Reply:
    """One request on a new connection, ``headers`` as given (``Host`` too: a test writes it), and its reply."""
    lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    length = f"Content-Length: {len(body)}\r\n" if body or method == "POST" else ""
    raw = f"{method} {target} HTTP/1.1\r\n{lines}{length}Connection: close\r\n\r\n".encode("latin-1") + body
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(raw)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    pairs = [tuple(line.split(": ", 1)) for line in header_lines]
    return Reply(int(status_line.split(" ", 2)[1]), [(k, v) for k, v in pairs], rest)


def dribble(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that have sent a request line and one header, and no more."""
    held = []
    for _ in range(count):
        conn = socket.create_connection(("127.0.0.1", port), timeout=5)
        conn.sendall(f"GET /sessions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        held.append(conn)
    return held


def closed(conn: socket.socket) -> bool:
    """Whether the server has closed ``conn`` (one more header sent, then end of stream or an error)."""
    try:
        conn.sendall(b"X-Slow: 1\r\n")
        conn.settimeout(5)
        return conn.recv(1) == b""
    except TimeoutError:  # still open: nothing came back
        return False
    except OSError:  # reset: closed
        return True
