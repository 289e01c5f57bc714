"""Connections one process accepts and others serve: ``toolpath collect --workers N``'s parent accepts every
OTLP/HTTP connection and deals them to its workers in turn, over Unix sockets (``SCM_RIGHTS``).

Workers that accept from one shared socket do not share the load: the first to wake takes every connection
waiting (an event loop accepts up to its backlog at once), so an exporter's few keep-alive connections often land
3-1 or 4-0 and one worker queues requests while another sits idle. Dealt in turn they spread evenly (Node's
cluster module deals connections the same way, for the same reason).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable

logger = logging.getLogger("toolpath.collector.handoff")
_AT_ONCE = 16
_ACCEPT_WAIT = 0.25
"""How often the dealer's accept looks up to see whether it is told to stop."""


def channel_pair() -> tuple[socket.socket, socket.socket]:
    """The dealer's end and a worker's end of a channel: a byte per connection, its descriptor attached (a stream
    socket: sequenced packets are not on every Unix)."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


class Dealer:
    """Accepts on ``listener`` from a thread and hands each connection to the next worker's channel; a worker that
    cannot take it (gone, or its channel full) is passed over. ``channels[i]`` may be replaced (a restarted
    worker) or ``None`` (none yet) while it runs."""

    def __init__(self, listener: socket.socket, channels: list[socket.socket | None]) -> None:
        self.listener = listener
        self.channels = channels
        self._next = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="toolpath-dealer", daemon=True)

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    def start(self) -> Dealer:
        self.listener.settimeout(_ACCEPT_WAIT)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Accept no more (connections still waiting in the backlog are reset when the listener closes)."""
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError as exc:  # out of descriptors, a connection reset before it was accepted
                logger.warning("toolpath: accepting a connection failed: %s", exc)
                time.sleep(0.05)
                continue
            with conn:  # this process's copy: the worker has its own
                if not self.deal(conn):
                    logger.warning("toolpath: no worker could take a connection; it is closed (the client retries)")

    def deal(self, conn: socket.socket) -> bool:
        """Hand ``conn`` to the next worker that takes it; ``False`` when none does."""
        count = len(self.channels)
        for _ in range(count):
            channel = self.channels[self._next % count]
            self._next = (self._next + 1) % count
            if channel is None:
                continue
            try:
                socket.send_fds(channel, [b"c"], [conn.fileno()], socket.MSG_DONTWAIT)
            except OSError:  # gone (the parent restarts it) or not reading: the next one
                continue
            return True
        return False


def take_connections(
    loop: asyncio.AbstractEventLoop, channel: socket.socket, protocol: Callable[[], asyncio.Protocol]
) -> Callable[[], None]:
    """Serve every connection dealt on ``channel`` with a new ``protocol()``, in ``loop``; returns the function that
    stops taking them."""
    channel.setblocking(False)
    starting: set[asyncio.Task[object]] = set()  # held until each connection is made (the loop holds tasks weakly)

    def started(task: asyncio.Task[object]) -> None:
        starting.discard(task)
        if not task.cancelled() and task.exception() is not None:  # closed by the client before it was served
            logger.debug("toolpath: a dealt connection could not be served: %s", task.exception())

    def take() -> None:
        while True:
            try:
                # at most 16 bytes, so at most 16 descriptors: none is cut off
                message, descriptors, _, _ = socket.recv_fds(channel, _AT_ONCE, _AT_ONCE)
            except (BlockingIOError, InterruptedError):
                return
            if not message and not descriptors:  # the dealer's end closed: no more will come
                loop.remove_reader(channel.fileno())
                return
            for descriptor in descriptors:
                conn = socket.socket(fileno=descriptor)
                conn.setblocking(False)
                task = loop.create_task(loop.connect_accepted_socket(protocol, conn))
                starting.add(task)
                task.add_done_callback(started)

    def stop() -> None:
        loop.remove_reader(channel.fileno())

    loop.add_reader(channel.fileno(), take)
    return stop


__all__ = ["Dealer", "channel_pair", "take_connections"]
