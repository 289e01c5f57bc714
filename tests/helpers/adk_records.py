"""ADK eval results built with ADK's own classes and saved by ADK's own ``LocalEvalSetResultsManager``: what
``adk eval`` / ``adk web`` leave in ``<agents_dir>/<app>/.adk/eval_history/``, without running a model."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WEATHER_PROMPT = "what is the weather in Paris?"
HELLO = "Hello! I can tell you the weather."
PARIS = "The weather in Paris is sunny, 20C."
LONDON = "The weather in London is sunny, 20C."


@dataclass
class Turn:
    """One recorded turn: what was expected, what the agent did, and what ADK measured of it."""

    prompt: str
    expected_response: str
    actual_response: str
    expected_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    actual_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    usage: list[dict[str, int]] = field(default_factory=list)
    """Per model call: GenerateContentResponseUsageMetadata fields."""
    durations: tuple[float, float, float] | None = None
    """(duration, model_duration, tool_duration), as ADK measures them while it runs the agent."""


def content(text: str, role: str) -> Any:
    from google.genai import types

    return types.Content(parts=[types.Part(text=text)], role=role)


def expected_invocation(turn: Turn, index: int) -> Any:
    from google.adk.evaluation.eval_case import IntermediateData, Invocation
    from google.genai import types

    return Invocation(
        invocation_id=f"expected-{index}",
        user_content=content(turn.prompt, "user"),
        final_response=content(turn.expected_response, "model"),
        intermediate_data=IntermediateData(
            tool_uses=[types.FunctionCall(name=name, args=args) for name, args in turn.expected_calls]
        ),
    )


def actual_invocation(turn: Turn, index: int, agent: str = "weather_agent") -> Any:
    """The invocation as ADK's inference records it: invocation events, the model calls carrying their usage."""
    from google.adk.evaluation.eval_case import Invocation, InvocationEvent, InvocationEvents
    from google.genai import types

    usage = [types.GenerateContentResponseUsageMetadata(**u) for u in turn.usage] or [None]
    events = []
    for k, (name, args) in enumerate(turn.actual_calls):
        call = types.FunctionCall(name=name, args=args, id=f"call-{index}-{k}")
        events.append(
            InvocationEvent(
                author=agent,
                content=types.Content(parts=[types.Part(function_call=call)], role="model"),
                usage_metadata=usage[k] if k < len(usage) - 1 else None,
                model_version="scripted-model" if k < len(usage) - 1 else None,
            )
        )
        response = types.FunctionResponse(name=name, id=call.id, response={"sky": "sunny"})
        events.append(
            InvocationEvent(author=agent, content=types.Content(parts=[types.Part(function_response=response)]))
        )
    events.append(
        InvocationEvent(
            author=agent, content=content(turn.actual_response, "model"), usage_metadata=usage[-1], model_version="m"
        )
    )
    duration, model, tool = turn.durations or (None, None, None)
    return Invocation(
        invocation_id=f"actual-{index}",
        user_content=content(turn.prompt, "user"),
        final_response=content(turn.actual_response, "model"),
        intermediate_data=InvocationEvents(invocation_events=events),
        duration=duration,
        model_duration=model,
        tool_duration=tool,
    )


def case_result(eval_set_id: str, eval_id: str, turns: list[Turn], status: str = "FAILED") -> Any:
    from google.adk.evaluation.eval_metrics import EvalMetricResultPerInvocation, EvalStatus
    from google.adk.evaluation.eval_result import EvalCaseResult

    return EvalCaseResult(
        eval_set_id=eval_set_id,
        eval_id=eval_id,
        final_eval_status=EvalStatus[status],
        overall_eval_metric_results=[],
        eval_metric_result_per_invocation=[
            EvalMetricResultPerInvocation(
                actual_invocation=actual_invocation(turn, i), expected_invocation=expected_invocation(turn, i)
            )
            for i, turn in enumerate(turns)
        ],
        session_id=f"adk-eval-session-{eval_id}",
        user_id="test_user_id",
    )


def weather_turns() -> list[Turn]:
    """Two turns: the greeting right; the weather asked for London instead of Paris."""
    return [
        Turn(
            "hi",
            HELLO,
            HELLO,
            usage=[{"prompt_token_count": 100, "candidates_token_count": 10}],
            durations=(0.5, 0.4, 0.0),
        ),
        Turn(
            WEATHER_PROMPT,
            PARIS,
            LONDON,
            expected_calls=[("get_weather", {"city": "Paris"})],
            actual_calls=[("get_weather", {"city": "London"})],
            usage=[
                {"prompt_token_count": 200, "candidates_token_count": 20, "thoughts_token_count": 5},
                {"prompt_token_count": 300, "candidates_token_count": 30, "cached_content_token_count": 50},
            ],
            durations=(1.2, 0.9, 0.2),
        ),
    ]


def save_history(agents_dir: Path, app_name: str, eval_set_id: str, case_results: list[Any]) -> Path:
    """Save with ADK's own manager; the app's eval history folder."""
    from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager

    LocalEvalSetResultsManager(agents_dir=str(agents_dir)).save_eval_set_result(app_name, eval_set_id, case_results)
    return agents_dir / app_name / ".adk" / "eval_history"
