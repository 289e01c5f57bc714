"""ADK's own judge for ADK's Gemini-judged criteria, run at run time from the installed google-adk.

For ``final_response_match_v2``, ``rubric_based_final_response_quality_v1``, ``rubric_based_tool_use_quality_v1``
and ``hallucinations_v1`` (one invocation each), and ``rubric_based_multi_turn_trajectory_quality_v1`` and
``per_turn_user_simulator_quality_v1`` (a whole conversation: :func:`judge_conversation_with_adk`), the evaluator
is the one ADK's ``LocalEvalService`` would use — taken from ADK's metric registry, for the criterion as ADK's
``EvalConfig`` reads it (so ADK's defaults: 5 samples, ``gemini-2.5-flash``) — and it runs its own code: its
prompt templates, sample counts, generation config, reply parsing and aggregation. Only its model is ours: a
stand-in ``BaseLlm`` that sends each request through toolpath's judge client (cache, budgets, concurrency,
retries). Nothing of ADK's text is kept here, so a new ADK release changes the prompts with it.

A row that carries ADK's own invocations (``adk_invocation``: an ADK agent toolpath ran, or ADK's recorded results;
``adk_expected_invocation``: the eval set's turn) is judged on them as they are, so ADK's prompts see the agents'
instructions and tool declarations, the events in their order and the rubrics. Otherwise a row becomes ADK's
``Invocation`` as ADK's inference records one (:func:`actual_invocation`): the user's text,
the final response, and ``intermediate_data`` as invocation events — the intermediate texts first (a row does
not keep their order relative to the calls), then per tool call a model event with the ``function_call`` and,
when the call returned or failed, an event with its ``function_response`` (a non-object result as
``{"result": …}``, an error as ``{"error": …}``, as ADK's tools report them).

google-adk is the optional ``adk`` extra: it is imported here, inside functions, only when a criterion is judged.
"""

from __future__ import annotations

import functools
import inspect
import json
import warnings
from collections import Counter
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any

from toolpath.judges import adk_names
from toolpath.judges.adk_names import ADK_CONVERSATION as ADK_CONVERSATION
from toolpath.judges.adk_names import ADK_PROMPTED as ADK_PROMPTED
from toolpath.judges.client import EMPTY_REPLY, Ask, JudgeRequest
from toolpath.metrics.base import MissingInput, Row, missing
from toolpath.model import MetricResult
from toolpath.trajectory import parse_trajectory

if TYPE_CHECKING:
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.evaluator import Evaluator

ADK_VERTEX_SERVICE = (
    "safety_v1",
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
)
"""The criteria ADK sends to Vertex AI's evaluation service: toolpath's own judge stands in, labelled as such."""

EXPECTED_REQUIRED = ("final_response_match_v2",)
_NO_WIRE = {"http_options", "automatic_function_calling"}
"""Config fields that never reach the request body (client settings): our client sets its own."""


def adk_installed() -> bool:
    """Whether google-adk can be imported (:func:`toolpath.judges.adk_names.adk_installed`; tests stand in here)."""
    return adk_names.adk_installed()


def judge_of(name: str) -> str:
    """Which judge scores criterion ``name``: ``adk`` or ``toolpath`` (:func:`toolpath.judges.adk_names.judge_of`)."""
    return adk_names.judge_of(name, adk_installed())


def adk_version() -> str:
    from google.adk import version

    return str(version.__version__)


def adk_evaluator(name: str, criterion: Mapping[str, Any]) -> Evaluator:
    """A new instance of ADK's evaluator of ``name`` for ``criterion`` (a ``test_config.json`` criterion object,
    read by ADK's ``EvalConfig``), from ADK's metric registry as ``LocalEvalService`` gets it; a criterion ADK
    rejects is a ``ValueError``."""
    from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
    from pydantic import ValidationError

    with warnings.catch_warnings():  # the registry is made, and marked experimental, on first import
        warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")
        from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
    try:
        config = EvalConfig.model_validate({"criteria": {name: dict(criterion)}})
    except ValidationError as exc:
        raise ValueError(f"ADK rejects the criterion: {exc.errors()[0]['msg']}") from None
    (metric,) = [m for m in get_eval_metrics_from_config(config) if m.metric_name == name]
    with warnings.catch_warnings():  # ADK marks its evaluators experimental, once per instance
        warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]")
        evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric)
    if _judge_attribute(evaluator) is None:
        raise ValueError(f"google-adk {adk_version()}: {type(evaluator).__name__} has no judge model to stand in for")
    return evaluator


_JUDGE_ATTRIBUTES = ("_judge_model", "_llm")
"""Where ADK's evaluators keep their judge model: ``LlmAsJudge``'s ``_judge_model``; the user simulator
quality's ``_llm``."""


def _judge_attribute(evaluator: Evaluator) -> str | None:
    return next((name for name in _JUDGE_ATTRIBUTES if hasattr(evaluator, name)), None)


