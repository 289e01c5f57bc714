"""Vertex AI's ``evaluateInstances`` on the ports of ``toolpath collect`` and ``toolpath ui``: the service of
:mod:`toolpath.vertex.instances` mounted as the collector's extra routes (which know nothing of it)."""

from __future__ import annotations

from typing import Any

from toolpath.collector.routes import GrpcMethod, PostRoute, RoutesApp, RpcError
from toolpath.judges.client import JudgeCache
from toolpath.vertex.instances import PATH, ApiVersion, EvaluateInstances, InstancesError, error_body

GRPC_SERVICE = "google.cloud.aiplatform.{version}.EvaluationService"


def evaluate_instances_api(cache: JudgeCache | None) -> tuple[list[PostRoute], list[GrpcMethod]]:
    """``POST /v1beta1/projects/*/locations/*:evaluateInstances`` (and the rest of :data:`PATH`), and the gRPC method
    ``google.cloud.aiplatform.v1beta1.EvaluationService/EvaluateInstances`` (and ``v1``): one service, so one
    judge budget, its replies cached in ``cache`` (the store)."""
    service = EvaluateInstances(cache=cache)
    routes = [
        PostRoute(
            PATH,
            lambda path, query, body: service.post(path, body, query),
            lambda status, message: error_body(status, message),
        )
    ]
    methods = [
        GrpcMethod(GRPC_SERVICE.format(version=version.value), "EvaluateInstances", _grpc(service, version))
        for version in ApiVersion
    ]
    return routes, methods


def instances_refused(why: str) -> tuple[list[PostRoute], list[GrpcMethod]]:
    """The routes and methods of :func:`evaluate_instances_api` answering every request 403 / PERMISSION_DENIED with
    ``why`` (how to turn it on): a client is told, where a missing route would be a bare 404."""

    def refuse(path: str, query: str, body: bytes) -> tuple[int, bytes, dict[str, str]]:
        return 403, error_body(403, why), {}

    def refuse_rpc(body: bytes) -> bytes:
        raise RpcError("PERMISSION_DENIED", why)

    routes = [PostRoute(PATH, refuse, lambda status, message: error_body(status, message))]
    methods = [GrpcMethod(GRPC_SERVICE.format(version=v.value), "EvaluateInstances", refuse_rpc) for v in ApiVersion]
    return routes, methods


def _grpc(service: EvaluateInstances, version: ApiVersion) -> Any:
    def call(body: bytes) -> bytes:
        try:
            return service.grpc_call(version, body)
        except InstancesError as exc:
            raise RpcError(exc.code, exc.message) from None

    return call


def with_evaluate_instances(app: Any, cache: JudgeCache | None, *, token: str | None, loopback_only: bool) -> Any:
    """``app`` (the UI's ASGI app) with the ``evaluateInstances`` routes in front of it, behind the bearer
    ``token`` and, on loopback, the ``Host`` check (``toolpath ui``)."""
    routes, _ = evaluate_instances_api(cache)
    return RoutesApp(routes, app, token=token, loopback_only=loopback_only)
