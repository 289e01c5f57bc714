"""The judged inputs of ``evaluateInstances``, asked of toolpath's judge (google-genai, with the judge's settings,
cache and budget: :mod:`toolpath.judges.client`).

- Vertex AI's model-based inputs (``fluency_input`` …) are judged with toolpath's built-in judge templates
  (:mod:`toolpath.judges.vertex`), the judge shown the instance's fields the input has.
- ``pointwise_metric_input`` / ``pairwise_metric_input`` carry their own prompt template: its ``{variables}``
  are filled from the instance, and the judge is asked for a JSON reply after it. In a pairwise template, as in
  Vertex AI's own, "Response A" is the baseline and "Response B" the candidate.

``autorater_config`` chooses the judge model (``autorater_model``), the samples (``sampling_count``), the
temperature (``generation_config.temperature``; another generation setting is refused) and, for a templated
pairwise input, whether every other sample shows the responses swapped (``flip_enabled``; toolpath's built-in
pairwise judges always do). A result's ``confidence`` is the share of the samples that agree with it (1 for one
sample).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections import Counter
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from toolpath.errors import ConfigError, InternalSignal
from toolpath.judges.client import Judge, JudgeReply, JudgeRequest
from toolpath.judges.parse import JudgeParseError, brief, parse_reply
from toolpath.judges.process_budget import BudgetSpent, process_budget
from toolpath.judges.vertex import (
    BUILTIN_TEMPLATES,
    PAIRWISE_FORMAT,
    PAIRWISE_RUBRIC,
    POINTWISE_FORMAT,
    PairwiseChoice,
    PairwiseMetric,
    PairwiseMetricPromptTemplate,
    PointwiseMetric,
)
from toolpath.model import MetricResult
from toolpath.vertex.instance_inputs import InputError, Judged, Side

__all__ = [
    "JudgeFailure",
    "JudgeOptions",
    "asked_template",
    "check_variables",
    "judged_result",
    "room_for",
    "templated_result",
]

VARIABLE = re.compile(r"\{([_a-zA-Z][_a-zA-Z0-9]*)\}")
"""A template variable, as ``vertexai.evaluation.PromptTemplate`` reads them."""
MAX_SAMPLES = 32
CHOICES = {PairwiseChoice.CANDIDATE: "CANDIDATE", PairwiseChoice.BASELINE: "BASELINE", PairwiseChoice.SAME: "TIE"}
"""toolpath's pairwise choice -> the API's ``PairwiseChoice`` (its member's name)."""


class RpcCode(StrEnum):
    """A ``google.rpc.Code`` by name: the ``status`` of a Google API error, as the API and its SDKs spell it."""

    OK = "OK"
    CANCELLED = "CANCELLED"
    UNKNOWN = "UNKNOWN"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    ABORTED = "ABORTED"
    OUT_OF_RANGE = "OUT_OF_RANGE"
    UNIMPLEMENTED = "UNIMPLEMENTED"
    INTERNAL = "INTERNAL"
    UNAVAILABLE = "UNAVAILABLE"
    DATA_LOSS = "DATA_LOSS"


class JudgeFailure(InternalSignal):
    """No result from the judge: an HTTP status, its ``google.rpc`` code name, and why."""

    def __init__(self, status: int, code: RpcCode, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.retry_after = retry_after
        """Seconds after which the judge's budget has room again (429)."""


@dataclasses.dataclass(frozen=True)
class JudgeOptions:
    """Who judges, from the request's ``autorater_config`` and the judge's settings."""

    judge: Judge
    model: str
    samples: int = 1
    temperature: float | None = None
    flip: bool = False
    """Show a templated pairwise input's two responses the other way round on every other sample."""

    @classmethod
    def of(cls, judge: Judge, autorater: Any | None, where: str = "autorater_config") -> JudgeOptions:
        """From the request's ``autorater_config`` (an ``AutoraterConfig`` at ``where``): ``autorater_model``,
        ``sampling_count``, ``flip_enabled`` and ``generation_config.temperature``; another generation setting is
        refused, not ignored."""
        model, samples, temperature = judge.settings.model, 1, None
        if autorater is None:
            return cls(judge, model)
        if autorater.autorater_model:  # projects/…/publishers/google/models/gemini-2.5-flash, or the name
            model = autorater.autorater_model.rsplit("/models/", 1)[-1].rsplit("/", 1)[-1]
        if autorater.HasField("sampling_count"):
            samples = autorater.sampling_count
            if not 1 <= samples <= MAX_SAMPLES:
                raise InputError(f"{where}.sampling_count must be 1 to {MAX_SAMPLES}, got {samples}")
        if autorater.HasField("generation_config"):
            config = autorater.generation_config
            others = [f.name for f, _ in config.ListFields() if f.name != "temperature"]
            if others:
                raise InputError(f"{where}.generation_config.{others[0]}: toolpath's judge takes only temperature")
            if config.HasField("temperature"):
                temperature = config.temperature
        return cls(judge, model, samples, temperature, autorater.flip_enabled)


def judged_result(name: str, input: Judged, message: Any, options: JudgeOptions) -> dict[str, Any]:
    """The result fields (``score`` or ``pairwise_choice``, ``explanation``, ``confidence``) of one of Vertex AI's
    model-based inputs, ``message`` (``fluency_input`` …)."""
    instance = message.instance
    where = f"{name}.instance"
    row: dict[str, Any] = {"response": _required(instance, "prediction", where)}
    shown = [field for field in input.shown if instance.HasField(field) and getattr(instance, field)]
    row.update({field: getattr(instance, field) for field in shown})
    if input.reference_by_spec and message.metric_spec.use_reference:
        row["reference"] = _required(instance, "reference", where)
        shown.append("reference")
    base = BUILTIN_TEMPLATES[input.template] if isinstance(input.template, str) else input.template
    metric_name = name.removesuffix("_input")
    room_for(options.samples)  # the process's judge budget: a request refused before any call, not half-way
    if input.side is Side.PAIRWISE:
        row["baseline_model_response"] = _required(instance, "baseline_prediction", where)
        pairwise = PairwiseMetric(
            metric_name,
            PairwiseMetricPromptTemplate(base.criteria, PAIRWISE_RUBRIC, tuple(shown)),
            model=options.model,
            temperature=options.temperature,
            num_samples=options.samples,
        )
        result = _run(options.judge, lambda ask: pairwise.judge(row, ask))
        if result.score is None:
            return _no_rating(result.explanation or "")
        choices = _samples(result)
        choice = PairwiseChoice(result.details["pairwise_choice"])
        return {
            "pairwise_choice": CHOICES[choice],
            "explanation": result.explanation or "",
            "confidence": choices.count(choice) / len(choices),
        }
    template = dataclasses.replace(base, input_variables=tuple(shown))
    pointwise = PointwiseMetric(
        metric_name, template, model=options.model, temperature=options.temperature, num_samples=options.samples
    )
    result = _run(options.judge, lambda ask: pointwise.judge(row, ask))
    if result.score is None:
        return _no_rating(result.explanation or "")
    return {"score": result.score, "explanation": result.explanation or "", "confidence": _agreement(_samples(result))}


def templated_result(name: str, message: Any, options: JudgeOptions) -> dict[str, Any]:
    """The result fields of ``pointwise_metric_input`` / ``pairwise_metric_input``: the template filled from the
    instance, asked ``sampling_count`` times; ``custom_output`` holds the raw replies when the spec asks."""
    spec = message.metric_spec
    values = _instance_values(message.instance, f"{name}.instance")
    return asked_template(
        f"{name}.metric_spec",
        f"{name}.instance",
        spec,
        values,
        options,
        pairwise=name == "pairwise_metric_input",
        raw_output=spec.custom_output_format_config.return_raw_output,
    )


def asked_template(
    where: str,
    instance_where: str,
    spec: Any,
    values: dict[str, str],
    options: JudgeOptions,
    *,
    pairwise: bool = False,
    raw_output: bool = False,
) -> dict[str, Any]:
    """The result fields of a judge's prompt template, ``spec.metric_prompt_template`` (``spec`` at ``where`` in the
    request; its ``system_instruction`` and, pairwise, its response field names read too), its ``{variables}``
    filled from ``values`` (the instance's, at ``instance_where``) and asked ``options.samples`` times: ``score``
    (their mean) or ``pairwise_choice`` (the most chosen), and ``explanation``."""
    if not spec.metric_prompt_template.strip():
        raise InputError(f"{where}.metric_prompt_template is required")
    columns: tuple[str, str] | None = None
    if pairwise:
        candidate = spec.candidate_response_field_name or "response"
        baseline = spec.baseline_response_field_name or "baseline_model_response"
        for field, column in (("candidate_response_field_name", candidate), ("baseline_response_field_name", baseline)):
            if column not in values:
                raise InputError(f"{instance_where} has no {column!r} ({field})")
        columns = (candidate, baseline)
    check_variables(spec.metric_prompt_template, values, instance_where)
    flips = [bool(columns and options.flip and i % 2) for i in range(options.samples)]
    check_prompt_size(spec.metric_prompt_template, values, columns, options, where, spec.system_instruction)
    room_for(options.samples)  # the process's judge budget: a request refused before any call, not half-way

    def prompt(flipped: bool) -> str:
        shown = dict(values)
        if flipped and columns is not None:  # the two responses swap places; the reply is read swapped back
            shown[columns[0]], shown[columns[1]] = values[columns[1]], values[columns[0]]
        text = VARIABLE.sub(lambda m: shown[m.group(1)], spec.metric_prompt_template)
        return text + (PAIRWISE_FORMAT if pairwise else POINTWISE_FORMAT)

    config = None
    if spec.HasField("system_instruction") and spec.system_instruction:
        given: dict[str, Any] = {
            "system_instruction": spec.system_instruction,
            "response_mime_type": "application/json",
        }
        if options.temperature is not None:
            given["temperature"] = options.temperature
        config = json.dumps(given)
    requests = [
        JudgeRequest(  # with a config, a namespace: the cache keys it by the config too
            prompt(flipped),
            options.model,
            options.temperature,
            i,
            config=config,
            namespace=None if config is None else "instances",
        )
        for i, flipped in enumerate(flips)
    ]

    async def ask_all(ask: Any) -> list[JudgeReply]:
        return list(await asyncio.gather(*(ask(request) for request in requests)))

    replies: list[JudgeReply] = _run(options.judge, ask_all)
    refused = [reply for reply in replies if reply.retry_after is not None]
    if refused:  # the budget ran out part-way (other requests took it): the whole request is refused, not half-done
        wait = max(int(reply.retry_after or 1) for reply in refused)
        raise JudgeFailure(429, RpcCode.RESOURCE_EXHAUSTED, refused[0].error or "judge budget spent", retry_after=wait)
    values_read: list[Any] = []
    explanations: list[str] = []
    errors: list[str] = []
    for i, reply in enumerate(replies):
        try:
            value, why = _read_choice(reply, flips[i]) if pairwise else _read_score(reply)
        except JudgeParseError as exc:
            errors.append(f"sample {i + 1}: {exc}: {brief(exc.raw)!r}")
            continue
        values_read.append(value)
        explanations.append(why)
    fields: dict[str, Any] = {}
    if raw_output:
        fields["custom_output"] = {"raw_outputs": {"raw_output": [reply.text or "" for reply in replies]}}
    if not values_read:
        failure = _failure(errors)
        if failure is not None:
            raise failure
        return {**fields, **_no_rating("; ".join(errors))}
    if pairwise:
        ranked = Counter(values_read).most_common()
        winner = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else PairwiseChoice.SAME
        fields["pairwise_choice"] = CHOICES[winner]
        fields["explanation"] = explanations[values_read.index(winner)] if winner in values_read else explanations[0]
    else:
        score = sum(values_read) / len(values_read)
        fields["score"] = score
        fields["explanation"] = explanations[values_read.index(score)] if score in values_read else explanations[0]
    return fields


def room_for(calls: int) -> None:
    """A 429 :class:`JudgeFailure` (with when to try again) unless the process's judge budget has room for
    ``calls`` more calls this minute."""
    try:
        process_budget().check(calls)
    except BudgetSpent as spent:
        raise JudgeFailure(429, RpcCode.RESOURCE_EXHAUSTED, str(spent), retry_after=spent.retry_after) from None


def check_prompt_size(
    template: str,
    values: dict[str, str],
    columns: tuple[str, str] | None,
    options: JudgeOptions,
    where: str,
    system_instruction: str = "",
) -> None:
    """An :class:`InputError` when ``template`` filled from ``values`` would be longer than the judge's
    ``max_prompt_chars``, measured before it is built: a short template that names a long value many times would
    otherwise make a prompt many times the request's size."""
    lengths = {name: len(value) for name, value in values.items()}
    orders = [lengths]
    if columns is not None and options.flip:  # a flipped sample shows each response where the other stood
        orders.append({**lengths, columns[0]: lengths[columns[1]], columns[1]: lengths[columns[0]]})
    limit = options.judge.settings.max_prompt_chars
    for shown in orders:
        size = len(template) + sum(shown[m.group(1)] - len(m.group(0)) for m in VARIABLE.finditer(template))
        size += len(system_instruction)  # sent with every sample too
        if size > limit:
            raise InputError(
                f"{where}.metric_prompt_template: filled from the instance, the judge prompt (with its system "
                f"instruction) would be {size} characters, over this server's limit of {limit} (judge setting "
                "max_prompt_chars)"
            )


def check_variables(template: str, values: dict[str, str], instance_where: str) -> None:
    """An :class:`InputError` naming the variables of ``template`` that ``values`` (the instance's) lacks."""
    missing = sorted({v for v in VARIABLE.findall(template) if v not in values})
    if missing:
        raise InputError(f"{instance_where} has no value for the template's {', '.join(missing)}")


# --- helpers -------------------------------------------------------------------------------------------------


def _required(instance: Any, field: str, where: str) -> str:
    if not instance.HasField(field):
        raise InputError(f"{where}.{field} is required")
    return str(getattr(instance, field))


def _instance_values(instance: Any, where: str) -> dict[str, str]:
    """The instance's values by name: its ``json_instance`` (a JSON object; a value that is not a string is shown
    as JSON) or its ``content_map_instance`` (text parts, joined by new lines)."""
    kind = instance.WhichOneof("instance")
    if kind == "json_instance":
        try:
            data = json.loads(instance.json_instance)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}.json_instance is not JSON ({exc.msg} at char {exc.pos})") from None
        if not isinstance(data, dict):
            raise InputError(f"{where}.json_instance must be a JSON object")
        return {k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in data.items()}
    if kind == "content_map_instance":
        values = {}
        for key, value in instance.content_map_instance.values.items():
            texts = []
            for c, content in enumerate(value.contents):
                for p, part in enumerate(content.parts):
                    if part.WhichOneof("data") != "text":
                        raise InputError(f"{where}.content_map_instance.values[{key!r}].contents[{c}].parts[{p}]: "
                                         "only text parts are judged")  # fmt: skip
                    texts.append(part.text)
            values[key] = "\n".join(texts)
        return values
    raise InputError(f"{where} needs json_instance or content_map_instance")


def _run(judge: Judge, work: Any) -> Any:
    try:
        return _checked(judge.run(work))
    except ConfigError as exc:  # no credentials for the judge model on this server
        raise JudgeFailure(400, RpcCode.FAILED_PRECONDITION, str(exc)) from None


def _checked(result: Any) -> Any:
    """``result``, or the :class:`JudgeFailure` its errors are; a result without a score whose replies merely held
    no rating stays a result (its explanation says so)."""
    if isinstance(result, MetricResult):
        errors = result.details.get("judge_errors")
        spent = [str(e) for e in errors if "judge budget spent" in str(e)] if isinstance(errors, list) else []
        if spent:  # some samples refused part-way: the request is refused whole, never scored on the others
            raise _failure(spent) or JudgeFailure(429, RpcCode.RESOURCE_EXHAUSTED, spent[0])
    if isinstance(result, MetricResult) and result.score is None:
        errors = result.details.get("judge_errors")
        failure = _failure([str(e) for e in errors] if isinstance(errors, list) else [result.explanation or ""])
        if failure is not None:
            raise failure
    return result


MODEL_ERROR = re.compile(r"judge model error (\d{3})")
RETRY_AFTER = re.compile(r"retry after (\d+) s")


def _failure(errors: Sequence[str]) -> JudgeFailure | None:
    """Why the judge could not be asked: its budget (429, as a quota), the model refusing the request (400: the
    model name or the request is wrong; asking again changes nothing), the model unreachable or failing (503,
    worth a retry). ``None`` when it was asked and its replies held no rating: that is the result."""
    text = "; ".join(errors)
    if any("budget exhausted" in e or "judge budget spent" in e for e in errors):
        waits = [int(m.group(1)) for e in errors for m in [RETRY_AFTER.search(e)] if m]
        return JudgeFailure(429, RpcCode.RESOURCE_EXHAUSTED, text, retry_after=max(waits) if waits else None)
    if any("judge setting max_prompt_chars" in e for e in errors):
        return JudgeFailure(400, RpcCode.INVALID_ARGUMENT, text)
    codes = [int(m.group(1)) for e in errors for m in [MODEL_ERROR.search(e)] if m]
    if any(400 <= code < 500 for code in codes):
        return JudgeFailure(400, RpcCode.FAILED_PRECONDITION, f"the judge model refused the request: {text}")
    if codes or any(s in e for e in errors for s in ("unavailable", "judge request failed")):
        return JudgeFailure(503, RpcCode.UNAVAILABLE, text)
    return None


def _no_rating(why: str) -> dict[str, Any]:
    """A result without a score (or choice): the judge answered, but not with a rating it could read."""
    return {"explanation": f"no rating: {why}"}


def _samples(result: MetricResult) -> list[Any]:
    samples = result.details.get("samples")
    return list(samples) if isinstance(samples, list) and samples else [result.score]


def _agreement(samples: Sequence[Any]) -> float:
    return Counter(samples).most_common(1)[0][1] / len(samples)


def _read_score(reply: JudgeReply) -> tuple[float, str]:
    if reply.error:
        raise JudgeParseError(reply.error, reply.text or "")
    data = parse_reply(reply.text)
    raw: Any = data.get("score", data.get("rating"))
    try:
        return float(raw), str(data.get("explanation") or "")
    except (TypeError, ValueError):
        raise JudgeParseError(f"score {raw!r} is not a number", reply.text or "") from None


def _read_choice(reply: JudgeReply, flipped: bool) -> tuple[PairwiseChoice, str]:
    """A pairwise reply: "A" is the baseline, "B" the candidate, as in Vertex AI's pairwise templates (the other
    way round in a ``flipped`` sample)."""
    if reply.error:
        raise JudgeParseError(reply.error, reply.text or "")
    data = parse_reply(reply.text)
    raw = str(data.get("pairwise_choice", data.get("choice", ""))).strip().upper()
    a, b = (
        (PairwiseChoice.CANDIDATE, PairwiseChoice.BASELINE)
        if flipped
        else (PairwiseChoice.BASELINE, PairwiseChoice.CANDIDATE)
    )
    chosen = {"A": a, "B": b, "SAME": PairwiseChoice.SAME, "TIE": PairwiseChoice.SAME}.get(raw)
    if chosen is None:
        raise JudgeParseError(f"pairwise_choice {raw!r} is not A, SAME or B", reply.text or "")
    return chosen, str(data.get("explanation") or "")
