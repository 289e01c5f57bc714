"""A column a metric needs that the dataset lacks is one error before anything runs, as in Vertex AI (which
raises for a missing ``response`` / ``reference`` column or template variable) — never a table of empty scores."""

from __future__ import annotations

import pandas as pd
import pytest

from toolpath.errors import DatasetError

# trajectories only: no prompt, response or reference text
TRAJECTORIES = pd.DataFrame(
    {
        "predicted_trajectory": [
            [{"tool_name": "lock_door", "tool_input": {"door": "garage"}}],
            [{"tool_name": "get_weather", "tool_input": {"city": "Porto"}}],
        ],
        "reference_trajectory": [
            [{"tool_name": "lock_door", "tool_input": {"door": "front"}}],
            [{"tool_name": "get_weather", "tool_input": {"city": "Porto"}}],
        ],
    }
)


class Agent:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, prompt: str) -> dict:
        self.calls += 1
        return {"response": f"done: {prompt}", "predicted_trajectory": [{"tool_name": "set_temperature"}]}


def test_a_metrics_missing_column_is_one_error_naming_it() -> None:
    from toolpath.vertex import EvalTask, PointwiseMetric

    with pytest.raises(DatasetError, match=r"'response'.*rouge_l_sum.*predicted_trajectory, reference_trajectory"):
        EvalTask(dataset=TRAJECTORIES, metrics=["rouge_l_sum", "trajectory_exact_match"]).evaluate()
    with pytest.raises(DatasetError, match=r"'reference_trajectory'.*trajectory_precision"):
        EvalTask(dataset=TRAJECTORIES[["predicted_trajectory"]], metrics=["trajectory_precision"]).evaluate()
    with pytest.raises(ValueError, match=r"'reference'.*exact_match"):  # DatasetError is a ValueError, as Vertex's
        EvalTask(
            dataset={"model_1_response": ["a"], "ref": ["a"]},
            metrics=["exact_match"],
            metric_column_mapping={"response": "model_1_response", "reference": "no_such_column"},
        ).evaluate()
    judged = PointwiseMetric(metric="clarity", metric_prompt_template="Rate {response} for {audience}.")
    with pytest.raises(DatasetError, match=r"'audience'.*clarity"):
        EvalTask(dataset={"response": ["a"]}, metrics=[judged]).evaluate()


def test_the_check_comes_before_the_agent_runs_and_counts_what_it_writes() -> None:
    from toolpath.vertex import EvalTask
    from toolpath.vertex.metrics import TrajectorySingleToolUse

    agent = Agent()
    rows = {"prompt": ["Warm up the office", "Is it raining in Porto?"]}
    with pytest.raises(DatasetError, match="'reference'"):
        EvalTask(dataset=rows, metrics=["bleu"]).evaluate(runnable=agent)
    assert agent.calls == 0
    # the agent writes response and predicted_trajectory; single-tool use needs no reference
    result = EvalTask(dataset=rows, metrics=[TrajectorySingleToolUse(tool_name="set_temperature")]).evaluate(
        runnable=agent
    )
    assert agent.calls == 2 and result.summary_metrics["trajectory_single_tool_use/mean"] == 1.0
    mapped = EvalTask(
        dataset={"model_1_response": ["a", "b"], "ref": ["a", "a"]},
        metrics=["exact_match"],
        metric_column_mapping={"response": "model_1_response", "reference": "ref"},
    ).evaluate()
    assert mapped.summary_metrics["exact_match/mean"] == 0.5


def test_no_metrics_or_a_metric_twice_is_one_error_a_vertex_user_can_act_on() -> None:
    from toolpath.errors import MetricError
    from toolpath.vertex import EvalTask
    from toolpath.vertex.metrics import Rouge

    rows = {"response": ["a", "b"], "reference": ["a", "a"]}
    with pytest.raises(MetricError, match="no metrics"):  # Vertex AI: "Metrics cannot be empty."
        EvalTask(dataset=rows, metrics=[]).evaluate()
    for twice in (["bleu", "bleu"], [Rouge(rouge_type="rouge1"), Rouge(rouge_type="rougeL")]):
        with pytest.raises(MetricError) as caught:
            EvalTask(dataset=rows, metrics=twice).evaluate()
        message = str(caught.value)
        assert "listed twice" in message and "trajectory_f1" not in message, message


def test_a_pairwise_metric_summary_has_vertex_ais_keys_and_no_others(monkeypatch) -> None:
    """Vertex AI summarises a pairwise metric by its win rates alone (no mean or std of a score it lacks)."""
    from vertexai.preview.evaluation import _base as vertex_base
    from vertexai.preview.evaluation import _evaluation
    from vertexai.preview.evaluation.metrics import PairwiseMetric as VertexPairwiseMetric

    from tests.helpers.fake_gemini import json_reply, serving_gemini
    from toolpath.vertex import EvalTask, MetricPromptTemplateExamples

    rows = {"prompt": ["p1", "p2"], "response": ["a", "b"], "baseline_model_response": ["c", "d"]}
    with serving_gemini(monkeypatch, lambda prompt, seen: json_reply(pairwise_choice="B", explanation="x")):
        result = EvalTask(dataset=rows, metrics=[MetricPromptTemplateExamples.Pairwise.FLUENCY]).evaluate()
    vertex_metric = VertexPairwiseMetric(metric="pairwise_fluency", metric_prompt_template="{response}")
    config = vertex_base.EvaluationRunConfig(
        dataset=result.metrics_table, metrics=[vertex_metric], metric_column_mapping={}, client=None,
        evaluation_service_qps=1, retry_timeout=1,
    )  # fmt: skip
    vertex_summary = _evaluation._aggregate_summary_metrics(config, result.metrics_table)
    assert set(result.summary_metrics) == set(vertex_summary)
    for key, value in vertex_summary.items():
        assert result.summary_metrics[key] == value, key
