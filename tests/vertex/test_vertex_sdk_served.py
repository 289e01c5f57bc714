"""Vertex AI's own ``EvalTask`` (the installed ``vertexai.preview.evaluation``), pointed at a running
``toolpath collect`` by ``vertexai.init(api_endpoint=…)``, scores trajectory and text datasets through
``evaluateInstances``, and gets the numbers and names ``toolpath.vertex.EvalTask`` gives with its imports
changed."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
import pytest

from tests.helpers.collector import TOKEN, Collector

# trajectories that score differently on each trajectory metric: a wrong argument, the right calls out of order
# with one extra, and an exact match
TRAJECTORIES = pd.DataFrame(
    {
        "predicted_trajectory": [
            [{"tool_name": "lock_door", "tool_input": {"door": "front"}}],
            [
                {"tool_name": "set_temperature", "tool_input": {"location": "office", "temperature": 21}},
                {"tool_name": "get_weather", "tool_input": {"city": "Porto"}},
                {"tool_name": "notify", "tool_input": {"message": "office at 21"}},
            ],
            [{"tool_name": "list_devices", "tool_input": {"room": "hall"}}],
        ],
        "reference_trajectory": [
            [{"tool_name": "lock_door", "tool_input": {"door": "back"}}],
            [
                {"tool_name": "get_weather", "tool_input": {"city": "Porto"}},
                {"tool_name": "set_temperature", "tool_input": {"location": "office", "temperature": 21}},
            ],
            [{"tool_name": "list_devices", "tool_input": {"room": "hall"}}],
        ],
    }
)


def call(name: str, **arguments: Any) -> str:
    return json.dumps({"content": "", "tool_calls": [{"name": name, "arguments": arguments}]})


@pytest.fixture
def vertex_on_toolpath(tmp_path) -> Any:
    import vertexai
    from google.cloud.aiplatform import initializer
    from google.oauth2.credentials import Credentials

    saved = dict(vars(initializer.global_config))  # vertexai.init's global state, restored after the test
    served = Collector(tmp_path).start()
    try:
        vertexai.init(
            project="my-project", location="us-central1", api_endpoint=served.url, api_transport="rest",
            credentials=Credentials(token=TOKEN),
        )  # fmt: skip
        yield served
    finally:
        served.stop()
        vars(initializer.global_config).clear()
        vars(initializer.global_config).update(saved)


def same(a: Any, b: Any) -> bool:
    return (math.isnan(a) and math.isnan(b)) if isinstance(a, float) and math.isnan(a) else a == pytest.approx(b)


def test_vertex_ais_eval_task_over_the_api_and_ours_agree(vertex_on_toolpath) -> None:
    import vertexai.preview.evaluation as vertex

    import toolpath.vertex as ours
    import toolpath.vertex.metrics as our_metrics

    text = pd.DataFrame(
        {
            "response": ["The cat sat on the mat.", "A dog ran in the park. It was happy.", call("a", x=1, z=2)],
            "reference": ["The cat sat on the mat.", "The dog runs in a park. He was glad.", call("a", x=1)],
        }
    )
    tasks = [
        (TRAJECTORIES, lambda m, ms: [*(f"trajectory_{n}" for n in ("exact_match", "in_order_match", "any_order_match",
                                                            "precision", "recall")),
                               ms.TrajectorySingleToolUse(tool_name="set_temperature")]),
        (text, lambda m, ms: ["exact_match", "bleu", "rouge_1", "rouge_l_sum", "tool_name_match",
                              "tool_parameter_kv_match"]),
        (text, lambda m, ms: [ms.Rouge(rouge_type="rougeL", use_stemmer=True)]),
    ]  # fmt: skip
    for dataset, metrics in tasks:
        theirs = vertex.EvalTask(dataset=dataset, metrics=metrics(vertex, vertex.metrics)).evaluate()
        mine = ours.EvalTask(dataset=dataset, metrics=metrics(ours, our_metrics)).evaluate()
        assert set(mine.summary_metrics) == set(theirs.summary_metrics)
        for key, value in theirs.summary_metrics.items():
            assert same(mine.summary_metrics[key], value), key
        for column in theirs.metrics_table.columns:
            assert column in mine.metrics_table.columns, column
            if column.endswith("/score"):
                pairs = zip(mine.metrics_table[column], theirs.metrics_table[column], strict=True)
                assert all(same(a, b) for a, b in pairs), (column, list(mine.metrics_table[column]))
        if dataset is TRAJECTORIES:  # the rows tell the trajectory metrics apart
            scores = {
                n: list(theirs.metrics_table[f"trajectory_{n}/score"]) for n in ("exact_match", "any_order_match")
            }
            assert scores == {"exact_match": [0, 0, 1], "any_order_match": [0, 1, 1]}
    assert theirs.summary_metrics["rouge/mean"] > 0  # something was scored, not all zeros
