"""toolpath.vertex's judge metrics as Vertex AI users build them, judged by the fake Gemini server."""

from __future__ import annotations

import json

import pytest

from tests.helpers.fake_gemini import Reply, json_reply, serving_gemini
from toolpath.errors import MetricError


def test_a_string_template_is_filled_from_the_row_and_any_number_scores(monkeypatch) -> None:
    from toolpath.vertex import AutoraterConfig, EvalTask, PointwiseMetric

    metric = PointwiseMetric(
        metric="politeness",
        metric_prompt_template="Rate 1 to 10 how polite {response} is, given {prompt}.",
        system_instruction="You are a strict rater.",
    )
    rows = [{"prompt": "hi", "response": "hello there"}, {"prompt": "yo", "response": "what"}]

    def script(prompt: str, seen: int) -> Reply:
        return json_reply(score=7.5 if "hello there" in prompt else 2, explanation="rated")

    with serving_gemini(monkeypatch, script) as gemini:
        result = EvalTask(dataset=rows, metrics=[metric]).evaluate()
        sampled = EvalTask(dataset=rows[:1], metrics=[metric], autorater_config=AutoraterConfig(sampling_count=3))
        sampled_result = sampled.evaluate()
    assert list(result.metrics_table["politeness/score"]) == [7.5, 2.0]
    first_two = sorted(gemini.prompts[:2])  # the rows are judged at once: in whichever order they arrive
    assert first_two[0].startswith("Rate 1 to 10 how polite hello there is, given hi.")
    assert first_two[1].startswith("Rate 1 to 10 how polite what is, given yo.")
    assert {body["systemInstruction"]["parts"][0]["text"] for body in gemini.bodies} == {"You are a strict rater."}
    assert gemini.requests == 2 + 3  # the task's autorater config: three samples of the one row
    assert sampled_result.summary_metrics["politeness/mean"] == 7.5
    assert metric.metric_prompt_template.startswith("Rate 1 to 10")


def test_pairwise_with_a_baseline_model_function_and_a_tie(monkeypatch) -> None:
    from toolpath.vertex import EvalTask, MetricPromptTemplateExamples, PairwiseMetric

    template = MetricPromptTemplateExamples.get_prompt_template("pairwise_fluency")
    assert "{baseline_model_response}" in template and "{response}" in template
    metric = PairwiseMetric(metric="pairwise_fluency", metric_prompt_template=template, baseline_model=str.lower)
    rows = [{"prompt": "Say HI"}, {"prompt": "Say BYE"}]

    def script(prompt: str, seen: int) -> Reply:
        return json_reply(pairwise_choice="SAME" if "HI" in prompt else "A", explanation="compared")

    with serving_gemini(monkeypatch, script):
        result = EvalTask(dataset=rows, metrics=[metric]).evaluate(model=str.upper)
    table = result.metrics_table
    assert list(table["baseline_model_response"]) == ["say hi", "say bye"]
    assert list(table["response"]) == ["SAY HI", "SAY BYE"]
    # Response A is the {baseline_model_response} slot, which carries the candidate on the first sample
    assert list(table["pairwise_fluency/pairwise_choice"]) == ["TIE", "CANDIDATE"]
    assert result.summary_metrics["pairwise_fluency/candidate_model_win_rate"] == 0.5
    assert result.summary_metrics["pairwise_fluency/baseline_model_win_rate"] == 0.0


def test_templates_and_options_are_checked_as_they_are_built() -> None:
    from toolpath.vertex import (
        AutoraterConfig,
        PairwiseMetricPromptTemplate,
        PointwiseMetric,
        PointwiseMetricPromptTemplate,
    )

    template = PointwiseMetricPromptTemplate(criteria={"c": "clear"}, rating_rubric={"1": "yes", "0": "no"})
    assert template.input_variables == () and template.variables == {"response"}  # as Vertex AI: response only
    assert "{response}" in str(template) and "{prompt}" not in str(template)
    pairwise = PairwiseMetricPromptTemplate(criteria={"c": "clear"}, rating_rubric={"A": "a", "SAME": "s", "B": "b"})
    assert str(pairwise).index("{baseline_model_response}") < str(pairwise).index("{response}")
    with pytest.raises(MetricError, match="only temperature"):
        PointwiseMetric(
            metric="m",
            metric_prompt_template=template,
            autorater_config=AutoraterConfig(generation_config={"top_k": 3}),
        )
    judged = PointwiseMetric(
        metric="m",
        metric_prompt_template=template,
        autorater_config=AutoraterConfig(
            sampling_count=2, autorater_model="projects/p/locations/l/publishers/google/models/gemini-x"
        ),
    )
    assert (judged.model, judged.num_samples) == ("gemini-x", 2)
    with pytest.raises(MetricError, match="rating_rubric"):
        PointwiseMetricPromptTemplate(criteria={"c": "clear"}, rating_rubric={})
    with pytest.raises(MetricError, match="must be a number"):
        PointwiseMetricPromptTemplate(criteria={"c": "clear"}, rating_rubric={"good": "yes"})


def test_vertex_ais_own_autorater_config_message_is_read() -> None:
    from vertexai.preview.evaluation import AutoraterConfig as VertexAutoraterConfig

    from toolpath.vertex import PointwiseMetric

    config = VertexAutoraterConfig(sampling_count=4, autorater_model="gemini-y")
    metric = PointwiseMetric(metric="m", metric_prompt_template="judge {response}", autorater_config=config)
    assert (metric.model, metric.num_samples) == ("gemini-y", 4)
    assert json.loads(json.dumps({"ok": metric.metric_name})) == {"ok": "m"}


def test_a_custom_output_config_gets_the_raw_replies_and_parses_them(monkeypatch) -> None:
    """Vertex AI's CustomOutputConfig: the judge's raw replies (no JSON asked for) go to parsing_fn; its score
    and explanation are the result and its other keys columns; raw output alone is kept without a score."""
    from toolpath.vertex import AutoraterConfig, CustomOutputConfig, EvalTask, PointwiseMetric

    def verdicts(raw: list[str]) -> dict:
        yes = sum("YES" in text for text in raw)
        return {"score": yes / len(raw), "explanation": raw[0], "samples": len(raw)}

    parsed = PointwiseMetric(
        metric="critique",
        metric_prompt_template="Does {response} answer {prompt}? Say Verdict: YES or NO.",
        custom_output_config=CustomOutputConfig(return_raw_output=True, parsing_fn=verdicts),
        autorater_config=AutoraterConfig(sampling_count=2),
    )
    kept = PointwiseMetric(
        metric="kept", metric_prompt_template="Judge {response}", custom_output_config=CustomOutputConfig(True)
    )
    rows = [{"prompt": "2+2?", "response": "4"}]

    def script(prompt: str, seen: int) -> Reply:
        return Reply("Verdict: YES" if seen == 0 else "Verdict: NO")

    with serving_gemini(monkeypatch, script) as gemini:
        result = EvalTask(dataset=rows, metrics=[parsed, kept]).evaluate()
    [row] = result.metrics_table.to_dict(orient="records")
    assert row["critique/score"] == 0.5 and row["critique/samples"] == 2
    assert row["critique/explanation"] in ("Verdict: YES", "Verdict: NO")
    assert row["kept/raw_output"] == ["Verdict: YES"] and row["kept/score"] is None
    assert "Does 4 answer 2+2?? Say Verdict: YES or NO." in gemini.prompts  # the template alone (metrics at once)
    assert all("responseMimeType" not in body.get("generationConfig", {}) for body in gemini.bodies)
