"""``toolpath collect`` as a real process (kill -9 and SIGTERM must reach a real service), fed over HTTP; and the
service in this process."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from toolpath.collector.service import CollectorService, ServiceOptions
from toolpath.store.store import Store

TOKEN = "s3cret"
"""The bearer token every collector started here requires."""


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` ports free on loopback, distinct: each socket is held until all are bound (a port let go at once can
    be the kernel's next answer, and a collector given one port twice would serve gRPC on its HTTP port)."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


class Collector:
    def __init__(self, tmp_path: Path, store_url: str | None = None, *extra: str) -> None:
        self.extra = extra
        self.db = tmp_path / "collected.db"
        self.store_url = store_url or f"sqlite:///{self.db}"
        self.http_port, self.grpc_port = free_ports(2)
        self.process: subprocess.Popen | None = None
        self.first_line = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def start(self) -> Collector:
        return self.launch().ready()

    def launch(self) -> Collector:
        """Start the process without waiting for it to answer (several collectors start faster side by side)."""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "toolpath.cli", "collect", "--store", self.store_url,
             "--http-port", str(self.http_port), "--grpc-port", str(self.grpc_port), "--token", TOKEN, *self.extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        return self

    def ready(self) -> Collector:
        """Wait until the launched process answers its health check."""
        assert self.process is not None
        deadline = time.monotonic() + 60  # several collectors starting at once on a busy machine
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1) as reply:
                    if reply.status == 200:
                        # The service answers before it has installed its SIGTERM handler; its first line comes
                        # just before that, so a test that stops it at once still stops a running service.
                        self.first_line = self.process.stdout.readline() if self.process.stdout else ""
                        return self
            except OSError:
                time.sleep(0.1)
        self.process.kill()  # its error output ends only when it does
        raise RuntimeError(f"collector did not start: {self.process.communicate()[1]}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=30)

    def post(
        self, body: bytes, content_type: str = "application/x-protobuf", token: str | None = TOKEN, **headers: str
    ) -> tuple[int, bytes, dict[str, str]]:
        return post_traces(self.url, body, content_type, token, **headers)

    def store(self) -> Store:
        return Store(self.store_url)


@contextlib.contextmanager
def serving(store: Store, online: Any = None, **options: Any) -> Iterator[CollectorService]:
    """A :class:`CollectorService` in this process (OTLP/HTTP on a free port, no gRPC), started from a thread so
    it leaves the test runner's signal handlers alone."""
    options = {"http_port": free_port(), "grpc_port": 0, **options}
    service = CollectorService(store, ServiceOptions(**options), online=online)
    starter = threading.Thread(target=service.start)
    starter.start()
    starter.join()
    try:
        yield service
    finally:
        service.shutdown()


def post_traces(
    url: str, body: bytes, content_type: str = "application/x-protobuf", token: str | None = TOKEN, **headers: str
) -> tuple[int, bytes, dict[str, str]]:
    """``POST {url}/v1/traces``: status, body and headers of the reply (an error status too)."""
    request = urllib.request.Request(f"{url}/v1/traces", data=body, method="POST")
    request.add_header("Content-Type", content_type)
    for key, value in headers.items():
        request.add_header(key.replace("_", "-"), value)
    return _exchange(request, token)


def http_get(url: str, token: str | None = None) -> tuple[int, bytes, dict[str, str]]:
    return _exchange(urllib.request.Request(url), token)


def _exchange(request: urllib.request.Request, token: str | None) -> tuple[int, bytes, dict[str, str]]:
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read(), dict(reply.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


_HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def hold_write_lock(db: Path | str) -> subprocess.Popen:
    """Another process holding the SQLite store ``db``'s write lock until :func:`release_write_lock`."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def release_write_lock(holder: subprocess.Popen) -> None:
    if holder.poll() is None:
        holder.communicate("\n", timeout=10)
