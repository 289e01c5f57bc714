"""Vertex AI's rubric-based metrics: rubrics written by a model, then a critique judged against them — Vertex
AI's predefined ones with the prompts and parser of the installed google-cloud-aiplatform."""

from __future__ import annotations

import json

import pytest

from tests.helpers.fake_gemini import Reply, serving_gemini
from toolpath.errors import MetricError

RUBRICS = '```json\n{"questions": ["Is it one word?", "Is it a greeting?"]}\n```'


def test_a_rubric_metric_writes_rubrics_then_critiques_the_response(monkeypatch) -> None:
    from toolpath.vertex import CustomOutputConfig, EvalTask, PointwiseMetric
    from toolpath.vertex.metrics import RubricBasedMetric, RubricGenerationConfig

    written: list[str] = []

    def rubric_writer(prompt: str) -> str:
        written.append(prompt)
        return RUBRICS

    def share_of_yes(raw: list[str]) -> dict:
        verdicts = [line.endswith("YES") for line in raw[0].splitlines()]
        return {"score": sum(verdicts) / len(verdicts), "verdicts": len(verdicts)}

    metric = RubricBasedMetric(
        generation_config=RubricGenerationConfig(prompt_template="Write rubrics for: {prompt}", model=rubric_writer),
        critique_metric=PointwiseMetric(
            metric="rubric_check",
            metric_prompt_template="Rubrics:\n{rubrics}\nResponse: {response}",
            custom_output_config=CustomOutputConfig(parsing_fn=share_of_yes),
        ),
    )
    rows = [{"prompt": "Greet me", "response": "Hello"}, {"prompt": "Greet me twice", "response": "Hello hello"}]

    def script(prompt: str, seen: int) -> Reply:
        one_word = prompt.endswith("Response: Hello")
        return Reply(f"Is it one word? {'YES' if one_word else 'NO'}\nIs it a greeting? YES")

    with serving_gemini(monkeypatch, script) as gemini:
        result = EvalTask(dataset=rows, metrics=[metric]).evaluate()
    assert written == ["Write rubrics for: Greet me", "Write rubrics for: Greet me twice"]
    assert gemini.prompts[0].startswith("Rubrics:\nIs it one word?\nIs it a greeting?\nResponse: ")
    assert list(result.metrics_table["rubric_check/score"]) == [1.0, 0.5]
    assert list(result.metrics_table["rubrics"]) == ["Is it one word?\nIs it a greeting?"] * 2
    assert result.summary_metrics["rubric_check/mean"] == 0.75

    given = [{"prompt": "p", "response": "r", "rubrics": ["Is it r?"]}]  # rubrics already there: none written
    with serving_gemini(monkeypatch, lambda prompt, seen: Reply("Is it r? YES")):
        EvalTask(dataset=given, metrics=[metric]).evaluate()
    assert len(written) == 2


def test_vertex_ais_predefined_rubric_metric_runs_with_its_own_prompts_and_parser(monkeypatch) -> None:
    from vertexai.preview.evaluation.metrics import _default_templates

    from toolpath.vertex import EvalTask
    from toolpath.vertex.metrics import PredefinedRubricMetrics

    critique = (
        "<question>\nSTEP 1: ...\nQuestion: Is it one word?\nVerdict: [[YES]]\n</question>\n"
        "<question>\nSTEP 1: ...\nQuestion: Is it a greeting?\nVerdict: [[NO]]\n</question>"
    )

    def script(prompt: str, seen: int) -> Reply:
        return Reply(RUBRICS if "Only generate the rubric questions" in prompt else critique)

    metric = PredefinedRubricMetrics.Pointwise.INSTRUCTION_FOLLOWING
    with serving_gemini(monkeypatch, script) as gemini:
        result = EvalTask(dataset=[{"prompt": "Say hi", "response": "Hi"}], metrics=[metric]).evaluate()
    [row] = result.metrics_table.to_dict(orient="records")
    assert row["rb_instruction_following/score"] == 0.5
    assert row["rb_instruction_following/rubric_verdict_pairs"] == "Is it one word?: True\nIs it a greeting?: False"
    assert gemini.models[0] == "gemini-2.5-pro"  # Vertex AI's rubric writer
    rubric_prompt, critique_prompt = gemini.prompts
    assert rubric_prompt.startswith(_default_templates.INSTRUCTION_FOLLOWING_RUBRIC_GENERATION_PROMPT_TEMPLATE[:200])
    assert "<question>Is it one word?\n<question>Is it a greeting?" in critique_prompt
    assert json.loads(json.dumps(row["rb_instruction_following/raw_outputs"])) == [critique]


