"""Google's ``OnlineEvaluator`` resource as an online config (``toolpath collect --online evaluator.json``): read
with google-cloud-aiplatform's message types, as the REST API writes it, into one evaluator; what toolpath does not
compute is one error naming the field."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from toolpath.errors import ConfigError
from toolpath.evaluation.online import OnlineConfig
from toolpath.evaluation.online.sampling import JudgeBudget, Limits
from toolpath.evaluation.online.selection import Filters, TargetKind
from toolpath.evaluation.online.settings import EvaluatorSpec

RESOURCE: dict[str, Any] = {  # as GET .../onlineEvaluators/{id} answers (v1beta1 REST, camelCase)
    "name": "projects/demo/locations/us-central1/onlineEvaluators/4412",
    "displayName": "Support agent: answers",
    "agentResource": "projects/demo/locations/us-central1/reasoningEngines/77",
    "metricSources": [
        {"metric": {"exactMatchSpec": {}}},
        {"metric": {"bleuSpec": {"useEffectiveOrder": True}}},
        {"metric": {"rougeSpec": {"rougeType": "rougeLsum"}}},
        {"metric": {"computationBasedMetricSpec": {"type": "ROUGE", "parameters": {"rougeType": "rouge2"}}}},
    ],
    "config": {"randomSampling": {"percentage": 30}, "maxEvaluatedSamplesPerRun": "50"},
    "cloudObservability": {
        "openTelemetry": {"semconvVersion": "1.39.0"},
        "logView": "projects/demo/locations/global/buckets/_Default/views/_Default",
        "traceScope": {"filter": []},
    },
    "state": "ACTIVE",
    "stateDetails": [{"message": "running"}],
    "createTime": "2026-10-01T08:00:00Z",
    "updateTime": "2026-11-02T10:30:00Z",
}


def written(tmp_path: Path, resource: dict[str, Any], name: str = "evaluator.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(resource))
    return path


def changed(**fields: Any) -> dict[str, Any]:
    return {**json.loads(json.dumps(RESOURCE)), **fields}


def refusal(tmp_path: Path, resource: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        OnlineConfig.load(written(tmp_path, resource))
    return str(caught.value)


def test_the_resource_as_the_rest_api_writes_it_is_one_evaluator_of_toolpaths_metrics(tmp_path):
    config = OnlineConfig.load(written(tmp_path, RESOURCE))
    assert config.specs == (
        EvaluatorSpec(
            "4412",
            "2026-11-02T10:30:00Z",
            ("exact_match", "bleu", "rouge_l_sum", "rouge_2"),
            TargetKind.TURN,
            Filters(),
            Limits(0.3, 50, None, JudgeBudget()),
        ),
    )


def test_snake_case_keys_read_the_same_and_without_an_id_the_display_name_names_it(tmp_path):
    resource = {
        "display_name": "Support agent: answers!",
        "metric_sources": [{"metric": {"exact_match_spec": {}}}],
        "config": {"random_sampling": {"percentage": 100}, "max_evaluated_samples_per_run": 0},
    }
    (spec,) = OnlineConfig.load(written(tmp_path, resource)).specs
    assert (spec.name, spec.version, spec.metrics) == ("Support-agent-answers-", "1", ("exact_match",))
    assert spec.limits == Limits(1.0)  # 0 samples per run: unbounded


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"metricSources": [{"metricResourceName": "projects/demo/locations/us-central1/evaluationMetrics/9"}]},
         "metricSources[0].metricResourceName = 'projects/demo/locations/us-central1/evaluationMetrics/9': a metric "
         "registered in a Google project"),
        ({"metricSources": [{"metric": {"predefinedMetricSpec": {"metricSpecName": "general_quality_v1"}}}]},
         "metricSources[0].metric.predefinedMetricSpec: Google's managed metrics"),
        ({"metricSources": [{"metric": {"llmBasedMetricSpec": {"metricPromptTemplate": "Rate {response}"}}}]},
         "metricSources[0].metric.llmBasedMetricSpec: a judge template metric"),
        ({"metricSources": [{"metric": {"pointwiseMetricSpec": {"metricPromptTemplate": "Rate {response}"}}}]},
         "metricSources[0].metric.pointwiseMetricSpec: a judge template metric"),
        ({"metricSources": [{"metric": {"exactMatchSpec": {}}}, {"metric": {"bleuSpec": {}}}]},
         "metricSources[1].metric.bleuSpec.useEffectiveOrder is false"),
        ({"metricSources": [{"metric": {"rougeSpec": {"rougeType": "rouge5"}}}]},
         "metricSources[0].metric.rougeSpec.rougeType = 'rouge5': toolpath's online ROUGE metrics are rouge1, "
         "rouge2, rougeL, rougeLsum"),
        ({"metricSources": [{"metric": {"rougeSpec": {"rougeType": "rougeL", "useStemmer": True}}}]},
         "metricSources[0].metric.rougeSpec.useStemmer is true"),
        ({"metricSources": [{"metric": {"computationBasedMetricSpec": {"type": "BLEU", "parameters": {"x": 1}}}}]},
         "metricSources[0].metric.computationBasedMetricSpec.parameters: "),
        ({"metricSources": [{"metric": {"exactMatchSpec": {}}}, {"metric": {"computationBasedMetricSpec": {
            "type": "EXACT_MATCH"}}}]},
         "metricSources[1]: names exact_match a second time"),
        ({"metricSources": [{"metric": {"customCodeExecutionSpec": {"evaluationFunction": "def f(): ..."}}}]},
         "metricSources[0].metric.customCodeExecutionSpec: toolpath never runs code"),
        ({"metricSources": [{"metric": {"exactMatchSpec": {}, "aggregationMetrics": ["AVERAGE"]}}]},
         "metricSources[0].metric.aggregationMetrics: online scoring scores each turn"),
        ({"metricSources": []}, "metricSources names no metric"),
        ({"config": {"maxEvaluatedSamplesPerRun": "5"}}, "config.randomSampling.percentage is required"),
        ({"config": {"randomSampling": {"percentage": 0}}}, "config.randomSampling.percentage = 0: expected"),
        ({"cloudObservability": {"traceScope": {"filter": [{"duration": {
            "comparisonOperator": "GREATER_OR_EQUAL", "value": 2}}]}}},
         "cloudObservability.traceScope.filter[0].duration: the OnlineEvaluator type states no unit"),
        ({"cloudObservability": {"traceScope": {"filter": [{"totalTokenUsage": {
            "comparisonOperator": "LESS", "value": 1000}}]}}},
         "cloudObservability.traceScope.filter[0].totalTokenUsage: toolpath's online evaluators do not filter"),
        ({"state": "SUSPENDED"}, "state is SUSPENDED"),
        ({"metricSource": []}, 'no field named "metricSource"'),
    ],
)  # fmt: skip
def test_what_toolpath_does_not_compute_is_one_error_naming_the_field(tmp_path, fields, said):
    message = refusal(tmp_path, changed(**fields))
    assert message.startswith(f"{tmp_path / 'evaluator.json'}: ")
    assert said in message


def test_a_file_that_is_not_a_resource_is_said_so(tmp_path):
    (tmp_path / "evaluator.json").write_text("[1]")
    with pytest.raises(ConfigError, match="expected an OnlineEvaluator resource"):
        OnlineConfig.load(tmp_path / "evaluator.json")
    (tmp_path / "evaluator.json").write_text("{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        OnlineConfig.load(tmp_path / "evaluator.json")
    with pytest.raises(ConfigError, match="no such file"):
        OnlineConfig.load(tmp_path / "missing.json")


def test_without_google_cloud_aiplatform_a_json_config_says_to_install_it(tmp_path, monkeypatch):
    path = written(tmp_path, RESOURCE)
    monkeypatch.setitem(sys.modules, "google.cloud.aiplatform_v1beta1.types", None)  # as if not installed
    with pytest.raises(ConfigError, match=r"pip install 'toolpath\[vertex\]'"):
        OnlineConfig.load(path)


def test_collect_online_with_the_resource_scores_what_it_receives(tmp_path):
    """``toolpath collect --online evaluator.json``: the collector starts with the resource's evaluator and scores
    each turn it receives by its metrics, under the evaluator's name and version."""
    from tests.helpers.builders import otlp_json
    from tests.helpers.collector import Collector

    resource = changed(
        metricSources=[{"metric": {"exactMatchSpec": {}}}],
        config={"randomSampling": {"percentage": 100}},
    )
    collector = Collector(tmp_path, None, "--online", str(written(tmp_path, resource))).start()
    traces = 3
    try:
        for n in range(1, traces + 1):
            assert collector.post(otlp_json(f"{n:032x}", tool_calls=1), "application/json")[0] == 200
        store = collector.store()
        deadline = time.monotonic() + 60
        rows: list[Any] = []
        while time.monotonic() < deadline:
            with store.engine.connect() as conn:
                rows = list(
                    conn.execute(
                        text(
                            "SELECT evaluator, evaluator_version, metric, score, label, explanation FROM online_results"
                        )
                    ).all()
                )
            if len(rows) == traces:
                break
            time.sleep(0.1)
    finally:
        collector.stop()
    assert collector.process.returncode == 0
    # the resource names no references: exact match scores each turn as a row without one, said as an error
    assert [tuple(r) for r in rows] == [
        ("4412", "2026-11-02T10:30:00Z", "exact_match", None, "error", "row has no 'reference'")
    ] * traces
    store.close()


def test_in_python_the_resources_evaluator_takes_the_references_of_a_dataset(tmp_path):
    """The resource names no references; from Python its mapping joins the settings it shares with others."""
    from toolpath.evaluation.online.google_evaluator import online_evaluator_config

    golden = tmp_path / "golden.jsonl"
    golden.write_text('{"prompt": "do it", "reference": "done"}\n')
    mapping = online_evaluator_config(written(tmp_path, RESOURCE))
    config = OnlineConfig.load({**mapping, "reference_dataset": str(golden)})
    assert config.reference_dataset == str(golden)
    assert [spec.name for spec in config.specs] == ["4412"]
