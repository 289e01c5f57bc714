"""The service as operators run it: ``GET /metrics`` (its own families and the online scores, parsed with the
Prometheus client's parser), ``GET /healthz`` and ``GET /readyz`` (a schema behind head, stopped workers, a
PostgreSQL that goes away and comes back)."""

from __future__ import annotations

import json
import time

import grpc
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.builders import invocation, otlp_json
from tests.helpers.collector import TOKEN as TOKEN_OF_COLLECTOR
from tests.helpers.collector import Collector, free_port, http_get, post_traces, serving
from tests.helpers.pgserver import postgres_server
from toolpath.collector.limits import Limits
from toolpath.collector.otlp import _hex_ids_to_base64
from toolpath.evaluation.online import OnlineEvaluator
from toolpath.store import migrate
from toolpath.store import schema as t
from toolpath.store.store import Store

TOKEN = "t0k"


def post(url: str, body: bytes, token: str | None = TOKEN) -> int:
    return post_traces(url, body, "application/json", token)[0]


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``GET /metrics``, by name and labels, as Prometheus's text parser reads it."""
    return scrape_with(url, TOKEN)


def scrape_with(url: str, token: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    status, body, headers = http_get(f"{url}/metrics", token)
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


FLAT = {"gen_ai_evaluation_evaluator_name": "default"}
"""The label of a flat online.toml's one evaluator."""


def value(samples: dict, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def base_url(service) -> str:
    return f"http://127.0.0.1:{service.options.http_port}"


def test_metrics_count_requests_spans_invocations_and_limits(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'm.db'}")
    grpc_port = free_port()
    with serving(store, token=TOKEN, grpc_port=grpc_port, limits=Limits(max_spans_per_trace=4)) as service:
        url = base_url(service)
        assert post(url, otlp_json(f"{1:032x}", tool_calls=2)) == 200  # 3 spans
        assert post(url, otlp_json(f"{2:032x}", tool_calls=5)) == 200  # 6 spans, 2 over the trace limit
        assert post(url, b"{not json") == 400
        assert post(url, otlp_json(f"{3:032x}", tool_calls=1), token="wrong") == 401
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            request = ExportTraceServiceRequest()
            json_format.ParseDict(_hex_ids_to_base64(json.loads(otlp_json(f"{4:032x}", tool_calls=1))), request)
            stub.Export(request, metadata=[("authorization", f"Bearer {TOKEN}")], timeout=30)
            with pytest.raises(grpc.RpcError) as refused:
                stub.Export(request, timeout=30)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED

        assert http_get(f"{url}/metrics")[0] == 401  # behind the token, like the traces
        samples = scrape(url)
        with serving(store) as other:  # a second service in the process counts only its own
            assert value(scrape(base_url(other)), "toolpath_spans_received_total") == 0

    assert value(samples, "toolpath_spans_received_total") == 3 + 6 + 2
    assert value(samples, "toolpath_spans_stored_total") == 3 + 4 + 2
    assert value(samples, "toolpath_spans_rejected_total", reason="trace_limit") == 2
    assert value(samples, "toolpath_limit_hits_total", limit="spans_over_trace_limit") == 2
    assert value(samples, "toolpath_invocations_written_total") == 3
    assert value(samples, "toolpath_requests_total", protocol="http", code="200") == 2
    assert value(samples, "toolpath_requests_total", protocol="http", code="400") == 1
    assert value(samples, "toolpath_requests_total", protocol="http", code="401") == 1
    assert value(samples, "toolpath_requests_total", protocol="grpc", code="OK") == 1
    assert value(samples, "toolpath_requests_total", protocol="grpc", code="UNAUTHENTICATED") == 1
    assert value(samples, "toolpath_request_duration_seconds_count", protocol="http") == 4
    assert value(samples, "toolpath_rebuild_duration_seconds_count") == 3
    assert value(samples, "toolpath_exports_in_flight") == 0
    assert value(samples, "toolpath_store_errors_total") == 0
    assert ("toolpath_online_jobs_done_total", ()) not in samples  # no online evaluation here
    store.close()


def test_metrics_add_up_every_worker_whichever_answers(tmp_path):
    collector = Collector(tmp_path, None, "--workers", "3", "--max-spans-per-trace", "4").start()
    try:
        statuses = [
            collector.post(otlp_json(f"{n:032x}", tool_calls=5), "application/json")[0]  # 6 spans, 2 over the limit
            for n in range(1, 13)
        ]  # each on a new connection: the parent deals them to the workers in turn
        assert statuses == [200] * 12
        scrapes = [scrape_with(collector.url, TOKEN_OF_COLLECTOR) for _ in range(9)]
    finally:
        collector.stop()
    assert collector.process.returncode == 0
    for samples in scrapes:  # the same totals from every worker that answered
        assert value(samples, "toolpath_spans_received_total") == 12 * 6
        assert value(samples, "toolpath_spans_stored_total") == 12 * 4
        assert value(samples, "toolpath_limit_hits_total", limit="spans_over_trace_limit") == 12 * 2
        assert value(samples, "toolpath_requests_total", protocol="http", code="200") == 12
        assert value(samples, "toolpath_invocations_written_total") == 12
        assert value(samples, "toolpath_exports_in_flight") == 0
    assert "limits hit (spans over trace limit: 24)" in collector.process.stdout.read()  # every worker's, summed


def test_online_scores_are_exposed_under_the_names_of_the_otlp_export(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'o.db'}")
    config = {"metrics": ["tool_call_count"], "thresholds": {"tool_call_count": 2}, "poll_seconds": 0.05}
    online = OnlineEvaluator(store, config).start()
    with serving(store, online, token=TOKEN) as service:
        url = base_url(service)
        for n, calls in enumerate((1, 2, 3)):
            assert post(url, otlp_json(f"{n + 1:032x}", tool_calls=calls)) == 200
        assert online.drain(20)
        samples = scrape(url)
        ready = http_get(f"{url}/readyz")
        assert ready[0] == 200 and json.loads(ready[1])["online_workers"] == 2
        online.stop()
        stopped = http_get(f"{url}/readyz")
    assert stopped[0] == 503 and json.loads(stopped[1])["reason"] == "0 of 2 online worker(s) running"

    labels = {"gen_ai_evaluation_name": "tool_call_count", "gen_ai_agent_name": "bot", **FLAT}
    assert value(samples, "gen_ai_evaluation_results_total", **labels, gen_ai_evaluation_score_label="pass") == 2
    assert value(samples, "gen_ai_evaluation_results_total", **labels, gen_ai_evaluation_score_label="fail") == 1
    assert value(samples, "gen_ai_evaluation_score_count", **labels) == 3
    assert value(samples, "gen_ai_evaluation_score_sum", **labels) == 1 + 2 + 3
    assert value(samples, "gen_ai_evaluation_score_bucket", **labels, le="2.0") == 2
    for family, expected in (("queued", 3), ("claimed", 3), ("done", 3), ("failed", 0), ("shed", 0)):
        assert value(samples, f"toolpath_online_jobs_{family}_total") == expected
    assert value(samples, "toolpath_online_scoring_lag_seconds_count") == 3
    assert value(samples, "toolpath_online_backlog", status="pending") == 0
    assert value(samples, "toolpath_online_backlog", status="claimed") == 0
    assert value(samples, "toolpath_online_workers_alive") == 2
    store.close()


def test_healthz_and_readyz_need_no_token_and_readyz_fails_on_a_schema_behind_head(tmp_path):
    current = Store(f"sqlite:///{tmp_path / 'current.db'}")
    with serving(current, token=TOKEN) as service:
        health = http_get(f"{base_url(service)}/healthz")
        ready = http_get(f"{base_url(service)}/readyz")
    assert health[0] == 200 and json.loads(health[1]) == {"status": "ok"}
    assert ready[0] == 200 and json.loads(ready[1]) == {"status": "ready", "schema": migrate.HEAD}

    behind = Store(f"sqlite:///{tmp_path / 'behind.db'}", create=False)
    behind.upgrade("0002")
    with serving(behind, token=TOKEN) as service:
        ready = http_get(f"{base_url(service)}/readyz")
    assert ready[0] == 503
    assert json.loads(ready[1])["reason"] == (
        f"store schema at revision 0002, head is {migrate.HEAD} (run 'toolpath db upgrade')"
    )
    current.close()
    behind.close()


def test_readyz_waits_for_a_session_evaluator_to_load_its_judges_modules(tmp_path, monkeypatch):
    """Judging a conversation loads google-adk's evaluation modules (seconds): until they are loaded the collector
    is not ready, so traffic routed by readiness never meets a cold judge; then it is."""
    import threading

    from toolpath.evaluation.online import workers

    loading = threading.Event()
    monkeypatch.setattr(workers, "warm_up", lambda: loading.wait(30))
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    config = {"evaluator": [{"name": "conversations", "target": "session", "metrics": ["tool_call_count"],
                             "aggregate": {"tool_call_count": "mean"}}]}  # fmt: skip
    online = OnlineEvaluator(store, config)
    online.start()
    try:
        with serving(store, online=online, token=TOKEN) as service:
            before = http_get(f"{base_url(service)}/readyz")
            loading.set()
            assert online.warm.wait(30)
            after = http_get(f"{base_url(service)}/readyz")
    finally:
        online.stop()
        store.close()
    assert before[0] == 503 and json.loads(before[1])["reason"] == "online evaluation is loading its judges' modules"
    assert after[0] == 200 and json.loads(after[1])["online_workers"] == 2


@pytest.fixture
def cluster():
    with postgres_server().controlled() as running:
        yield running


def test_readyz_goes_503_while_postgresql_is_stopped_and_store_errors_are_counted(cluster):
    store = Store(cluster.url)
    with serving(store, token=TOKEN) as service:
        url = base_url(service)
        assert http_get(f"{url}/readyz")[0] == 200
        assert post(url, otlp_json(f"{1:032x}", tool_calls=1)) == 200
        cluster.stop()
        down = http_get(f"{url}/readyz")
        assert post(url, otlp_json(f"{2:032x}", tool_calls=1)) == 503
        samples = scrape(url)  # the collector's own metrics still answer
        cluster.start()
        deadline = time.monotonic() + 30
        while http_get(f"{url}/readyz")[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert http_get(f"{url}/readyz")[0] == 200
    assert down[0] == 503 and json.loads(down[1])["reason"].startswith("store unreachable: ")
    assert value(samples, "toolpath_store_errors_total") == 1
    assert value(samples, "toolpath_store_retries_total") == 2
    assert value(samples, "toolpath_spans_rejected_total", reason="store_error") == 2
    store.close()


def test_online_with_workers_scores_each_invocation_once_and_metrics_add_up_every_worker(tmp_path):
    online = (
        'metrics = ["tool_call_count"]\nthresholds = { tool_call_count = 2 }\nbatch_size = 1\npoll_seconds = 0.05\n'
    )
    (tmp_path / "online.toml").write_text(online)
    collector = Collector(tmp_path, None, "--workers", "2", "--online", str(tmp_path / "online.toml")).start()
    traces = 24
    try:
        statuses = [
            collector.post(otlp_json(f"{n:032x}", tool_calls=1 + n % 3), "application/json")[0]
            for n in range(1, traces + 1)
        ]  # each on a new connection: the parent deals them to the workers in turn, and each enqueues what it stores
        assert statuses == [200] * traces
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # each worker tells its counts after every batch it scores
            samples = scrape_with(collector.url, TOKEN_OF_COLLECTOR)
            if value(samples, "toolpath_online_jobs_done_total") == traces:
                break
            time.sleep(0.1)
        scrapes = [scrape_with(collector.url, TOKEN_OF_COLLECTOR) for _ in range(6)]
    finally:
        collector.stop()
    assert collector.process.returncode == 0
    labels = {"gen_ai_evaluation_name": "tool_call_count", "gen_ai_agent_name": "bot", **FLAT}
    for samples in scrapes:  # the same totals whichever worker answered
        for family, expected in (("queued", traces), ("claimed", traces), ("done", traces), ("failed", 0)):
            assert value(samples, f"toolpath_online_jobs_{family}_total") == expected
        assert value(samples, "gen_ai_evaluation_results_total", **labels, gen_ai_evaluation_score_label="pass") == 16
        assert value(samples, "gen_ai_evaluation_results_total", **labels, gen_ai_evaluation_score_label="fail") == 8
        assert value(samples, "gen_ai_evaluation_score_sum", **labels) == sum(1 + n % 3 for n in range(1, 25))
        assert value(samples, "toolpath_online_scoring_lag_seconds_count") == traces
        assert value(samples, "toolpath_online_workers_alive") == value(samples, "toolpath_online_workers") == 4
        assert value(samples, "toolpath_online_backlog", status="pending") == 0
    store = collector.store()
    with store.engine.connect() as conn:
        jobs = conn.execute(t.eval_jobs.select()).all()
        results = conn.execute(t.online_results.select()).all()
    store.close()
    assert len(jobs) == traces and {j.status for j in jobs} == {"done"}
    assert len(results) == len({r.invocation_id for r in results}) == traces  # each scored once
    assert len({r.worker.split("/")[0] for r in results}) == 2  # by both worker processes
    assert f"online: {traces} invocation(s) scored, 0 shed" in collector.process.stdout.read()


def test_agent_names_from_traffic_cannot_flood_metrics():
    """10,000 agent names make at most MAX_AGENT_LABELS series per family; the rest are 'other', counted."""
    from toolpath.collector.prometheus import MAX_AGENT_LABELS, ServiceMetrics

    metrics = ServiceMetrics()
    results = [
        (f"agent-{n}", {"metric": "trajectory_exact_match", "score": 1.0, "label": "pass"}) for n in range(10_000)
    ]
    metrics.record_batch(results, [])
    exposition = metrics.expose().decode()
    agents = {
        line.split('gen_ai_agent_name="')[1].split('"')[0]
        for line in exposition.splitlines()
        if 'gen_ai_agent_name="' in line
    }
    assert len(agents) == MAX_AGENT_LABELS + 1 and "other" in agents
    assert "toolpath_label_values_folded_total 9900.0" in exposition
    assert len(exposition) < 1_000_000  # 56 MB before the cap


@pytest.mark.parametrize("workers", [1, 2])
def test_labelled_counters_start_at_zero_on_a_healthy_collector(tmp_path, workers):
    """Before anything is rejected, cut or judged, the series of every reason, limit and token direction are
    exposed at 0 (Prometheus' guidance for label values known in advance): dashboards show 0, not "No data"."""
    from toolpath.collector.limits import LIMIT_KINDS

    collector = Collector(tmp_path, None, "--workers", str(workers)).start()
    try:
        assert collector.post(otlp_json(f"{1:032x}", tool_calls=1), "application/json")[0] == 200
        samples = scrape_with(collector.url, TOKEN_OF_COLLECTOR)
    finally:
        collector.stop()
    for reason in ("store_error", "trace_limit", "quarantined"):
        assert value(samples, "toolpath_spans_rejected_total", reason=reason) == 0
    assert set(LIMIT_KINDS) >= {"spans_over_trace_limit", "attribute_values_cut", "tool_calls_dropped"}
    for limit in LIMIT_KINDS:
        assert value(samples, "toolpath_limit_hits_total", limit=limit) == 0
    for direction in ("input", "output"):
        assert value(samples, "toolpath_judge_tokens_total", direction=direction) == 0
    assert value(samples, "toolpath_spans_stored_total") == 2


def test_the_online_backlog_is_exposed_by_the_status_values_the_store_keeps(tmp_path):
    """``toolpath_online_backlog`` has one series per unfinished job status, labelled with the very text that
    ``eval_jobs.status`` holds (docs/operating.md lists them), and counts every worker's jobs."""
    from toolpath.collector.prometheus import ServiceMetrics

    store = Store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        online = OnlineEvaluator(store, {"metrics": ["tool_call_count"]})
        online.queue.attach()  # jobs are enqueued as invocations are stored; no worker of this process claims them
        store.write([invocation(i) for i in range(3)])
        assert len(online.queue.claim("elsewhere", 1, lease_seconds=60)) == 1
        metrics = ServiceMetrics()
        metrics.watch(online=online)
        backlog = sorted(
            line for line in metrics.expose().decode().splitlines() if line.startswith("toolpath_online_backlog")
        )
    finally:
        store.close()
    assert backlog == ['toolpath_online_backlog{status="claimed"} 1.0', 'toolpath_online_backlog{status="pending"} 2.0']
