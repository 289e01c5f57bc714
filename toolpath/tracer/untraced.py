"""Calls an instrumentation let run untraced because tracing them failed. The agent's call always goes on; the
failure is logged where it happens and counted here, so ``toolpath.flush()`` and ``toolpath.stats()`` say a
record is incomplete instead of reporting everything delivered."""

from __future__ import annotations

import logging
import sys
import threading

_lock = threading.Lock()
_count = 0


def log_and_count(logger: logging.Logger, message: str, *args: object) -> None:
    """Log ``message`` (with the exception being handled) and count one untraced call. A ``RecursionError`` or
    ``MemoryError`` is named on the line, without its traceback: tracing ran out of stack or memory because the
    agent did (a tool recursing to the limit fails every span on the way back up), and formatting a traceback as
    deep as the stack at every level would cost what the calls never did."""
    global _count
    failure = sys.exc_info()[1]
    if isinstance(failure, RecursionError | MemoryError):
        logger.warning(message + " (%s)", *args, type(failure).__name__)
    else:
        logger.warning(message, *args, exc_info=True)
    with _lock:
        _count += 1


def count() -> int:
    """Calls that ran untraced in this process so far."""
    return _count


__all__ = ["count", "log_and_count"]
