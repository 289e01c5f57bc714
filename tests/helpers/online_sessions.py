"""Turns of made-up sessions, stored directly, and a wait for what online scoring stores: what the tests of
whole-session evaluators share."""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime, timedelta

from toolpath.model import Invocation, ToolCall

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def turn(session: str, n: int, calls: int = 1, prompt: str | None = None, **fields) -> Invocation:
    """Turn ``n`` of ``session``: ``calls`` tool calls, started ``n`` minutes after :data:`START`."""
    values = {
        "invocation_id": hashlib.sha256(f"{session}/{n}".encode()).hexdigest()[:16],
        "session_id": session,
        "agent_name": "bot",
        "prompt": prompt or f"{session} request {n}",
        "response": "ok",
        "tool_calls": [ToolCall(name="lookup", args={"n": k}) for k in range(calls)],
        "trace_id": hashlib.sha256(f"{session}/{n}/trace".encode()).hexdigest()[:32],
        "started_at": START + timedelta(minutes=n),
        "latency_seconds": 1.0,
    }
    return Invocation(**{**values, **fields})


def wait_for(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False
