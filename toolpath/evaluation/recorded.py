"""Recorded traffic as dataset rows: one row per stored invocation, for re-scoring without re-running."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from toolpath.metrics.base import RESPONSE_NOTE
from toolpath.metrics.rows import invocation_row
from toolpath.model import Session
from toolpath.store.store import Store
from toolpath.tracer import semconv as sc


def rows_from_store(
    store: Store,
    *,
    session_id: str | None = None,
    agent_name: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Rows with ``prompt``, ``response``, ``predicted_trajectory`` (failed calls carry ``error``),
    ``latency_in_seconds``, ``failure`` and the ids linking back to the store; ``response_note`` when the response
    is null because the agent's answer had no text (the response metrics give that reason, and the run shows it)."""
    since_ns = min(int(since.timestamp() * 1e9), 2**63 - 1) if since is not None else None  # past 2262: none
    invocations = store.list_invocations(session_id=session_id, agent_name=agent_name, since_ns=since_ns, limit=limit)
    rows = []
    for inv in invocations:
        row = invocation_row(inv, calls_dropped(inv.attributes))
        note = inv.attributes.get(sc.TOOLPATH_RESPONSE_NOT_TEXT)
        if row.get("response") is None and isinstance(note, str) and note:
            row[RESPONSE_NOTE] = note
        rows.append(row)
    return rows


def calls_dropped(attributes: dict[str, Any]) -> int:
    """The tool calls a storage cap left out of a stored invocation (its ``toolpath.tool_calls_dropped``)."""
    value = attributes.get(sc.TOOLPATH_TOOL_CALLS_DROPPED)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def recorded_sessions(
    store: Any,
    *,
    session_ids: Sequence[str] = (),
    agent_name: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
) -> list[Session]:
    """The recorded sessions to replay: the ids given, or those matching the filters (oldest first)."""
    if session_ids:
        found = [store.get_session(s) for s in session_ids]
        missing = [s for s, session in zip(session_ids, found, strict=True) if session is None]
        if missing:
            from toolpath.errors import ConfigError

            raise ConfigError(f"no recorded session {', '.join(map(repr, missing))} in the store")
        return [s for s in found if s is not None]
    listed = store.list_sessions(agent_name=agent_name, limit=None)
    sessions = []
    for row in sorted(listed, key=lambda r: (r["first_started_at"] or "", r["session_id"])):
        if row["session_id"].startswith("replay-"):
            continue  # replays of replays are not what anyone means
        session = store.get_session(row["session_id"])
        if session is None or not session.invocations:
            continue
        last = session.invocations[-1].started_at
        if since is not None and last is not None and last < since:
            continue
        sessions.append(session)
        if limit is not None and len(sessions) >= limit:
            break
    return sessions
