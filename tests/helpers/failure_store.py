"""A store of known failures and latencies, stamped relative to now (so that the pages' presets — last 15 min, 1 h,
24 h, 7 d — each take a known part of it), for the Errors and Tools pages:

- ``forecaster`` calls ``fetch_weather`` 20 times (call k took (k + 1) × 10 ms, its turn started ``AGES[k % 5]``
  minutes ago); calls 0, 1, 7 and 19 failed with a TimeoutError (0 is the latest, 5 min ago; 19 the first, 30 d
  ago), call 13 with a ValueError (2 d ago). The latest failed call has its spans stored (the agent's, the failed
  tool span's, a model call's).
- ``planner`` calls ``fetch_weather`` twice (50 ms, 10 min ago; 80 ms and a TimeoutError, 10 min ago) and
  ``book_table`` three times a day ago (100 ms, 300 ms, and once without times); two of its turns raised a
  RuntimeError (20 min ago, its spans stored; 2 d ago), one an error that names no type (3 h ago).
- An evaluation's turn (session ``eval-7``, marked ``toolpath.evaluation``) raised a KeyError 5 min ago.
- Model calls: ``gemini-x`` 100/10 tokens 5 min and 2 d ago, ``gemini-y`` 50/5 tokens 5 min ago, reporting a cost
  of $0.02.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from toolpath.model import Invocation, ToolCall, invocation_key
from toolpath.store.spanrecord import STATUS_ERROR, STATUS_OK, SpanRecord
from toolpath.store.store import Store

MINUTE = 60 * 10**9
MS = 10**6
AGES = (5, 30, 180, 2 * 1440, 30 * 1440)
"""Minutes before now that forecaster's turn k started (k % 5)."""
TIMEOUT = "TimeoutError: upstream slow"
FORECASTER_TIMEOUTS = (0, 1, 7, 19)
FORECASTER_VALUE_ERROR = 13
UNTYPED = "something went wrong: badly"


def _when(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, UTC)


def _ids(n: int) -> tuple[str, str]:
    return f"{0xFA11 + n:032x}", f"{0xFA11 + n:016x}"


class FailureStore:
    """Fills a store with the failures above, relative to ``now`` (ns); keeps the ids the tests look for."""

    def __init__(self, store: Store, now: int | None = None) -> None:
        self.store = store
        self.now = time.time_ns() if now is None else now
        self.invocations: list[Invocation] = []
        self.spans: list[SpanRecord] = []
        self.latest_timeout_span = ""
        """The span of forecaster's latest failed call (call 0)."""
        self.latest_timeout_turn = ""
        self.budget_turn_span = ""
        """The agent span of planner's latest RuntimeError turn."""
        self.n = 0

    def turn(self, agent: str, session: str, age_minutes: float, calls: list[ToolCall], *,
             error: str | None = None, evaluation: bool = False) -> Invocation:  # fmt: skip
        self.n += 1
        trace, root = _ids(self.n)
        start = self.now - int(age_minutes * MINUTE)
        invocation = Invocation(
            invocation_id=invocation_key(trace, root), session_id=session, trace_id=trace, agent_name=agent,
            prompt=f"turn {self.n}", response=None if error else "ok", tool_calls=calls,
            latency_seconds=None if error else 0.5, failure=int(error is not None), error=error,
            started_at=_when(start), attributes={"toolpath.evaluation": True} if evaluation else {},
        )  # fmt: skip
        self.invocations.append(invocation)
        return invocation

    def call(self, tool: str, age_minutes: float, took_ms: float | None, error: str | None = None) -> ToolCall:
        start = self.now - int(age_minutes * MINUTE) + MS
        end = None if took_ms is None else start + int(took_ms * MS)
        return ToolCall(name=tool, args={"city": "Oslo"}, result=None if error else {"ok": True}, error=error,
                        start_time=None if took_ms is None else start, end_time=end)  # fmt: skip

    def agent_span(self, invocation: Invocation, status: int, message: str | None = None) -> str:
        trace = invocation.trace_id or ""
        root = invocation.invocation_id.rsplit("-", 1)[1]
        start = int(invocation.started_at.timestamp() * 1e9) if invocation.started_at else self.now
        self.spans.append(
            SpanRecord(trace, root, None, f"invoke_agent {invocation.agent_name}", 1, start, start + 500 * MS, status,
                       message, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": invocation.agent_name})
        )  # fmt: skip
        return root

    def model_span(self, trace: str, n: int, start: int, model: str, tokens: tuple[int, int],
                   cost: float | None = None) -> None:  # fmt: skip
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                      "gen_ai.usage.input_tokens": tokens[0], "gen_ai.usage.output_tokens": tokens[1],
                      **({"gen_ai.usage.cost.total": cost} if cost is not None else {})}  # fmt: skip
        self.spans.append(SpanRecord(trace, f"{0xE0DE1 + n:016x}", None, f"chat {model}", 3, start, start + 5 * MS,
                                     STATUS_OK, None, attributes))  # fmt: skip

    def fill(self) -> FailureStore:
        for k in range(20):
            error = TIMEOUT if k in FORECASTER_TIMEOUTS else None
            error = "ValueError: bad city" if k == FORECASTER_VALUE_ERROR else error
            age = AGES[k % 5] + k / 60  # k seconds apart within an age
            call = self.call("fetch_weather", age, (k + 1) * 10, error)
            turn = self.turn("forecaster", f"weather-{k % 4}", age, [call])
            if k == 0:
                root = self.agent_span(turn, STATUS_OK)
                tool_span = f"{0x7001:016x}"
                assert call.start_time is not None
                self.spans.append(
                    SpanRecord(turn.trace_id or "", tool_span, root, "execute_tool fetch_weather", 1, call.start_time,
                               call.end_time, STATUS_ERROR, TIMEOUT,
                               {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "fetch_weather"},
                               [{"name": "exception", "time_unix_nano": call.end_time,
                                 "attributes": {"exception.type": "TimeoutError",
                                                "exception.message": "upstream slow"}}])
                )  # fmt: skip
                self.latest_timeout_span, self.latest_timeout_turn = tool_span, turn.invocation_id
        self.turn("planner", "plan-1", 10, [self.call("fetch_weather", 10, 50)])
        self.turn("planner", "plan-1", 10 - 1 / 60, [self.call("fetch_weather", 10 - 1 / 60, 80, TIMEOUT)])
        self.turn("planner", "plan-2", 1440, [self.call("book_table", 1440, 100), self.call("book_table", 1440, 300),
                                              self.call("book_table", 1440, None)])  # fmt: skip
        budget = self.turn("planner", "plan-3", 20, [], error="RuntimeError: out of budget")
        self.budget_turn_span = self.agent_span(budget, STATUS_ERROR, "RuntimeError: out of budget")
        self.turn("planner", "plan-3", 2 * 1440, [], error="RuntimeError: out of budget")
        self.turn("planner", "plan-4", 180, [], error=UNTYPED)
        self.turn("planner", "eval-7", 5, [], error="KeyError: 'city'", evaluation=True)
        first = self.invocations[0]
        five_ago = self.now - 5 * MINUTE
        self.model_span(first.trace_id or "", 1, five_ago, "gemini-x", (100, 10))
        self.model_span(first.trace_id or "", 2, five_ago, "gemini-y", (50, 5), cost=0.02)
        self.model_span(self.invocations[3].trace_id or "", 3, self.now - 2 * 1440 * MINUTE, "gemini-x", (100, 10))
        self.store.write(self.invocations, self.spans)
        return self
