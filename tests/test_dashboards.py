"""The shipped Grafana dashboard queries exactly the metric and label names the online exporter emits."""

from __future__ import annotations

import json
import re
from pathlib import Path

from toolpath.evaluation.online_export import RESULT_COUNTER, SCORE_HISTOGRAM
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
        "le",
    }
    used = {m for e in expressions for m in re.findall(r"\b(gen_ai_\w+|le)\b", e)} - series
    assert used <= labels, used - labels
    assert {p["type"] for p in dashboard["panels"]} <= {"timeseries", "stat"}
