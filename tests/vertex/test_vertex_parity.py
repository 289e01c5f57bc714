"""What Vertex AI's SDK computes on the client — custom metrics and the summary of a metrics table — computed
by the installed ``google-cloud-aiplatform`` on the same rows gives what toolpath.vertex gives."""

from __future__ import annotations

import math
from concurrent import futures

import pandas as pd
from tqdm import tqdm

from tests.helpers.fake_gemini import Reply, json_reply, serving_gemini

ROWS = [
    {
        "prompt": "Warm the office",
        "response": "Set the office to 22.",
        "reference": "Set the office to 22.",
        "baseline_model_response": "ok",
        "predicted_trajectory": [{"tool_name": "set_temperature", "tool_input": {"location": "office"}}],
        "reference_trajectory": [{"tool_name": "set_temperature", "tool_input": {"location": "office"}}],
    },
    {
        "prompt": "Lock up",
        "response": "Locked the front door.",
        "reference": "Locked both doors.",
        "baseline_model_response": "Locked both doors for you.",
        "predicted_trajectory": [{"tool_name": "lock_door", "tool_input": {"door_id": "front"}}],
        "reference_trajectory": [
            {"tool_name": "lock_door", "tool_input": {"door_id": "front"}},
            {"tool_name": "lock_door", "tool_input": {"door_id": "back"}},
        ],
    },
    {
        "prompt": "Weather?",
        "response": "Sunny.",
        "reference": "Sunny in Lisbon.",
        "baseline_model_response": "Sunny in Lisbon.",
        "predicted_trajectory": [],
        "reference_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "lisbon"}}],
    },
]


def tools_used(instance: dict) -> dict:
    names = [call["tool_name"] for call in instance["predicted_trajectory"]]
    return {"tools_used": len(names), "explanation": ", ".join(names) or "none", "distinct": len(set(names))}


def test_custom_metrics_give_vertex_ais_columns() -> None:
    from vertexai.preview.evaluation import _evaluation
    from vertexai.preview.evaluation.metrics import CustomMetric as VertexCustomMetric

    from toolpath.vertex import CustomMetric, EvalTask

    ours = EvalTask(dataset=ROWS, metrics=[CustomMetric(name="tools_used", metric_function=tools_used)]).evaluate()
    theirs = []
    with futures.ThreadPoolExecutor(max_workers=2) as executor, tqdm(disable=True) as bar:
        for row in ROWS:
            theirs.append(
                _evaluation._compute_custom_metrics(
                    dict(row), [VertexCustomMetric(name="tools_used", metric_function=tools_used)], bar, executor
                )
            )
    for mine, vertex in zip(ours.metrics_table.to_dict(orient="records"), theirs, strict=True):
        for column in ("tools_used/score", "tools_used/explanation", "tools_used/distinct"):
            assert mine[column] == vertex[column], column


def test_the_summary_is_the_one_vertex_ai_computes_from_the_table(monkeypatch) -> None:
    from vertexai.preview.evaluation import _base as vertex_base
    from vertexai.preview.evaluation import _evaluation
    from vertexai.preview.evaluation.metrics import PairwiseMetric as VertexPairwiseMetric

    from toolpath.vertex import EvalTask, MetricPromptTemplateExamples

    def script(prompt: str, seen: int) -> Reply:
        if "Sunny." in prompt:
            return Reply("not json")  # a reply the judge cannot read: no verdict for this row
        return json_reply(pairwise_choice="SAME" if "Set the office" in prompt else "B", explanation="x")

    names = [
        "exact_match",
        "bleu",
        "rouge_l_sum",
        "trajectory_exact_match",
        "trajectory_recall",
        "trajectory_precision",
    ]
    pairwise = MetricPromptTemplateExamples.Pairwise.FLUENCY
    with serving_gemini(monkeypatch, script):
        result = EvalTask(dataset=ROWS, metrics=[*names, pairwise]).evaluate()
    table = result.metrics_table
    assert list(table["pairwise_fluency/pairwise_choice"].fillna("-")) == ["TIE", "BASELINE", "-"]
    vertex_metrics = [
        *names,
        VertexPairwiseMetric(metric="pairwise_fluency", metric_prompt_template="{response} {baseline_model_response}"),
    ]
    config = vertex_base.EvaluationRunConfig(
        dataset=table, metrics=vertex_metrics, metric_column_mapping={}, client=None, evaluation_service_qps=1,
        retry_timeout=1,
    )  # fmt: skip
    vertex_summary = _evaluation._aggregate_summary_metrics(config, table)
    assert set(vertex_summary) <= set(result.summary_metrics)
    for key, value in vertex_summary.items():
        mine = result.summary_metrics[key]
        assert (math.isnan(mine) and math.isnan(value)) or mine == value, key


def test_one_row_summaries_are_nan_as_in_vertex_ai() -> None:
    from vertexai.preview.evaluation import _base as vertex_base
    from vertexai.preview.evaluation import _evaluation

    from toolpath.vertex import EvalTask

    result = EvalTask(dataset=ROWS[:1], metrics=["exact_match", "trajectory_recall"]).evaluate()
    config = vertex_base.EvaluationRunConfig(
        dataset=result.metrics_table, metrics=["exact_match", "trajectory_recall"], metric_column_mapping={},
        client=None, evaluation_service_qps=1, retry_timeout=1,
    )  # fmt: skip
    vertex_summary = _evaluation._aggregate_summary_metrics(config, pd.DataFrame(result.metrics_table))
    assert math.isnan(vertex_summary["exact_match/std"]) and math.isnan(result.summary_metrics["exact_match/std"])
    assert vertex_summary["row_count"] == result.summary_metrics["row_count"] == 1