def test_vertex_ais_pairwise_rubric_metric_and_its_win_rates(monkeypatch) -> None:
    """The pairwise predefined metric: Response A is the baseline, Vertex AI's parser reads the side-by-side
    rating, and the win rates are the ones Vertex AI's own summary computes from the table."""
    from vertexai.preview.evaluation import _base as vertex_base
    from vertexai.preview.evaluation import _evaluation
    from vertexai.preview.evaluation.metrics import PairwiseMetric as VertexPairwiseMetric

    from toolpath.vertex import EvalTask
    from toolpath.vertex.metrics import PredefinedRubricMetrics, RubricBasedMetric, RubricGenerationConfig

    def critique(rating: str) -> str:
        return (
            "[[Response A Answers:]]\n<question>Question: Is it one word?\nVerdict: [[NO]]</question>\n"
            "[[Rubric Score: 0/1]]\n[[Response B Answers:]]\n<question>Question: Is it one word?\nVerdict: [[YES]]"
            f"</question>\n[[Rubric Score: 1/1]]\n[[SxSRating:{rating}]]"
        )

    def script(prompt: str, seen: int) -> Reply:
        if "Only generate the rubric questions" in prompt:
            return Reply(RUBRICS)
        return Reply(critique("B>A" if "Say hi" in prompt else "A>>B"))

    rows = [
        {"prompt": "Say hi", "response": "Hi", "baseline_model_response": "Hello there"},
        {"prompt": "Say bye", "response": "Bye now", "baseline_model_response": "Bye"},
        {"prompt": "Say yes", "response": "Yes", "baseline_model_response": "Yes indeed"},
    ]
    metric = PredefinedRubricMetrics.Pairwise.INSTRUCTION_FOLLOWING
    with serving_gemini(monkeypatch, script) as gemini:
        result = EvalTask(dataset=rows, metrics=[metric]).evaluate()
    table = result.metrics_table
    assert list(table["pairwise_rb_instruction_following/score"]) == [0.5, -1.0, -1.0]
    critique_prompt = next(p for p in gemini.prompts if "Say hi" in p and "Hello there" in p)
    assert critique_prompt.index("Hello there") < critique_prompt.index("\nHi\n")  # the baseline is Response A
    vertex_metric = VertexPairwiseMetric(metric="pairwise_rb_instruction_following", metric_prompt_template="x")
    config = vertex_base.EvaluationRunConfig(
        dataset=table, metrics=[vertex_metric], metric_column_mapping={}, client=None, evaluation_service_qps=1,
        retry_timeout=1,
    )  # fmt: skip
    vertex_summary = _evaluation._aggregate_summary_metrics(config, table)
    for side in ("candidate", "baseline"):
        key = f"pairwise_rb_instruction_following/{side}_model_win_rate"
        assert result.summary_metrics[key] == vertex_summary[key]
    assert result.summary_metrics["pairwise_rb_instruction_following/candidate_model_win_rate"] == 1 / 3

    with pytest.raises(MetricError, match="must be a PointwiseMetric or a PairwiseMetric"):
        EvalTask(
            dataset=rows,
            metrics=[RubricBasedMetric(generation_config=RubricGenerationConfig("{prompt}"), critique_metric="x")],
        )
