"""The shipped Grafana dashboards: the online one queries exactly the metric and label names the online exporter
emits; and every query of every dashboard parses and returns data on a real Prometheus scraping a real collector
(with online evaluation and a judge) fed by the OTel SDK's OTLP exporter."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.helpers.collector import serving
from tests.helpers.fake_gemini import FakeGemini, Reply, json_reply
from tests.helpers.prometheus import (
    SCRAPE_SECONDS,
    api,
    dashboard_queries,
    grafana_expr,
    label_values,
    prometheus_binary,
    query_variables,
    regex_value,
    running_prometheus,
    scraped_up,
)
from toolpath.collector.limits import Limits
from toolpath.evaluation.online import OnlineEvaluator
from toolpath.evaluation.online.result_export import RESULT_COUNTER, SCORE_HISTOGRAM
from toolpath.judges.client import DEFAULT_MODEL
from toolpath.store.store import Store
from toolpath.store.usage import set_price
from toolpath.tracer import semconv as sc

DASHBOARD = Path(__file__).resolve().parents[1] / "dashboards" / "toolpath-online.json"


def prometheus(name: str) -> str:
    return name.replace(".", "_")


def test_dashboard_queries_the_exported_names():
    dashboard = json.loads(DASHBOARD.read_text())
    expressions = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    expressions += [v["query"]["query"] for v in dashboard["templating"]["list"] if isinstance(v.get("query"), dict)]
    series = {s for e in expressions for s in re.findall(r"\b(gen_ai_\w+)\{", e)}
    series |= {s for e in expressions for s in re.findall(r"label_values\((\w+),", e)}
    histogram, counter = prometheus(SCORE_HISTOGRAM), prometheus(RESULT_COUNTER)
    allowed = {f"{histogram}_{s}" for s in ("bucket", "sum", "count")} | {f"{counter}_total"}
    assert series and series <= allowed, series - allowed
    labels = {
        prometheus(sc.GEN_AI_EVALUATION_NAME),
        prometheus(sc.GEN_AI_AGENT_NAME),
        prometheus(sc.GEN_AI_EVALUATION_SCORE_LABEL),
        prometheus(sc.GEN_AI_EVALUATION_EVALUATOR_NAME),
        "le",
    }
    used = {m for e in expressions for m in re.findall(r"\b(gen_ai_\w+|le)\b", e)} - series
    assert used <= labels, used - labels
    assert {p["type"] for p in dashboard["panels"]} <= {"timeseries", "stat"}


# --- every query of every dashboard, on a real Prometheus scraping a real collector -----------------------------

RARE = ('gen_ai_evaluation_score_label="error"', "toolpath_online_evaluator_")
"""Filters to what a healthy run seldom has (a query filtered to one may return nothing): errors, and the limits of
evaluators that declare some."""
TOKEN = "dash-t0k"


def send_agent_runs(url: str, runs: int, *, pause: float, tool_calls: int | None = None) -> None:
    """Agent runs of ``support_bot`` (1, 2, 3 tool calls in turn, or ``tool_calls`` each) through the OTel SDK's
    OTLP/HTTP span exporter, one export per run."""
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", headers={"authorization": f"Bearer {TOKEN}"})
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("dashboard-test")
    try:
        for n in range(runs):
            calls = tool_calls if tool_calls is not None else n % 3 + 1
            messages = [{"role": "assistant", "parts": [{"type": "text", "content": f"Answer number {n}."}]}]
            agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support_bot",
                     "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"q{n}"}]}]),
                     "gen_ai.output.messages": json.dumps(messages)}  # fmt: skip
            with tracer.start_as_current_span("invoke_agent support_bot", attributes=agent):
                for i in range(calls):
                    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                            "gen_ai.tool.call.arguments": json.dumps({"city": f"c{i}"})}  # fmt: skip
                    with tracer.start_as_current_span("execute_tool get_weather", attributes=tool):
                        pass
            assert provider.force_flush(10_000)
            time.sleep(pause)
    finally:
        provider.shutdown()


def fluency_by_run(prompt: str, seen: int) -> Reply:
    """The judge rates even-numbered answers 5 (pass) and odd ones 2 (fail)."""
    found = re.search(r"Answer number (\d+)", prompt)
    return json_reply(score=2 if found and int(found.group(1)) % 2 else 5, explanation="Rated.")


def test_every_dashboard_query_returns_data_from_a_real_prometheus(tmp_path, monkeypatch):
    binary = prometheus_binary()
    judge = FakeGemini(fluency_by_run)
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", judge.url)
    store = Store(f"sqlite:///{tmp_path / 'd.db'}")
    set_price(store, DEFAULT_MODEL, 0.3, 2.5)  # the judge's spend has a cost series
    config = {
        "metrics": ["tool_call_count", "fluency"],
        "thresholds": {"tool_call_count": 2, "fluency": 4},
        "poll_seconds": 0.05,
    }
    online = OnlineEvaluator(store, config)
    with (
        judge.running(),
        serving(store, online.start(), token=TOKEN, limits=Limits(max_spans_per_trace=20)) as service,
        running_prometheus(binary, f"127.0.0.1:{service.options.http_port}", TOKEN) as prometheus,
    ):
        collector = f"http://127.0.0.1:{service.options.http_port}"
        deadline = time.monotonic() + 20
        while not scraped_up(prometheus) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert scraped_up(prometheus), api(prometheus, "targets")
        started = time.time()
        send_agent_runs(collector, 1, pause=0, tool_calls=25)  # over the trace limit: counted, not stored
        send_agent_runs(collector, 24, pause=0.3)  # several scrapes see the counters move
        assert online.drain(30)
        time.sleep(4 * SCRAPE_SECONDS)
        problems, checked = run_dashboards(prometheus, started, time.time())
        online.stop()
    store.close()
    (unit,) = online.units.values()
    assert judge.requests >= 24 and unit.judge is not None and unit.judge_usage().errors == 0
    assert checked >= 2 * 20 and not problems, "\n".join(problems)


def run_dashboards(prometheus: str, started: float, ended: float) -> tuple[list[str], int]:
    """Run every query of every dashboard over ``started``..``ended``, with "All" and with one value picked for
    each variable: what failed to parse or returned nothing, and how many queries ran."""
    window = {"start": f"{started - 5:.3f}", "end": f"{ended:.3f}", "step": f"{SCRAPE_SECONDS}s"}
    range_seconds = int(ended - started) + 5
    checked, problems = 0, []
    for path in sorted(DASHBOARD.parent.glob("*.json")):
        dashboard = json.loads(path.read_text())
        variables = query_variables(dashboard)
        listed = {name: label_values(prometheus, query) for name, query in variables.items()}
        problems += [f"{path.name}: variable ${name} lists nothing" for name, got in listed.items() if not got]
        selections = [
            {name: ".*" for name in variables},  # "All"
            {name: regex_value(got[:1]) for name, got in listed.items() if got},  # one value, as picked
        ]
        for values in selections:
            for title, expr in dashboard_queries(dashboard):
                query = grafana_expr(expr, values, interval_seconds=SCRAPE_SECONDS, range_seconds=range_seconds)
                reply = api(prometheus, "query_range", query=query, **window)
                checked += 1
                if reply["status"] != "success":
                    problems.append(f"{path.name} / {title}: {reply.get('error')}: {query}")
                elif not reply["data"]["result"] and not any(rare in expr for rare in RARE):
                    problems.append(f"{path.name} / {title}: no data: {query}")
    return problems, checked
