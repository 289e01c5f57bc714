"""ADK 2.x's multi-turn criteria: judge metrics over a whole conversation (a row's ``invocations``, one row per
turn, and its ``conversation_scenario`` when a simulated user played it), configured from ``test_config.json`` as
ADK does.

- ``multi_turn_task_success_v1`` / ``multi_turn_trajectory_quality_v1`` / ``multi_turn_tool_use_quality_v1``: ADK
  asks Vertex AI's adaptive-rubric metrics (``RubricMetric.MULTI_TURN_*``): rubrics written for the conversation,
  then a yes/no verdict on each. toolpath asks the judge model for both in one reply, a stand-in of its own
  labelled ``judge: toolpath`` in every result; the score is the share of rubrics met. The conversation is
  judged once, on its last turn: the earlier turns are NOT_EVALUATED (ADK's ``_MultiTurnVertexiAiEvalFacade``).
- ``rubric_based_multi_turn_trajectory_quality_v1``: the criterion's rubrics judged yes/no against the whole
  conversation, tool calls and results included, on its last turn. With google-adk installed (the ``adk``
  extra) ADK's own ``RubricBasedMultiTurnTrajectoryEvaluator`` judges it (``judge: adk``, see
  :func:`~toolpath.judges.adk_bridge.judge_conversation_with_adk`): ADK's prompt, samples, reply reading and
  aggregation. Without it toolpath's prompt stands in (``judge: toolpath``): majority per rubric over the samples
  (a tie is no), the score the share met.
- ``per_turn_user_simulator_quality_v1``: does the simulated user follow its scenario? Judged by ADK's own
  ``PerTurnUserSimulatorQualityV1`` from the installed google-adk (``judge: adk``): turn 1 must be the
  ``starting_prompt``; each later user turn, and the end (the ``stop_signal`` after the last turn), is judged
  against the plan and the conversation before it, by majority over the samples. toolpath keeps none of ADK's
  text: without google-adk the criterion is a :class:`~toolpath.errors.ConfigError` when it is configured.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from toolpath.errors import ConfigError
from toolpath.judges.adk_bridge import judge_conversation_with_adk
from toolpath.judges.adk_criteria import RUBRIC_REPLY, AdkJudgeMetric, _failed, _RubricMetric
from toolpath.judges.client import Ask
from toolpath.metrics.base import MissingInput, Row
from toolpath.model import MetricResult
from toolpath.trajectory import parse_trajectory


def conversation(row: Row) -> list[Row]:
    turns = row.get("invocations")
    if not isinstance(turns, list) or not turns:
        raise MissingInput("a multi-turn metric needs the case's invocations (an eval set's case)")
    return turns


def dialogue(turns: Sequence[Row]) -> str:
    """The conversation as ADK's multi-turn judges show it: ``USER TURN n``, the agent's texts, tool calls and
    tool outputs, and its final response, turn by turn."""
    lines = []
    for n, turn in enumerate(turns, start=1):
        lines.append(f"USER TURN {n}: {turn.get('prompt') or ''}")
        for item in turn.get("intermediate_responses") or []:
            author, text = item if isinstance(item, list | tuple) else ("agent", item)
            lines.append(f"AGENT ({author}) TURN {n}: {text}")
        for call in parse_trajectory(turn.get("predicted_trajectory")):
            lines.append(f"AGENT TURN {n} (tool call): {call.name}({json.dumps(call.args, default=str)})")
            outcome = call.error if call.error is not None else json.dumps(call.result, default=str)
            lines.append(f"AGENT TURN {n} (tool output): {call.name} -> {outcome}")
        if turn.get("response"):
            lines.append(f"AGENT TURN {n}: {turn['response']}")
    return "\n".join(lines)


def on_last_turn(result: MetricResult, turns: int) -> MetricResult:
    """A conversation-level score as ADK records it: on the last turn, the earlier ones NOT_EVALUATED."""
    per_invocation = [None] * (turns - 1) + [result.score]
    return MetricResult(result.score, result.explanation, {**result.details, "per_invocation_scores": per_invocation})


class _AdaptiveRubrics(AdkJudgeMetric):
    """Vertex AI's adaptive-rubric multi-turn metrics, asked of the judge model."""

    case_level: ClassVar[bool] = True
    intent: ClassVar[str]

    async def judge_own(self, row: Row, ask: Ask) -> MetricResult:
        turns = conversation(row)
        prompt = (
            "You evaluate an AI agent's multi-turn conversation with a user. One turn is a user message and the "
            f"agent's answer, with the tools it called.\n\nWhat to judge: {self.intent}\n\n"
            "First write the rubrics (3 to 6 short, checkable yes/no statements) that a good agent meets for this "
            "particular conversation and what to judge; then give each one a verdict over the whole conversation: "
            '"yes" if the agent meets it, "no" if not.\n\n'
            f"<conversation_history>\n{dialogue(turns)}\n</conversation_history>\n\n"
            'Reply with one JSON object: {"rubrics": [{"rubric": "<statement>", "verdict": "yes" | "no", '
            '"reason": "<why>"}]}'
        )
        parsed, errors = await self._samples(prompt, ask)
        shares: list[float] = []
        verdicts: dict[str, bool] = {}
        for sample, data in enumerate(parsed, start=1):
            items = [i for i in data.get("rubrics") or [] if isinstance(i, Mapping)]
            votes = {str(i.get("rubric")): str(i.get("verdict", "")).strip().lower() for i in items}
            if not votes or any(v not in ("yes", "no") for v in votes.values()):
                errors.append(f"sample {sample}: no rubrics with a yes/no verdict each")
                continue
            shares.append(sum(v == "yes" for v in votes.values()) / len(votes))
            verdicts = verdicts or {rubric: v == "yes" for rubric, v in votes.items()}
        if not shares:
            return on_last_turn(_failed(errors), len(turns))
        score = sum(shares) / len(shares)
        missed = [rubric for rubric, ok in verdicts.items() if not ok]
        explanation = f"{sum(verdicts.values())} of {len(verdicts)} rubric(s) met" + (
            f"; not met: {'; '.join(missed)}" if missed else ""
        )
        details = {"rubric_verdicts": verdicts, **({"judge_errors": errors} if errors else {})}
        return on_last_turn(MetricResult(score, explanation, details), len(turns))


