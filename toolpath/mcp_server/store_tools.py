"""What ``toolpath mcp`` offers a coding assistant, as plain functions over a store: list and search sessions, show a
session's trajectory, score a session or an eval set, and (only when started with ``--allow-write``) add a session
to an eval set. Each returns JSON-ready data; bad input is a :class:`~toolpath.errors.ToolpathError` whose message
the client receives as the tool's error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolpath.errors import ConfigError
from toolpath.evaluation.catalog import SpecOrigin, resolve_metric
from toolpath.evaluation.evalsets.files import EVALSET_SUFFIX
from toolpath.evaluation.evalsets.folder import EvalSetFiles
from toolpath.evaluation.recorded import rows_from_store
from toolpath.evaluation.runner import evaluate
from toolpath.evaluation.scoring import request_judge
from toolpath.model import Invocation, Session
from toolpath.store.browse import session_page
from toolpath.store.session_filter import SessionFilter
from toolpath.store.store import Store

DEFAULT_SESSION_METRICS = ("tool_error_rate", "error_recovery", "redundant_tool_calls", "tool_loop_detected")
"""What a session is scored with when the caller names no metric: the behaviour metrics, which need no reference."""
MAX_LIMIT = 200
MAX_JUDGE_CALLS = 32
"""The most judge calls one ``score_session`` may make (samples × turns), as one ``evaluateInstances`` request."""


@dataclass
class StoreTools:
    """The tools over one store; ``evalsets``: the folder of the eval sets they read (and, with ``allow_write``,
    write); ``agents``: the agents (name -> target) an eval set may be run against, and no other."""

    store: Store
    evalsets: Path
    allow_write: bool = False
    agents: Mapping[str, Any] = field(default_factory=dict)

    def list_sessions(self, agent_name: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """Sessions, newest first, with their invocation and failure counts."""
        return self.store.list_sessions(agent_name=agent_name, limit=_limit(limit))

    def search_sessions(
        self, text: str | None = None, tool: str | None = None, failures: bool = False, limit: int = 20
    ) -> list[dict[str, Any]]:
        """Sessions, newest first, with ``text`` in a prompt, response, tool name, argument or result; that called
        ``tool``; or (``failures``) with a failed turn or tool call."""
        where = SessionFilter(text=text or None, tool=tool or None, failures=failures)
        return session_page(self.store, where, limit=_limit(limit), count=False).rows

    def show_trajectory(self, session_id: str) -> dict[str, Any]:
        """A session's turns: prompt, response, each tool call (name, arguments, result, error, agent) in order."""
        session = self._session(session_id)
        return {
            "session_id": session.session_id,
            "agent_name": session.agent_name,
            "turns": [_turn(inv) for inv in session.invocations],
        }

    def score_session(self, session_id: str, metrics: Sequence[str] | None = None) -> dict[str, Any]:
        """Score each turn of a session with ``metrics`` (default: :data:`DEFAULT_SESSION_METRICS`): toolpath's
        metrics by name only — a request never names code to import or run; nothing is written to the store."""
        if metrics is not None and (isinstance(metrics, str) or not isinstance(metrics, Sequence)):
            raise ConfigError(f"metrics must be a list of metric names, got {type(metrics).__name__}")
        chosen = [resolve_metric(spec, origin=SpecOrigin.REQUEST) for spec in (metrics or DEFAULT_SESSION_METRICS)]
        self._session(session_id)
        rows = rows_from_store(self.store, session_id=session_id, limit=None)
        judge = request_judge(chosen, len(rows), self.store, MAX_JUDGE_CALLS)  # bounded, refused past the budget
        result = evaluate(rows, chosen, judge=judge)
        names = result.metric_names
        return {
            "session_id": session_id,
            "summary": result.summary_metrics,
            "turns": [
                {
                    "invocation_id": row.get("invocation_id"),
                    **{name: row.get(f"{name}/score") for name in names},
                    **{f"{name}/explanation": row.get(f"{name}/explanation") for name in names},
                }
                for row in result.metrics_table
            ],
        }

    def list_evalsets(self) -> list[str]:
        return self._files.names()

    def score_evalset(self, evalset: str, agent: str | None = None) -> dict[str, Any]:
        """Run the eval set's cases against one of the agents this server was started with and judge them (ADK's
        criteria); the run is saved only when the server may write."""
        from toolpath.evaluation.evalsets.evaluator import check_runnable, criteria_of, evaluate_eval_sets

        if not self.agents:
            raise ConfigError("no agent to run: start toolpath mcp with --agent module:attr")
        if agent is None and len(self.agents) > 1:
            raise ConfigError(f"name the agent to run: one of {', '.join(sorted(self.agents))}")
        name = agent if agent is not None else next(iter(self.agents))
        if name not in self.agents:
            raise ConfigError(f"agent {name!r} is not one this server runs: {', '.join(sorted(self.agents))}")
        try:
            eval_set = self._files.load(evalset)
        except FileNotFoundError:
            raise ConfigError(f"no eval set {evalset!r} in {self.evalsets}") from None
        check_runnable(eval_set, criteria_of(eval_set))
        result = evaluate_eval_sets([eval_set], self.agents[name], store=self.store if self.allow_write else None)
        return {"evalset": evalset, "agent": name, "passed": result.passed, **result.to_dict()}

    def add_session_to_evalset(
        self, session_id: str, evalset: str, invocation_ids: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """Add a session (only ``invocation_ids``, if given) to an eval set as a new case, creating the file if
        needed; refused unless the server was started with ``--allow-write``."""
        if not self.allow_write:
            raise ConfigError("this toolpath mcp server is read-only: start it with --allow-write to add cases")
        session = self._session(session_id)
        turns = [i for i in session.invocations if not invocation_ids or i.invocation_id in invocation_ids]
        if not turns:
            raise ConfigError(f"session {session_id!r}: none of the given invocation ids is one of its turns")
        eval_id = self._files.add_session(evalset, session, invocation_ids, description="cases from toolpath mcp")
        path = self._files.path(evalset)
        set_id = path.name.removesuffix(EVALSET_SUFFIX)
        return {"evalset": set_id, "eval_id": eval_id, "turns": len(turns), "path": str(path)}

    @property
    def _files(self) -> EvalSetFiles:
        return EvalSetFiles(self.evalsets)

    def _session(self, session_id: str) -> Session:
        session = self.store.get_session(session_id)
        if session is None:
            raise ConfigError(f"no session {session_id!r} in the store")
        return session


def _limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}")
    return limit


def _turn(inv: Invocation) -> dict[str, Any]:
    return {
        "invocation_id": inv.invocation_id,
        "trace_id": inv.trace_id,
        "started_at": inv.started_at.isoformat() if inv.started_at else None,
        "prompt": inv.prompt,
        "response": inv.response,
        "failed": bool(inv.failure),
        "error": inv.error,
        "latency_seconds": inv.latency_seconds,
        "answered_by": inv.answered_by,
        "tool_calls": [
            {"name": c.name, "args": c.args, "result": c.result, "error": c.error, "agent": c.agent_name}
            for c in inv.tool_calls
        ],
    }
