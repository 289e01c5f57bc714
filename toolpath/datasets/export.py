"""Recorded traffic as eval data: an ADK ``*.evalset.json`` (one eval case per session, one conversation turn
per invocation, the recorded tool calls as ``tool_uses`` — or, where more than one agent acted in a turn, as the
``invocation_events`` of the agents that made them — and the recorded answers as final responses) or
Vertex-style JSONL rows (``prompt``, ``reference``, ``reference_trajectory``), or JSONL rows of Google's
``agent_data`` (one multi-turn trace per session: :mod:`toolpath.datasets.agent_data`). All load back with
:mod:`toolpath.datasets` and run with ``toolpath eval``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from toolpath.datasets.agent_data import agent_data_rows
from toolpath.model import Invocation, Session, ToolCall
from toolpath.private_files import write_private

ANNOTATIONS_KEY = "annotations"
"""The key of a case's reviewers' annotations in an exported eval set (ADK's ``EvalCase`` keeps extra keys)."""


def to_evalset(
    sessions: Sequence[Session], eval_set_id: str, annotations: Mapping[str, Sequence[Mapping[str, Any]]] | None = None
) -> dict[str, Any]:
    """``sessions`` as an ADK eval set, a case each; with ``annotations`` (invocation id -> its reviewers'
    annotations, as dicts), each case lists those of its turns under :data:`ANNOTATIONS_KEY`, each naming its
    turn (from 1)."""
    cases: list[dict[str, Any]] = []
    for session in sessions:
        conversation = [_turn(inv) for inv in session.invocations]
        created = _seconds(session.invocations[0]) if session.invocations else 0.0
        case = {
            "eval_id": _safe_id(session.session_id),
            "conversation": conversation,
            "session_input": {"app_name": session.agent_name or "agent", "user_id": "user", "state": {}},
            "creation_timestamp": created,
        }
        notes = [
            {"turn": n, **note}
            for n, inv in enumerate(session.invocations, start=1)
            for note in (annotations or {}).get(inv.invocation_id, [])
        ]
        if notes:
            case[ANNOTATIONS_KEY] = notes
        cases.append(case)
    return {
        "eval_set_id": eval_set_id,
        "name": eval_set_id,
        "description": f"{len(cases)} recorded session(s) exported by toolpath",
        "eval_cases": cases,
        "creation_timestamp": max((c["creation_timestamp"] for c in cases), default=0.0),
    }


def _turn(inv: Invocation) -> dict[str, Any]:
    return {
        "invocation_id": inv.invocation_id,
        "user_content": {"role": "user", "parts": [{"text": inv.prompt or ""}]},
        "final_response": {"role": "model", "parts": [{"text": inv.response or ""}]},
        # the events form only where it says more than tool_uses can: two agents or more acted in the turn
        "intermediate_data": _events(inv) if len(_agents(inv)) > 1 else _tool_uses(inv),
        "creation_timestamp": _seconds(inv),
    }


def _tool_uses(inv: Invocation) -> dict[str, Any]:
    return {
        "tool_uses": [_use(call) for call in inv.tool_calls],
        "tool_responses": [_function_response(call) for call in inv.tool_calls],
        "intermediate_responses": [[author, [{"text": text}]] for author, text in inv.intermediate_responses],
    }


def _agents(inv: Invocation) -> set[str | None]:
    """The agents that made a call, answered or spoke in the turn (``None``: not known)."""
    return {
        *(call.agent_name for call in inv.tool_calls),
        *(author for author, _ in inv.intermediate_responses),
        inv.answered_by,
    } - {None}


def _events(inv: Invocation) -> dict[str, Any]:
    """ADK's ``invocation_events`` form, which names each event's author: the intermediate responses, each call
    and its response as events of the agent that made it, and the final response's event (its text is the
    turn's ``final_response``, so it holds none, as ADK records it) of the agent that answered."""
    agent = inv.agent_name or "agent"
    events: list[dict[str, Any]] = [
        {"author": author, "content": {"role": "model", "parts": [{"text": text}]}}
        for author, text in inv.intermediate_responses
    ]
    for call in inv.tool_calls:
        author = call.agent_name or agent
        events.append({"author": author, "content": {"role": "model", "parts": [{"function_call": _use(call)}]}})
        response = {"function_response": _function_response(call)}
        events.append({"author": author, "content": {"role": "user", "parts": [response]}})
    if inv.answered_by:
        events.append({"author": inv.answered_by})
    return {"invocation_events": events}


def _use(call: ToolCall) -> dict[str, Any]:
    return {"id": call.call_id, "name": call.name, "args": call.args or {}}


def _function_response(call: ToolCall) -> dict[str, Any]:
    return {"id": call.call_id, "name": call.name, "response": _response(call.result, call.error)}


def _response(result: Any, error: str | None) -> dict[str, Any]:
    if error is not None:
        return {"error": error}
    return result if isinstance(result, dict) else {"result": result}


def _seconds(inv: Invocation) -> float:
    return inv.started_at.timestamp() if inv.started_at is not None else 0.0


def _safe_id(session_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)


def to_jsonl_rows(sessions: Sequence[Session]) -> list[dict[str, Any]]:
    return [
        {
            "case_id": f"{session.session_id}#{turn}",
            "session_id": session.session_id,
            "prompt": inv.prompt,
            "reference": inv.response,
            "reference_trajectory": [_item(call) for call in inv.tool_calls],
            **({"answered_by": inv.answered_by} if inv.answered_by else {}),
        }
        for session in sessions
        for turn, inv in enumerate(session.invocations, start=1)
    ]


def _item(call: ToolCall) -> dict[str, Any]:
    """The Vertex form, plus the agent that made the call (what a metric's ``agent=`` selects by) when known."""
    item = call.to_vertex()
    if call.agent_name is not None:
        item["agent_name"] = call.agent_name
    return item


def write_export(
    sessions: Sequence[Session],
    fmt: str,
    output: Path,
    *,
    eval_set_id: str | None = None,
    annotations: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> int:
    """Write ``sessions`` as ``evalset`` (with reviewers' ``annotations``, :func:`to_evalset`), ``jsonl`` or
    ``agent_data`` (JSONL); returns the number of turns written."""
    if fmt == "evalset":
        set_id = eval_set_id or _safe_id(output.name.removesuffix(".json").removesuffix(".evalset"))
        document = to_evalset(sessions, set_id, annotations)
        write_private(output, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    else:
        rows = agent_data_rows(sessions) if fmt == "agent_data" else to_jsonl_rows(sessions)
        write_private(output, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return sum(len(s.invocations) for s in sessions)