class MultiTurnTaskSuccessV1(_AdaptiveRubrics):
    name = "multi_turn_task_success_v1"
    intent = (
        "task success: did the agent achieve the goal or goals the user had in this conversation? Only whether the "
        "goals were achieved matters, not how."
    )


class MultiTurnTrajectoryQualityV1(_AdaptiveRubrics):
    name = "multi_turn_trajectory_quality_v1"
    intent = (
        "trajectory quality: the path the agent took over the whole conversation to reach the user's goals: the "
        "right steps in a sensible order, asking for what it needed, no needless or repeated steps, correct "
        "statements to the user along the way."
    )


class MultiTurnToolUseQualityV1(_AdaptiveRubrics):
    name = "multi_turn_tool_use_quality_v1"
    intent = (
        "tool use quality: the function calls the agent made during the conversation: the right tools, with "
        "correct arguments taken from what the user said, at the right time, their results used correctly."
    )


class RubricMultiTurnTrajectoryQualityV1(_RubricMetric):
    name = "rubric_based_multi_turn_trajectory_quality_v1"
    case_level: ClassVar[bool] = True
    default_samples = 5

    def rubric_prompt(self, row: Row, listed: str) -> str:
        return (
            "You evaluate the quality of an AI agent's responses in a multi-turn conversation. Review every turn: "
            "each user message, the agent's tool calls and their outputs, and its replies. For each rubric, decide "
            "whether the agent's performance over all its turns meets it (yes or no; yes also when the rubric does "
            "not apply); a rubric an earlier turn violated and a later turn corrected is judged on the whole.\n\n"
            f"<conversation_history>\n{dialogue(conversation(row))}\n</conversation_history>\n\n"
            f"Rubrics:\n{listed}\n\n{RUBRIC_REPLY}"
        )

    async def judge(self, row: Row, ask: Ask) -> MetricResult:
        turns = conversation(row)
        if self.judge_name == "adk":  # ADK's RubricBasedMultiTurnTrajectoryEvaluator, from the installed google-adk
            return await judge_conversation_with_adk(self.name, self._adk_criterion(), row, ask)
        return on_last_turn(await super().judge(row, ask), len(turns))  # judge: toolpath


def _adk_per_turn_renderer() -> Callable[..., str]:
    try:
        import jinja2.sandbox  # noqa: F401 - ADK renders with it, and imports it only when it renders
        from google.adk.evaluation.simulation.per_turn_user_simulator_quality_prompts import (
            get_per_turn_user_simulator_quality_prompt,
        )
    except ImportError as exc:
        raise ConfigError(
            "per_turn_user_simulator_quality_v1 judges with google-adk's prompt, read from the installed google-adk, "
            f"which cannot be imported ({exc}): pip install 'toolpath[adk]'"
        ) from None
    return get_per_turn_user_simulator_quality_prompt


class PerTurnUserSimulatorQualityV1(AdkJudgeMetric):
    name = "per_turn_user_simulator_quality_v1"
    case_level: ClassVar[bool] = True
    default_samples = 5

    def __init__(self, **kwargs: Any) -> None:
        _adk_per_turn_renderer()  # no google-adk, no prompt: said when the criterion is configured, not mid-run
        super().__init__(**kwargs)

    async def judge(self, row: Row, ask: Ask) -> MetricResult:
        conversation(row)
        if not isinstance(row.get("conversation_scenario"), Mapping):
            raise MissingInput(f"{self.name} judges a simulated user: it needs the case's conversation_scenario")
        # ADK's PerTurnUserSimulatorQualityV1 (google-adk is installed: __init__ checked it)
        return await judge_conversation_with_adk(self.name, self._adk_criterion(), row, ask)


MULTI_TURN_METRICS: dict[str, type[AdkJudgeMetric]] = {
    cls.name: cls
    for cls in (
        MultiTurnTaskSuccessV1,
        MultiTurnTrajectoryQualityV1,
        MultiTurnToolUseQualityV1,
        RubricMultiTurnTrajectoryQualityV1,
        PerTurnUserSimulatorQualityV1,
    )
}
