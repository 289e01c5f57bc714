"""Google ADK 2.x's eval file models, mirrored field for field so that toolpath accepts exactly what ADK accepts.

ADK reads ``*.evalset.json`` with ``EvalSet.model_validate_json``, ``test_config.json`` with
``EvalConfig.model_validate_json`` and ``*.evalset_result.json`` with ``EvalSetResult.model_validate_json``; the
models below are the same pydantic models (same fields, types, defaults, camelCase aliases, ``extra`` policies,
validators), built on google-genai's ``Content`` / ``FunctionCall`` types as ADK's are, so the same pydantic
rules decide. They are mirrored rather than imported because toolpath works without google-adk installed; the
tests hold them against ADK's own classes.

What is not mirrored, because toolpath never reads it: a result's ``session_details`` (ADK's ``Session``, kept
as a JSON object), a scenario's ``user_persona`` (kept as given; toolpath's simulator refuses one), and the
multi-run parts of google-adk 2.14 and later (a config's ``multi_run_config``, which toolpath refuses, and a
result set's ``multi_run_case_summaries``, kept as JSON objects). The mirrors hold the fields of every google-adk
release toolpath is tested with (2.13 to 2.15): a field a release lacks, it ignores when it reads the file. The
config's ``user_simulator_config`` is mirrored (``llm_backed``; ``llm_audio`` only as far as its type).
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Any, Literal

from google.genai import types as genai_types
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel


class _EvalModel(BaseModel):
    """ADK's ``EvalBaseModel``: camelCase or snake_case keys, unknown keys rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", arbitrary_types_allowed=True
    )


# --- eval sets (eval_case.py, eval_set.py, eval_rubrics.py, app_details.py) ---------------------------------


class RubricContent(_EvalModel):
    text_property: str | None = None


class Rubric(_EvalModel):
    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None


class RubricScore(_EvalModel):
    rubric_id: str
    rationale: str | None = None
    score: float | None = None


class AgentDetails(_EvalModel):
    name: str
    instructions: str = ""
    tool_declarations: list[Any] = Field(default_factory=list)


class AppDetails(_EvalModel):
    agent_details: dict[str, AgentDetails] = Field(default_factory=dict)


class IntermediateData(_EvalModel):
    tool_uses: list[genai_types.FunctionCall] = []
    tool_responses: list[genai_types.FunctionResponse] = []
    intermediate_responses: list[tuple[str, list[genai_types.Part]]] = []


class InvocationEvent(_EvalModel):
    model_config = ConfigDict(extra="ignore")  # the adk web editor adds UI-only indices

    author: str
    content: genai_types.Content | None = None
    grounding_metadata: genai_types.GroundingMetadata | None = None
    usage_metadata: genai_types.GenerateContentResponseUsageMetadata | None = None
    model_version: str | None = None


class InvocationEvents(_EvalModel):
    invocation_events: list[InvocationEvent] = Field(default_factory=list)


class Invocation(_EvalModel):
    invocation_id: str = ""
    user_content: genai_types.Content
    final_response: genai_types.Content | None = None
    intermediate_data: IntermediateData | InvocationEvents | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Rubric] | None = None
    app_details: AppDetails | None = None


class SessionInput(_EvalModel):
    model_config = ConfigDict(extra="allow")

    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class ConversationScenario(_EvalModel):
    starting_prompt: str
    conversation_plan: str
    user_persona: Any = None


class EvalCase(_EvalModel):
    model_config = ConfigDict(extra="allow")

    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: dict[str, Any] | None = Field(default_factory=dict)

    @model_validator(mode="after")
    def _conversation_xor_scenario(self) -> EvalCase:
        if (self.conversation is None) == (self.conversation_scenario is None):
            raise ValueError(
                "Exactly one of conversation and conversation_scenario is needed: the case's turns, or the scenario "
                "a simulated user plays"
            )
        return self


class EvalSet(BaseModel):
    """Not an ``EvalBaseModel`` in ADK: snake_case keys only at the top level, unknown keys ignored."""

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0


# --- test_config.json (eval_config.py, eval_metrics.py) ---------------------------------------------------


class JudgeModelOptions(_EvalModel):
    judge_model: str = "gemini-2.5-flash"
    judge_model_config: genai_types.GenerateContentConfig | None = None
    num_samples: int = Field(default=5, ge=1)
    parallelism_limit: int = Field(default=1, ge=1)


class BaseCriterion(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    threshold: float
    include_intermediate_responses_in_final: bool = False


class LlmAsAJudgeCriterion(BaseCriterion):
    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)


class RubricsBasedCriterion(BaseCriterion):
    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)
    rubrics: list[Rubric] = Field(default_factory=list)


class HallucinationsCriterion(BaseCriterion):
    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)
    evaluate_intermediate_nl_responses: bool = False


