"""Calls an instrumentation let run untraced because tracing them failed. The agent's call always goes on; the
failure is logged where it happens and counted here, so ``toolpath.flush()`` and ``toolpath.stats()`` say a
record is incomplete instead of reporting everything delivered."""

from __future__ import annotations

import logging
import threading

_lock = threading.Lock()
_count = 0


def log_and_count(logger: logging.Logger, message: str, *args: object) -> None:
    """Log ``message`` (with the exception being handled) and count one untraced call."""
    global _count
    logger.warning(message, *args, exc_info=True)
    with _lock:
        _count += 1


def count() -> int:
    """Calls that ran untraced in this process so far."""
    return _count


__all__ = ["count", "log_and_count"]
