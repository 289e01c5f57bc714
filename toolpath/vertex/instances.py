"""Vertex AI's ``evaluateInstances``, answered by toolpath: ``POST /v1beta1/projects/*/locations/*:evaluateInstances``
(and ``/v1/``) in the service's JSON, or the ``EvaluationService/EvaluateInstances`` gRPC method, scored by
toolpath's metrics and judge (docs/vertex.md).

Requests are read with the message types of the installed ``google-cloud-aiplatform`` (``pip install
'toolpath[vertex]'``), as the service reads them: ``snake_case`` or ``camelCase`` keys, an unknown field is an
error, two metric inputs are an error. Two leniencies for the reference's own ``curl`` examples: a trailing comma
before ``}`` or ``]``, and a repeated field given as several keys of one name (their values in order); any other
key given twice is an error. Replies are the response message in JSON (``camelCase``), errors
``{"error": {"code", "message", "status"}}`` with the HTTP status Google APIs pair with the code.

Nothing here listens: the command that serves it (:mod:`toolpath.cli.vertex_api`) mounts :meth:`post` and
:meth:`grpc_call` on its ports.
"""

from __future__ import annotations

import importlib
import json
import re
import urllib.parse
from enum import StrEnum
from typing import Any

from toolpath.errors import ConfigError, InternalSignal, MetricError
from toolpath.judges.client import Backend, Judge, JudgeCache, JudgeSettings, settings_from
from toolpath.judges.process_budget import WhenSpent
from toolpath.vertex.instance_inputs import COMPUTED, JUDGED, NOT_SERVED, InputError, camel_case, computed_score
from toolpath.vertex.instance_judges import (
    JudgeFailure,
    JudgeOptions,
    RpcCode,
    judged_result,
    templated_result,
)
from toolpath.vertex.instance_metrics import metric_results, newer_field

__all__ = ["PATH", "ApiVersion", "EvaluateInstances", "InstancesError", "error_body"]

PATH = re.compile(r"/(?P<version>v1|v1beta1)(?:/(?P<location>projects/[^/:]+/locations/[^/:]+))?/?:evaluateInstances")
"""The paths served: ``/v1beta1/{location=projects/*/locations/*}:evaluateInstances``, ``/v1beta1:evaluateInstances``
(the location in the body), and the same under ``/v1``; a ``/`` before ``:evaluateInstances`` is taken, as the
GenAI-style SDK (``agentplatform.Client``, formerly ``vertexai.Client``) sends one and the service takes it."""
LOCATION = re.compile(r"projects/[^/:]+/locations/[^/:]+")
INSTALL_HINT = "pip install 'toolpath[vertex]'"

STATUS_NAMES = {
    400: RpcCode.INVALID_ARGUMENT,
    401: RpcCode.UNAUTHENTICATED,
    403: RpcCode.PERMISSION_DENIED,
    404: RpcCode.NOT_FOUND,
    405: RpcCode.UNIMPLEMENTED,
    408: RpcCode.DEADLINE_EXCEEDED,
    413: RpcCode.INVALID_ARGUMENT,
    415: RpcCode.INVALID_ARGUMENT,
    429: RpcCode.RESOURCE_EXHAUSTED,
    500: RpcCode.INTERNAL,
    501: RpcCode.UNIMPLEMENTED,
    503: RpcCode.UNAVAILABLE,
}


class ApiVersion(StrEnum):
    V1 = "v1"
    V1BETA1 = "v1beta1"