def actual_invocation(row: Row) -> Invocation:
    """The row as ADK's ``Invocation`` of what the agent did: ADK's own, as recorded, when the row carries it
    (``adk_invocation``), else rebuilt from the row (see the module's docstring)."""
    recorded = row.get("adk_invocation")
    if isinstance(recorded, Mapping):
        return adk_invocation(recorded)
    from google.adk.evaluation.eval_case import Invocation, InvocationEvent, InvocationEvents
    from google.adk.evaluation.eval_rubrics import Rubric
    from google.genai import types

    author = str(row.get("agent_name") or "agent")
    events = []
    for text in row.get("intermediate_responses") or []:
        if isinstance(text, list | tuple):  # (author, text)
            text = text[1]
        if text:
            events.append(InvocationEvent(author=author, content=_content(str(text), "model")))
    for call in parse_trajectory(row.get("predicted_trajectory"), where="predicted_trajectory"):
        function_call = types.FunctionCall(id=call.call_id, name=call.name, args=call.args)
        events.append(
            InvocationEvent(
                author=author, content=types.Content(role="model", parts=[types.Part(function_call=function_call)])
            )
        )
        if call.result is not None or call.error is not None:
            body = {"error": call.error} if call.error is not None else call.result
            response = types.FunctionResponse(
                id=call.call_id, name=call.name, response=body if isinstance(body, dict) else {"result": body}
            )
            part = types.Part(function_response=response)
            events.append(InvocationEvent(author=author, content=types.Content(role="user", parts=[part])))
    rubrics = row.get("rubrics")
    invocation_rubrics = [Rubric.model_validate(r) for r in rubrics if isinstance(r, Mapping)] if rubrics else None
    return Invocation(
        user_content=_content(_text(row, "prompt"), "user"),
        final_response=None if row.get("response") is None else _content(str(row["response"]), "model"),
        intermediate_data=InvocationEvents(invocation_events=events),
        rubrics=invocation_rubrics or None,
    )


def expected_invocation(row: Row) -> Invocation:
    """The row's reference as ADK's expected ``Invocation``: the eval set's own when the row carries it
    (``adk_expected_invocation``), else the user's text and the reference response."""
    recorded = row.get("adk_expected_invocation")
    if isinstance(recorded, Mapping):
        return adk_invocation(recorded)
    from google.adk.evaluation.eval_case import Invocation

    return Invocation(
        user_content=_content(_text(row, "prompt"), "user"), final_response=_content(_text(row, "reference"), "model")
    )


def adk_invocation(data: Mapping[str, Any]) -> Invocation:
    """ADK's ``Invocation`` from its JSON, as ADK's inference holds it in memory: the tool declarations of its
    ``app_details`` as genai ``Tool`` objects (JSON keeps them as plain objects, which ADK's prompts would render
    otherwise)."""
    from google.adk.evaluation.eval_case import Invocation
    from google.genai import types

    invocation = Invocation.model_validate(dict(data))
    for details in invocation.app_details.agent_details.values() if invocation.app_details else []:
        details.tool_declarations = [
            types.Tool.model_validate(tool) if isinstance(tool, Mapping) else tool for tool in details.tool_declarations
        ]
    return invocation


def _text(row: Row, column: str) -> str:
    value = row.get(column)
    if value is None:
        raise missing(row, column)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _content(text: str, role: str) -> Any:
    from google.genai import types

    return types.Content(role=role, parts=[types.Part(text=text)])


class JudgeUnavailable(RuntimeError):
    """A judge request that got no reply (after the client's retries, or over budget): ADK's evaluators treat it
    as their model's failure."""


@functools.cache
def _asking_llm_class() -> type[Any]:
    """A ``BaseLlm`` that sends ADK's requests through toolpath's judge client."""
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types
    from pydantic import PrivateAttr

    class AskingLlm(BaseLlm):
        _ask: Ask | None = PrivateAttr(default=None)
        _seen: Counter[str] = PrivateAttr(default_factory=Counter)
        _errors: list[str] = PrivateAttr(default_factory=list)

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            assert self._ask is not None
            prompt = "".join(
                part.text or "" for content in llm_request.contents for part in content.parts or [] if part.text
            )
            config = llm_request.config or types.GenerateContentConfig()
            wire = json.dumps(config.model_dump(mode="json", exclude_none=True, exclude=_NO_WIRE), sort_keys=True)
            sample = self._seen[prompt]
            self._seen[prompt] += 1
            request = JudgeRequest(prompt, llm_request.model or self.model, sample=sample, config=wire)
            reply = await self._ask(request)
            if reply.error and reply.error != EMPTY_REPLY:
                self._errors.append(reply.error)
                raise JudgeUnavailable(reply.error)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=reply.text or "")]))

    return AskingLlm


