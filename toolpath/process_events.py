"""What ``toolpath.init()`` does when the process is told to stop or forks, so that no traced run is lost silently.

- **SIGTERM** (what ``timeout``, CI runners, Kubernetes and systemd send): when the application has no handler of
  its own, toolpath's flushes what was traced (bounded), then ends the process as SIGTERM would have (exit by the
  signal). An application that handles SIGTERM itself keeps its handler and calls ``toolpath.flush()`` in it.
- **Exit**: an ``atexit`` hook flushes; in a ``multiprocessing`` worker, which leaves by ``os._exit``, a finalizer of
  multiprocessing's own does.
- **fork()** (multiprocessing's fork start method, gunicorn's or celery's prefork workers): the child gets a fresh
  collector worker thread and store connections, as the OpenTelemetry SDK does for its batch processor; spans the
  parent had queued stay the parent's to write.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["watch_process"]

STOP_SECONDS = 5.0
"""How long a SIGTERM or a worker's exit waits for what was traced to be written."""

_stop: Callable[[float], None] | None = None
_child: Callable[[], None] | None = None
_installed_handler: Any = None
_hooks_registered = False


def watch_process(stop: Callable[[float], None], in_child: Callable[[], None]) -> None:
    """From now on: ``stop(seconds)`` (flush and shut down) at exit and on an unhandled SIGTERM; ``in_child()`` in
    a forked child, before anything else runs there. Called by each ``toolpath.init()``; the last call's functions
    are the ones called."""
    global _stop, _child, _hooks_registered, _installed_handler
    _stop, _child = stop, in_child
    if not _hooks_registered:
        atexit.register(_at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork)
        _hooks_registered = True
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)
        _installed_handler = _on_sigterm


def unwatch_process() -> None:
    """``toolpath.shutdown()``: SIGTERM back to its default when toolpath's handler is still the one installed."""
    global _stop, _installed_handler
    _stop = None
    if _stopping:  # the process is ending: a SIGTERM now must find toolpath's handler, not the default's death
        return
    if (
        _installed_handler is not None
        and threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) is _installed_handler
    ):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _installed_handler = None


_stopping = False
"""A stop is under way on this thread's stack: a SIGTERM arriving during it lets it finish (the process is ending)."""


def _at_exit() -> None:
    global _stopping
    if _stop is not None and not _stopping:
        _stopping = True
        _stop(STOP_SECONDS)


def _on_sigterm(signum: int, frame: object) -> None:
    """Flush, then die of SIGTERM as the default action would (the exit status says so). A SIGTERM that comes while
    the process is already stopping (a multiprocessing worker flushing at its exit, which its pool's ``terminate``
    signals) lets that stop finish; one that comes during this flush waits for it (it is bounded)."""
    global _stopping
    if _stopping:
        return
    _stopping = True
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        if _stop is not None:
            _stop(STOP_SECONDS)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


class _Anchor:
    """What multiprocessing's after-fork registry holds our hook by (it keeps weak references)."""


_ANCHOR = _Anchor()


def _after_fork() -> None:
    global _stopping
    _stopping = False
    if _child is None or _stop is None:
        return
    _child()
    multiprocessing_util = sys.modules.get("multiprocessing.util")
    if multiprocessing_util is not None:
        # a multiprocessing worker clears its finalizers, runs its after-fork hooks, works, runs its finalizers and
        # leaves by os._exit (no atexit): a finalizer made by an after-fork hook is the one that runs at its end
        multiprocessing_util.register_after_fork(_ANCHOR, _finalize_at_worker_exit)


def _finalize_at_worker_exit(_: object) -> None:
    from multiprocessing import util

    util.Finalize(None, _at_exit, exitpriority=100)