class InstancesError(InternalSignal):
    """A request answered with an error: the HTTP status, the ``google.rpc`` code name (``INVALID_ARGUMENT``)
    and the message."""

    def __init__(
        self, status: int, message: str, code: RpcCode | None = None, *, retry_after: int | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.message = status, message
        self.code = code or STATUS_NAMES.get(status, RpcCode.UNKNOWN)
        self.retry_after = retry_after
        """With a 429: the seconds after which the judge's budget has room (``Retry-After``)."""

    def headers(self) -> dict[str, str]:
        return {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}


def error_body(status: int, message: str, code: RpcCode | None = None) -> bytes:
    """A Google API error: ``{"error": {"code": 400, "message": "…", "status": "INVALID_ARGUMENT"}}``."""
    error = {"code": status, "message": message, "status": code or STATUS_NAMES.get(status, RpcCode.UNKNOWN)}
    return json.dumps({"error": error}, ensure_ascii=False).encode()


def message_types(version: ApiVersion) -> Any:
    """The ``evaluation_service`` types module of ``google-cloud-aiplatform`` for ``version``."""
    module = "google.cloud.aiplatform_v1beta1" if version is ApiVersion.V1BETA1 else "google.cloud.aiplatform_v1"
    try:
        return importlib.import_module(f"{module}.types.evaluation_service")
    except ImportError:
        raise InstancesError(
            501, f"evaluateInstances needs google-cloud-aiplatform on the server ({INSTALL_HINT})"
        ) from None


class EvaluateInstances:
    """The service: one judge for its life (its settings from ``TOOLPATH_JUDGE_*`` unless given, its replies
    cached in ``cache``, its budget spent across requests)."""

    def __init__(
        self, *, cache: JudgeCache | None = None, settings: JudgeSettings | None = None, backend: Backend | None = None
    ) -> None:
        # a request's judge calls never wait for the process's judge budget: over it, the request is a 429
        self.judge = Judge(
            settings=settings or settings_from(None), cache=cache, backend=backend, when_spent=WhenSpent.REFUSE
        )

    # --- front doors ---------------------------------------------------------------------------------------

    def post(self, path: str, body: bytes, query: str = "") -> tuple[int, bytes, dict[str, str]]:
        """An HTTP request's status, JSON reply and extra headers (``Retry-After`` with a 429); enums as numbers
        when the query asks, as Google's clients do (``$alt=json;enum-encoding=int``)."""
        try:
            match = PATH.fullmatch(path)
            if match is None:
                raise InstancesError(404, f"no route {path}")
            version = ApiVersion(match.group("version"))
            types = message_types(version)
            request = self._parse_json(body, types)
            if match.group("location"):
                request.location = match.group("location")
            reply = self.evaluate(request, types)
        except InstancesError as exc:
            return exc.status, error_body(exc.status, exc.message, exc.code), exc.headers()
        from google.protobuf import json_format

        as_numbers = "enum-encoding=int" in urllib.parse.unquote(query)
        reply_json = json_format.MessageToDict(reply, use_integers_for_enums=as_numbers)
        return 200, json.dumps(reply_json, ensure_ascii=False).encode(), {}

    def grpc_call(self, version: ApiVersion, body: bytes) -> bytes:
        """A gRPC request's serialized reply; :class:`InstancesError` for an error status."""
        from google.protobuf.message import DecodeError

        types = message_types(version)
        request = types.EvaluateInstancesRequest.pb()()
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise InstancesError(400, f"the request is not an EvaluateInstancesRequest ({exc})") from None
        reply: bytes = self.evaluate(request, types).SerializeToString()
        return reply

    # --- the request ---------------------------------------------------------------------------------------

    def _parse_json(self, body: bytes, types: Any) -> Any:
        from google.protobuf import json_format

        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InstancesError(400, f"Invalid JSON payload received. Not UTF-8 at byte {exc.start}.") from None
        try:
            data = json.loads(_without_trailing_commas(text), object_pairs_hook=_Keys)
        except json.JSONDecodeError as exc:
            raise InstancesError(
                400, f"Invalid JSON payload received. {exc.msg} at line {exc.lineno} column {exc.colno}."
            ) from None
        if not isinstance(data, dict):
            raise InstancesError(400, "Invalid JSON payload received. The request must be a JSON object.")
        request_type = types.EvaluateInstancesRequest.pb()
        _newer_fields(data, request_type.DESCRIPTOR)
        plain = _fold(data, request_type.DESCRIPTOR, "")
        request = request_type()
        try:
            json_format.ParseDict(plain, request)
        except json_format.ParseError as exc:  # its list of every field name is left out
            said = str(exc).split("\n Available Fields", 1)[0]
            raise InstancesError(400, f"Invalid JSON payload received. {said}") from None
        return request

    def evaluate(self, request: Any, types: Any) -> Any:
        """The ``EvaluateInstancesResponse`` (protobuf) of a request (protobuf)."""
        if not LOCATION.fullmatch(request.location):
            raise InstancesError(400, f"location {request.location!r}: expected projects/*/locations/*")
        which = request.WhichOneof("metric_inputs")
        newer = [field for field in ("metrics", "metric_sources", "instance") if _has(request, field)]
        if which is None and not newer:
            raise InstancesError(400, "the request has no metric input (exact_match_input, rouge_input, …, or metrics)")
        if which is not None and newer:
            raise InstancesError(400, f"{which} and {newer[0]} are two forms of request: send one")
        if which in NOT_SERVED:
            raise InstancesError(501, f"{which}: {NOT_SERVED[which]}")
        reply = types.EvaluateInstancesResponse.pb()()
        try:
            if which is None:  # metrics (or metric_sources) with an instance
                for result in metric_results(request, self.judge):
                    _set(reply.metric_results.add(), result)
                return reply
            message = getattr(request, which)
            if which in COMPUTED:
                self._computed(which, message, reply)
                return reply
            autorater = request.autorater_config if _has(request, "autorater_config") else None
            options = JudgeOptions.of(self.judge, autorater)
            if which in JUDGED:
                fields = judged_result(which, JUDGED[which], message, options)
                result_field = JUDGED[which].result
            else:  # pointwise_metric_input, pairwise_metric_input
                fields = templated_result(which, message, options)
                result_field = which.removesuffix("_input") + "_result"
        except (InputError, MetricError) as exc:
            raise InstancesError(400, str(exc)) from None
        except ConfigError as exc:  # what a metric needs is missing on this server (NLTK's data)
            raise InstancesError(400, str(exc), RpcCode.FAILED_PRECONDITION) from None
        except JudgeFailure as exc:
            raise InstancesError(exc.status, exc.message, exc.code, retry_after=exc.retry_after) from None
        _set(getattr(reply, result_field), fields)
        return reply

    def _computed(self, which: str, message: Any, reply: Any) -> None:
        spec = COMPUTED[which]
        metric = spec.build(message.metric_spec, f"{which}.metric_spec")
        if not len(message.instances):
            raise InputError(f"{which}.instances is empty: nothing to evaluate")
        values = getattr(getattr(reply, spec.results), spec.values)
        for i, instance in enumerate(message.instances):
            where = f"{which}.instances[{i}]"
            values.add(score=computed_score(metric, spec.row(instance, where), where))


def _newer_fields(data: dict[str, Any], descriptor: Any) -> None:
    """The request fields the GenAI SDK (``agentplatform.Client``) sends that the installed message types may lack:
    an input toolpath does not serve is said to be (501), not an unknown field; ``allowCrossRegionModel`` is taken off
    ``data``, once checked to be one boolean. That flag lets Google's service route a judge's request to another
    region; toolpath's judge asks the model its settings name, wherever that is, so it has nothing to change here.
    Types that know a field parse it like any other."""
    for name, why in NOT_SERVED.items():
        if name not in descriptor.fields_by_name and (name in data or camel_case(name) in data):
            raise InstancesError(501, f"{name}: {why}")
    refused = newer_field(data, descriptor)
    if refused is not None:
        raise InstancesError(501, refused)
    if "allow_cross_region_model" in descriptor.fields_by_name:
        return
    names = [key for key in ("allow_cross_region_model", "allowCrossRegionModel") if key in data]
    times = sum(len(data.repeated.get(key, [None])) if isinstance(data, _Keys) else 1 for key in names)
    if times > 1:
        raise InstancesError(400, f"Invalid JSON payload received. allowCrossRegionModel is given {times} times.")
    for key in names:
        if not isinstance(data.pop(key), bool):
            raise InstancesError(400, f"Invalid JSON payload received. {key} must be a boolean.")


def _set(message: Any, fields: dict[str, Any]) -> None:
    from google.protobuf import json_format

    json_format.ParseDict(fields, message)


def _has(message: Any, field: str) -> bool:
    """Whether ``message`` has ``field`` set (``False`` where its version of the API has no such field: v1)."""
    descriptor = message.DESCRIPTOR.fields_by_name.get(field)
    if descriptor is None:
        return False
    return len(getattr(message, field)) > 0 if descriptor.is_repeated else message.HasField(field)


# --- JSON leniencies -------------------------------------------------------------------------------------------


class _Keys(dict[str, Any]):
    """A JSON object whose repeated keys are kept: ``repeated[key]`` lists every value given under ``key``."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__()
        self.repeated: dict[str, list[Any]] = {}
        for key, value in pairs:
            if key in self:
                self.repeated.setdefault(key, [self[key]]).append(value)
            self[key] = value


def _fold(value: Any, descriptor: Any, where: str) -> Any:
    """``value`` (a parsed JSON object for the message ``descriptor``) as plain JSON: a key given several times is
    one list when its field is repeated (each value a list or one item), an error otherwise."""
    if not isinstance(value, dict):
        return value
    fields = {f.name: f for f in descriptor.fields} | {f.json_name: f for f in descriptor.fields}
    plain: dict[str, Any] = {}
    repeated = value.repeated if isinstance(value, _Keys) else {}
    for key, item in value.items():
        field = fields.get(key)
        path = f"{where}.{key}" if where else key
        if key in repeated:
            if field is None or not field.is_repeated or _is_map(field):
                raise InstancesError(400, f"Invalid JSON payload received. {path} is given {len(repeated[key])} times.")
            item = [x for given in repeated[key] for x in (given if isinstance(given, list) else [given])]
        if field is not None and field.message_type is not None:
            if _is_map(field) and isinstance(item, dict):
                value_field = field.message_type.fields_by_name["value"]
                if value_field.message_type is not None:
                    item = {k: _fold(v, value_field.message_type, f"{path}[{k!r}]") for k, v in item.items()}
            elif isinstance(item, list):
                item = [_fold(x, field.message_type, f"{path}[{i}]") for i, x in enumerate(item)]
            else:
                item = _fold(item, field.message_type, path)
        plain[key] = item
    return plain


def _is_map(field: Any) -> bool:
    return bool(field.message_type is not None and field.message_type.GetOptions().map_entry)


def _without_trailing_commas(text: str) -> str:
    """``text`` without a comma that only precedes ``}`` or ``]`` (outside strings)."""
    if "," not in text:
        return text
    out: list[str] = []
    in_string = escaped = False
    pending: int | None = None  # where in ``out`` an unconfirmed comma is
    for ch in text:
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch in "}]" and pending is not None:
            out[pending] = ""
        if not ch.isspace():
            pending = None
        if ch == ",":
            pending = len(out)
        elif ch == '"':
            in_string = True
        out.append(ch)
    return "".join(out)