async def judge_with_adk(name: str, criterion: Mapping[str, Any], row: Row, ask: Ask) -> MetricResult:
    """One row (one invocation) judged by ADK's own evaluator of ``name``, its model asked through ``ask``:
    the invocation's score and status as ADK gives them."""
    actual = actual_invocation(row)
    # the eval set's expected invocation goes to every criterion, as LocalEvalService gives it; a row's reference
    # only to the criteria that need one
    given = isinstance(row.get("adk_expected_invocation"), Mapping)
    expected = [expected_invocation(row)] if given or name in EXPECTED_REQUIRED else None
    result, errors = await _evaluate(name, criterion, ask, [actual], expected, None)
    (per,) = result.per_invocation_results
    rubric_scores = {r.rubric_id: r.score for r in per.rubric_scores or []}
    return _result(per.score, rubric_scores, errors, {})


async def judge_conversation_with_adk(name: str, criterion: Mapping[str, Any], row: Row, ask: Ask) -> MetricResult:
    """A whole conversation (``row["invocations"]``, one row per turn, and ``row["conversation_scenario"]`` when a
    simulated user played it) judged by ADK's own evaluator of ``name`` as ``LocalEvalService`` calls it: every
    turn's actual invocation, the eval set's expected ones when every turn carries its own, and the scenario.
    The score is ADK's overall score; ``per_invocation_scores`` its score of each turn."""
    turns = row.get("invocations")
    if not isinstance(turns, list) or not turns:
        raise MissingInput(f"{name} needs the case's invocations (an eval set's case)")
    actual = [actual_invocation(turn) for turn in turns]
    given = all(isinstance(turn.get("adk_expected_invocation"), Mapping) for turn in turns)
    expected = [expected_invocation(turn) for turn in turns] if given else None
    scenario = row.get("conversation_scenario")
    result, errors = await _evaluate(name, criterion, ask, actual, expected, scenario)
    rubric_scores = {r.rubric_id: r.score for r in result.overall_rubric_scores or []}
    per_invocation = [per.score for per in result.per_invocation_results]
    return _result(result.overall_score, rubric_scores, errors, {"per_invocation_scores": per_invocation})


async def _evaluate(
    name: str,
    criterion: Mapping[str, Any],
    ask: Ask,
    actual: list[Invocation],
    expected: list[Invocation] | None,
    scenario: Mapping[str, Any] | None,
) -> tuple[Any, list[str]]:
    """ADK's evaluator of ``name`` run on the invocations, its judge model asked through ``ask``: ADK's
    ``EvaluationResult`` and the errors of the requests that got no reply."""
    evaluator = adk_evaluator(name, criterion)  # a fresh one per call: rubric evaluators keep state per call
    attribute = _judge_attribute(evaluator)
    assert attribute is not None  # checked in adk_evaluator
    llm = _asking_llm_class()(model=getattr(evaluator, attribute).model)
    llm._ask = ask
    setattr(evaluator, attribute, llm)
    if scenario is None:
        result = evaluator.evaluate_invocations(actual, expected)
    else:
        from google.adk.evaluation.eval_case import ConversationScenario

        result = evaluator.evaluate_invocations(
            actual, expected, conversation_scenario=ConversationScenario.model_validate(dict(scenario))
        )
    if inspect.isawaitable(result):  # as LocalEvalService awaits it
        result = await result
    return result, list(llm._errors)


def _result(
    score: float | None, rubric_scores: dict[str, float | None], errors: list[str], extra: dict[str, Any]
) -> MetricResult:
    details: dict[str, Any] = {"judge": "adk", "adk_version": adk_version(), **extra}
    if rubric_scores:
        details["rubric_scores"] = rubric_scores
    if errors:
        details["judge_errors"] = errors
    explanation = _explanation(score, rubric_scores, errors)
    per_invocation = extra.get("per_invocation_scores")
    if per_invocation and not rubric_scores and score is not None:  # per turn: say which turns fell short
        short = [str(n) for n, s in enumerate(per_invocation, start=1) if s is None or s < 1.0]
        explanation += f"; {len(per_invocation) - len(short)} of {len(per_invocation)} turn(s) valid" + (
            f"; not valid: turn(s) {', '.join(short)}" if short else ""
        )
    return MetricResult(score, explanation, details)


def _explanation(score: float | None, rubric_scores: Mapping[str, float | None], errors: list[str]) -> str:
    judge = f"judge: adk (google-adk {adk_version()})"
    if score is None:
        why = "; ".join(dict.fromkeys(errors)) or "ADK's evaluator read no verdict in the judge's replies"
        return f"{judge}; not evaluated: {why}"
    if rubric_scores:
        missed = [rubric_id for rubric_id, s in rubric_scores.items() if s is not None and s < 1.0]
        met = sum(1 for s in rubric_scores.values() if s == 1.0)
        return f"{judge}; {met} of {len(rubric_scores)} rubric(s) met" + (
            f"; not met: {', '.join(missed)}" if missed else ""
        )
    return f"{judge}; score {score:g}"