class MatchType(Enum):
    EXACT = 0
    IN_ORDER = 1
    ANY_ORDER = 2


class ToolTrajectoryCriterion(BaseCriterion):
    match_type: MatchType = MatchType.EXACT
    ignore_args: bool = False

    @field_validator("match_type", mode="before")
    @classmethod
    def _coerce_match_type(cls, value: object) -> object:
        """ADK's spellings: any case, ``-`` or space for ``_`` (``"in-order"``, ``"In Order"``); or 0, 1, 2."""
        if isinstance(value, str):
            normalized = value.strip().upper().replace("-", "_").replace(" ", "_")
            if normalized in MatchType.__members__:
                return MatchType[normalized]
        return value


class LlmBackedUserSimulatorCriterion(LlmAsAJudgeCriterion):
    stop_signal: str = "</finished>"


class CodeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str


class Interval(_EvalModel):
    min_value: float
    open_at_min: bool = False
    max_value: float
    open_at_max: bool = False


class MetricValueInfo(_EvalModel):
    interval: Interval | None = None


class MetricInfo(_EvalModel):
    metric_name: str
    description: str | None = None
    metric_value_info: MetricValueInfo
    requires_threshold: bool = True


class CustomMetricConfig(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    code_config: CodeConfig
    metric_info: MetricInfo | None = None
    description: str = ""


class LiveModelConfig(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    timeout_seconds: int = 300


STOP_SIGNAL = "</finished>"
"""What ADK's LLM-backed user simulator writes when the conversation is over (``llm_backed_user_simulator.py``)."""
SIMULATOR_PLACEHOLDERS = ("stop_signal", "conversation_plan", "conversation_history")


def _default_simulator_generation() -> genai_types.GenerateContentConfig:
    return genai_types.GenerateContentConfig(
        thinking_config=genai_types.ThinkingConfig(include_thoughts=True, thinking_budget=10240)
    )


def missing_placeholders(template: str, required: tuple[str, ...] = SIMULATOR_PLACEHOLDERS) -> list[str] | None:
    """The placeholders a Jinja template lacks (ADK's ``is_valid_user_simulator_template``); ``None`` when it is
    not a valid template. Uses jinja2 when installed, else reads ``{{ name }}`` / ``{{ name.attr }}`` uses."""
    try:
        from jinja2 import exceptions, meta
        from jinja2.sandbox import SandboxedEnvironment
    except ImportError:  # pragma: no cover - jinja2 comes with most installs (mkdocs, ADK's extras)
        used = set(re.findall(r"\{\{\s*([A-Za-z_]\w*)", template))
    else:
        try:
            used = meta.find_undeclared_variables(SandboxedEnvironment().parse(template))
        except exceptions.TemplateSyntaxError:
            return None
    return [name for name in required if name not in used]


class _UserSimulatorConfig(BaseModel):
    """ADK's ``BaseUserSimulatorConfig``: camelCase or snake_case keys, unknown keys kept."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    model: str = "gemini-2.5-flash"
    model_configuration: genai_types.GenerateContentConfig = Field(default_factory=_default_simulator_generation)
    max_allowed_invocations: int = 20
    custom_instructions: str | None = None
    include_function_calls: bool = False

    @field_validator("custom_instructions")
    @classmethod
    def _check_instructions(cls, value: str | None) -> str | None:
        if value is not None and missing_placeholders(value) != []:
            raise ValueError(
                "custom_instructions must contain each of the following formatting placeholders using Jinja syntax: "
                "{{ stop_signal }}, {{ conversation_plan }}, {{ conversation_history }}"
            )
        return value

    @field_validator("max_allowed_invocations")
    @classmethod
    def _check_limit(cls, value: int) -> int:
        # ADK counts the starting prompt as an invocation: 0 would run nothing, and only -1 means no limit
        if value == 0 or value < -1:
            raise ValueError("must be at least 1 (the starting prompt counts as one), or -1 for no limit")
        return value


class LlmBackedUserSimulatorConfig(_UserSimulatorConfig):
    type: Literal["llm_backed"] = "llm_backed"


class LlmAudioUserSimulatorConfig(_UserSimulatorConfig):
    """Read so that a file ADK accepts is accepted; toolpath's simulator refuses it (it speaks, toolpath types)."""

    type: Literal["llm_audio"] = "llm_audio"


UserSimulatorConfig = Annotated[LlmBackedUserSimulatorConfig | LlmAudioUserSimulatorConfig, Field(discriminator="type")]


class EvalConfig(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    criteria: dict[str, float | BaseCriterion] = Field(default_factory=dict)
    custom_metrics: dict[str, CustomMetricConfig] | None = None
    user_simulator_config: UserSimulatorConfig | None = None
    live_model_config: LiveModelConfig | None = None
    multi_run_config: dict[str, Any] | None = None
    """google-adk 2.14's ``MultiRunConfig`` (runs per case, cross-run scoring), kept as given: toolpath refuses a
    config that sets one (:func:`toolpath.evaluation.evalsets.eval_config.load_config`)."""
    parallelism: int | None = Field(default=None, ge=1)
    """google-adk 2.15's cases run at once; toolpath's own concurrency applies instead (it changes no figure)."""

    @model_validator(mode="before")
    @classmethod
    def _default_simulator_type(cls, values: Any) -> Any:
        """ADK's ``_inject_default_user_simulator_type``: a config without ``type`` (or ``type: null``) is
        ``llm_backed``."""
        if not isinstance(values, dict):
            return values
        for key in ("user_simulator_config", "userSimulatorConfig"):
            inner = values.get(key)
            if isinstance(inner, dict) and inner.get("type") is None:
                values = {**values, key: {**inner, "type": "llm_backed"}}
        return values


TRAJECTORY_CRITERION = "tool_trajectory_avg_score"
ADK_CRITERIA: dict[str, type[BaseCriterion]] = {
    TRAJECTORY_CRITERION: ToolTrajectoryCriterion,
    "response_evaluation_score": BaseCriterion,
    "response_match_score": BaseCriterion,
    "safety_v1": BaseCriterion,
    "final_response_match_v2": LlmAsAJudgeCriterion,
    "rubric_based_final_response_quality_v1": RubricsBasedCriterion,
    "hallucinations_v1": HallucinationsCriterion,
    "rubric_based_tool_use_quality_v1": RubricsBasedCriterion,
    "per_turn_user_simulator_quality_v1": LlmBackedUserSimulatorCriterion,
    "multi_turn_task_success_v1": BaseCriterion,
    "multi_turn_trajectory_quality_v1": BaseCriterion,
    "multi_turn_tool_use_quality_v1": BaseCriterion,
    "rubric_based_multi_turn_trajectory_quality_v1": RubricsBasedCriterion,
}
"""ADK's criteria (its metric registry) and the criterion model each one reads its options with."""

ADK_UNSCORED = ("tool_parameter_match",)
"""Criteria of newer google-adk releases (2.15's ``tool_parameter_match``) that toolpath does not compute: a
config naming one is refused, never scored otherwise."""

EFFICIENCY_METRICS = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1")
"""ADK's informational efficiency metrics: reported for every case, never given a threshold."""


# --- results (eval_result.py, eval_metrics.py) -------------------------------------------------------------


class EvalStatus(Enum):
    PASSED = 1
    FAILED = 2
    NOT_EVALUATED = 3
    INFORMATIONAL = 4


class TokenUsageDetails(_EvalModel):
    total_tokens: float | None = None
    input_tokens: float | None = None
    prompt_tokens: float | None = None
    cached_tokens: float | None = None
    tool_use_tokens: float | None = None
    output_tokens: float | None = None
    candidates_tokens: float | None = None
    reasoning_tokens: float | None = None


class DurationDetails(_EvalModel):
    total_seconds: float | None = None
    model_seconds: float | None = None
    tool_seconds: float | None = None
    framework_seconds: float | None = None


class EvalMetric(_EvalModel):
    metric_name: str
    threshold: float | None = None
    criterion: BaseCriterion | None = None
    custom_function_path: str | None = None


class EvalMetricResultDetails(_EvalModel):
    rubric_scores: list[RubricScore] | None = None
    token_usage_details: TokenUsageDetails | None = None
    duration_details: DurationDetails | None = None


class EvalMetricResult(EvalMetric):
    score: float | None = None
    eval_status: EvalStatus
    details: EvalMetricResultDetails = Field(default_factory=EvalMetricResultDetails)


class EvalMetricResultPerInvocation(_EvalModel):
    actual_invocation: Invocation
    expected_invocation: Invocation | None = None
    eval_metric_results: list[EvalMetricResult] = []


class EvalCaseResult(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    eval_set_file: str | None = None
    eval_set_id: str = ""
    eval_id: str = ""
    final_eval_status: EvalStatus
    eval_metric_results: list[tuple[EvalMetric, EvalMetricResult]] | None = None
    overall_eval_metric_results: list[EvalMetricResult]
    eval_metric_result_per_invocation: list[EvalMetricResultPerInvocation]
    session_id: str
    session_details: dict[str, Any] | None = None
    user_id: str | None = None
    repetition_index: int | None = None
    """google-adk 2.14's index of the run among a case's runs (from 0); ``None`` when not recorded."""


class EvalSetResult(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    eval_set_result_id: str
    eval_set_result_name: str | None = None
    eval_set_id: str
    eval_case_results: list[EvalCaseResult] = Field(default_factory=list)
    multi_run_case_summaries: list[dict[str, Any]] | None = None
    """google-adk 2.14's cross-run summary of each case (``MultiRunCaseSummary``), kept as written."""
    creation_timestamp: float = 0.0
