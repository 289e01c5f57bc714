"""``toolpath collect --workers N`` deals OTLP/HTTP connections to its workers in turn: an exporter's few keep-alive
connections spread evenly over the workers (they do not all land on the first to wake), a worker that is gone is
passed over, and every dealt connection is served."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import time
from collections import Counter
from pathlib import Path

from tests.helpers import SPANS
from tests.helpers.collector import TOKEN, Collector
from toolpath.collector.handoff import Dealer, channel_pair


def _listener() -> socket.socket:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    return listener


def _dealt(channel: socket.socket) -> list[socket.socket]:
    """The connections waiting on a worker's end of its channel."""
    channel.setblocking(False)
    taken = []
    while True:
        try:
            _, descriptors, _, _ = socket.recv_fds(channel, 16, 16)
        except BlockingIOError:
            return taken
        taken += [socket.socket(fileno=d) for d in descriptors]


def test_connections_are_dealt_in_turn_and_a_gone_worker_is_passed_over():
    listener = _listener()
    pairs = [channel_pair() for _ in range(3)]
    dealer = Dealer(listener, [ours for ours, _ in pairs])
    clients = [socket.create_connection(listener.getsockname()) for _ in range(6)]
    for _ in clients:
        conn, _ = listener.accept()
        with conn:
            assert dealer.deal(conn)
    taken = [_dealt(theirs) for _, theirs in pairs]
    assert [len(t) for t in taken] == [2, 2, 2]
    taken[0][0].sendall(b"ping")  # a dealt descriptor is a client's connection itself
    assert sorted(_received(client) for client in clients) == [b""] * 5 + [b"ping"]

    pairs[1][1].close()  # the second worker died
    late = [socket.create_connection(listener.getsockname()) for _ in range(4)]
    for _ in late:
        conn, _ = listener.accept()
        with conn:
            assert dealer.deal(conn)
    assert [len(_dealt(pairs[i][1])) for i in (0, 2)] == [2, 2]
    for sock in [listener, *clients, *late, *(s for t in taken for s in t), *(s for p in pairs for s in p)]:
        sock.close()


def _received(client: socket.socket) -> bytes:
    client.settimeout(0.2)
    try:
        return client.recv(4)
    except TimeoutError:
        return b""


def test_no_worker_to_take_a_connection_is_said():
    listener = _listener()
    ours, theirs = channel_pair()
    theirs.close()
    client = socket.create_connection(listener.getsockname())
    conn, _ = listener.accept()
    with conn:
        assert not Dealer(listener, [ours, None]).deal(conn)
    for sock in (listener, ours, client):
        sock.close()


def _workers(parent: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                children.append(int(entry))
    return children


def _established_to(port: int) -> set[str]:
    """Socket inodes of the established TCP connections whose local port is ``port``."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == "01":
            inodes.add(fields[9])
    return inodes


def test_a_collectors_keep_alive_connections_spread_evenly_over_its_workers(tmp_path):
    collector = Collector(tmp_path, None, "--workers", "2").start()
    body = (SPANS / "otel-genai-langchain.shared.otlp.pb").read_bytes()
    try:
        connections = [http.client.HTTPConnection("127.0.0.1", collector.http_port, timeout=30) for _ in range(4)]
        for conn in connections:  # all open before any is used, as an exporter's pool opens them
            conn.connect()
        for conn in connections:
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf",
                                                      "Authorization": f"Bearer {TOKEN}"})  # fmt: skip
            reply = conn.getresponse()
            reply.read()
            assert reply.status == 200
        open_here = _established_to(collector.http_port)
        held = Counter()
        for pid in _workers(collector.process.pid):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:[") and target[8:-1] in open_here:
                    held[pid] += 1
        assert sorted(held.values()) == [2, 2]
        for conn in connections:
            conn.close()
    finally:
        collector.stop()
    assert collector.store().counts()["spans"] == 13


def _serving_workers(parent: int) -> set[int]:
    """The parent's worker processes (not multiprocessing's resource tracker)."""
    found = set()
    for pid in _workers(parent):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in command:
            found.add(pid)
    return found


def test_a_killed_worker_is_replaced_and_every_connection_is_still_served(tmp_path):
    collector = Collector(tmp_path, None, "--workers", "2").start()
    body = (SPANS / "otel-genai-langchain.shared.otlp.pb").read_bytes()
    try:
        before = _serving_workers(collector.process.pid)
        assert len(before) == 2
        victim = min(before)
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = _serving_workers(collector.process.pid)
            if victim not in now and len(now) == 2:
                break
            time.sleep(0.1)
        assert victim not in now and len(now) == 2
        # each on a new connection, dealt in turn: none goes to the dead worker's channel and hangs
        assert [collector.post(body)[0] for _ in range(6)] == [200] * 6
    finally:
        collector.stop()
    assert collector.store().counts()["spans"] == 13
