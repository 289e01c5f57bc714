"""``toolpath.vertex``: Vertex AI's evaluation code runs with its imports changed, and gives toolpath's numbers."""

from __future__ import annotations

import inspect
import json
import math
from importlib.resources import files

import pandas as pd
import pytest

import toolpath
from tests.helpers.fake_gemini import Reply, json_reply, serving_gemini
from toolpath.demo.smart_home import reset_home, smart_home_agent
from toolpath.errors import ConfigError, DatasetError, MetricError
from toolpath.store.store import Store

# rows of the demo's dataset that touch different devices, so their order of running does not change the home
DEMO_CASES = ("home-01", "home-03", "home-05", "home-13", "home-17", "home-18", "home-19", "home-21")


def demo_rows() -> list[dict]:
    text = files("toolpath.demo").joinpath("smart_home.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    return [r for r in rows if r["case_id"] in DEMO_CASES]


def follows(prompt: str, seen: int) -> Reply:
    # the judge says a response follows its trajectory when the agent changed something in the home
    return json_reply(score=1 if "set_" in prompt or "lock_door" in prompt else 0, explanation="judged")


def device_tools_used(instance):
    """A Vertex-style custom metric: the share of two device tools the agent called, from the row as plain dicts."""
    called = {step["tool_name"] for step in instance["predicted_trajectory"]}
    wanted = ("get_device_info", "set_temperature")
    return {"device_tools_used": len(called.intersection(wanted)) / len(wanted)}


def test_vertex_style_agent_evaluation_runs_by_an_import_change(monkeypatch, tracing) -> None:
    """Agent evaluation in the form Vertex AI's SDK takes — a custom metric over the row dict, a judge metric from
    criteria and a rubric, TrajectorySingleToolUse, an EvalTask over a DataFrame run with an agent — imported from
    toolpath.vertex instead: it runs, and every score is the one toolpath.evaluate gives."""
    from toolpath.vertex import CustomMetric, EvalTask, PointwiseMetric, PointwiseMetricPromptTemplate
    from toolpath.vertex.metrics import TrajectorySingleToolUse

    grounded_reply = PointwiseMetric(
        metric="response_follows_trajectory",
        metric_prompt_template=PointwiseMetricPromptTemplate(
            criteria={"grounded": "The reply reports what the listed tool calls did, and nothing they did not do."},
            rating_rubric={"1": "every claim has a call behind it", "0": "a claim has no call behind it"},
            input_variables=["prompt", "predicted_trajectory"],
        ),
    )
    task = EvalTask(
        dataset=pd.DataFrame(demo_rows()),
        metrics=[
            "trajectory_exact_match",
            "trajectory_precision",
            TrajectorySingleToolUse(tool_name="set_temperature"),
            CustomMetric(name="device_tools_used", metric_function=device_tools_used),
            grounded_reply,
            "bleu",
            "rouge_l_sum",
        ],
    )
    with serving_gemini(monkeypatch, follows) as gemini:
        reset_home()
        eval_result = task.evaluate(runnable=smart_home_agent)
        reset_home()
        ours = toolpath.evaluate(
            demo_rows(),
            [
                "trajectory_exact_match",
                "trajectory_precision",
                "trajectory_single_tool_use(tool_name=set_temperature)",
                toolpath.CustomMetric(device_tools_used, name="device_tools_used"),
                "response_follows_trajectory",
                "bleu",
                "rouge_l_sum",
            ],
            runnable=smart_home_agent,
        )
    assert gemini.requests == 2 * len(DEMO_CASES)
    # the EvalTask's judge was asked with the template written above: its criteria and rubric
    asked = [p for p in gemini.prompts if "nothing they did not do" in p]
    assert len(asked) == len(DEMO_CASES) and all("a claim has no call behind it" in p for p in asked)
    table = eval_result.metrics_table
    assert isinstance(table, pd.DataFrame) and len(table) == len(DEMO_CASES)
    names = [
        "rouge_l_sum",
        "bleu",
        "device_tools_used",
        "trajectory_exact_match",
        "trajectory_precision",
        "trajectory_single_tool_use",
        "response_follows_trajectory",
    ]
    by_case = {row["case_id"]: row for row in ours.metrics_table}
    for _, row in table.iterrows():
        theirs = by_case[row["case_id"]]
        for name in [*names, "failure"]:
            assert row[f"{name}/score"] == theirs[f"{name}/score"], (row["case_id"], name)
        assert row["response"] == theirs["response"]
    for name in names:
        assert eval_result.summary_metrics[f"{name}/mean"] == pytest.approx(ours.summary_metrics[f"{name}/mean"])
    summary = eval_result.summary_metrics
    assert summary["row_count"] == len(DEMO_CASES)
    assert 0 < summary["trajectory_exact_match/mean"] < 1  # the demo agent gets some of these wrong
    assert 0 < summary["response_follows_trajectory/mean"] < 1
    assert 0 < summary["device_tools_used/mean"] < 1
    assert summary["latency_in_seconds/mean"] > 0 and summary["failure/mean"] == 0
    assert set(table.columns) >= {"latency_in_seconds", "failure", "predicted_trajectory", "prompt", "reference"}


def test_an_experiment_is_a_named_run_in_the_store(tracing, store_url) -> None:
    from toolpath.vertex import EvalTask

    rows = [
        {"prompt": "p", "response": "Paris", "reference": "Paris"},
        {"prompt": "q", "response": "x", "reference": "y"},
    ]
    task = EvalTask(dataset=rows, metrics=["exact_match"], experiment="capitals")
    first = task.evaluate(experiment_run_name="capitals-1")
    assert first.metadata == {"experiment": "capitals", "experiment_run": "capitals-1"}
    assert first.run_id == "capitals-1"
    second = task.evaluate()  # a fresh run name, as Vertex AI makes one
    run = Store(store_url).get_eval_run("capitals-1")
    assert run is not None and run["metrics"]["experiment"] == "capitals"
    assert run["summary"]["exact_match/mean"] == 0.5
    assert set(task.display_runs()["run_id"]) == {"capitals-1", second.run_id}
    with pytest.raises(ConfigError, match="already holds a run 'capitals-1'"):
        task.evaluate(experiment_run_name="capitals-1")
    with pytest.raises(ConfigError, match="experiment_run_name needs an experiment"):
        EvalTask(dataset=rows, metrics=["exact_match"]).evaluate(experiment_run_name="r")


def test_what_needs_google_cloud_is_one_clear_error(tmp_path) -> None:
    from vertexai.preview.evaluation import metrics as vertex_metrics

    from toolpath.vertex import EvalTask

    rows = [{"prompt": "p", "response": "r", "reference": "r"}]
    with pytest.raises(DatasetError, match=r"gs://bucket/data\.jsonl: Cloud Storage and BigQuery"):
        EvalTask(dataset="gs://bucket/data.jsonl", metrics=["exact_match"])
    with pytest.raises(DatasetError, match=r"bq://p\.d\.t: Cloud Storage and BigQuery"):
        EvalTask(dataset="bq://p.d.t", metrics=["exact_match"])
    with pytest.raises(ConfigError, match="give a local directory"):
        EvalTask(dataset=rows, metrics=["exact_match"], output_uri_prefix="gs://bucket/out")
    with pytest.raises(MetricError, match="computed inside Vertex AI's evaluation service"):
        EvalTask(dataset=rows, metrics=["rubric_based_instruction_following"])
    with pytest.raises(MetricError, match=r"import it from toolpath\.vertex"):
        EvalTask(dataset=rows, metrics=[vertex_metrics.TrajectorySingleToolUse(tool_name="x")])
    with pytest.raises(ConfigError, match="a Gemini model name or a GenerativeModel"):
        EvalTask(dataset=[{"prompt": "p", "reference": "r"}], metrics=["exact_match"]).evaluate(model=42)
    with pytest.raises(DatasetError, match="already has 'response'"):
        EvalTask(dataset=rows, metrics=["exact_match"]).evaluate(model=str.upper)


def test_a_dict_dataset_a_prompt_template_and_a_model_function(tmp_path) -> None:
    from toolpath.vertex import EvalTask, PromptTemplate

    dataset = {"city": ["paris", "rome"], "reference": ["CAPITAL OF PARIS", "capital of rome"]}
    task = EvalTask(dataset=dataset, metrics=["exact_match"], output_uri_prefix=str(tmp_path))
    result = task.evaluate(
        model=lambda prompt: prompt.upper(),
        prompt_template=PromptTemplate("capital of {city}"),
        output_file_name="r.csv",
    )
    assert list(result.metrics_table["prompt"]) == ["capital of paris", "capital of rome"]
    assert list(result.metrics_table["exact_match/score"]) == [1.0, 0.0]
    assert "latency_in_seconds/mean" not in result.summary_metrics  # a model is not an agent run
    written = pd.read_csv(tmp_path / "r" / "r.csv")
    assert list(written["exact_match/score"]) == [1.0, 0.0]
    assert json.loads((tmp_path / "r" / "summary_metrics.json").read_text())["row_count"] == 2
    one = EvalTask(dataset={"response": ["a"], "answer": ["a"]}, metrics=["exact_match"])
    with pytest.raises(DatasetError, match="'nope' is not in the dataset"):
        one.evaluate(response_column_name="nope")
    mapped = EvalTask(dataset={"out": ["a"], "reference": ["a"]}, metrics=["exact_match"]).evaluate(
        response_column_name="out"
    )
    assert mapped.summary_metrics["exact_match/mean"] == 1.0
    assert math.isnan(mapped.summary_metrics["exact_match/std"])  # one row: pandas' NaN, as Vertex AI gives
    with pytest.raises(DatasetError, match="needs column\\(s\\) city"):
        EvalTask(dataset={"town": ["x"]}, metrics=["exact_match"]).evaluate(model=str, prompt_template="{city}")


def test_without_pandas_the_table_is_a_list_of_rows(monkeypatch) -> None:
    import sys

    from toolpath.vertex import EvalTask

    monkeypatch.setitem(sys.modules, "pandas", None)
    result = EvalTask(dataset=[{"response": "a", "reference": "a"}], metrics=["exact_match"]).evaluate()
    assert isinstance(result.metrics_table, list) and result.metrics_table[0]["exact_match/score"] == 1.0


PUBLIC = [
    ("vertexai.preview.evaluation", "toolpath.vertex"),
    ("vertexai.preview.evaluation.metrics", "toolpath.vertex.metrics"),
    ("vertexai.evaluation", "toolpath.vertex"),
    ("vertexai.evaluation.metrics", "toolpath.vertex.metrics"),
]


@pytest.mark.parametrize(("theirs", "ours"), PUBLIC)
def test_every_public_name_is_here_with_vertex_ais_arguments(theirs: str, ours: str) -> None:
    """Each public class of Vertex AI's modules (read from the installed package) is here, and takes every
    argument Vertex AI's takes, by the same names."""
    import importlib

    vertex, mine = importlib.import_module(theirs), importlib.import_module(ours)
    for name in vertex.__all__:
        assert hasattr(mine, name), f"{ours} lacks {name}"
        their_class, our_class = getattr(vertex, name), getattr(mine, name)
        fields = getattr(getattr(their_class, "meta", None), "fields", None)  # a proto message: its fields
        wanted = list(fields) if fields else [p for p in inspect.signature(their_class).parameters if p != "self"]
        given = inspect.signature(our_class).parameters
        assert [p for p in wanted if p not in given] == [], name
    if hasattr(vertex, "EvalTask"):
        evaluate_args = set(inspect.signature(vertex.EvalTask.evaluate).parameters)
        assert evaluate_args <= set(inspect.signature(mine.EvalTask.evaluate).parameters)


def test_a_gemini_model_generates_the_responses(monkeypatch) -> None:
    """``model=`` as a Gemini model name or Vertex AI's own ``GenerativeModel`` (its generation config and system
    instruction too) is asked through google-genai: here the fake Gemini server."""
    import vertexai
    from google.cloud.aiplatform import initializer
    from vertexai.generative_models import GenerationConfig, GenerativeModel

    from toolpath.vertex import EvalTask

    for attribute in ("_project", "_location"):  # vertexai.init below changes the process's Vertex AI settings
        monkeypatch.setattr(initializer.global_config, attribute, getattr(initializer.global_config, attribute))
    vertexai.init(project="test-project", location="us-central1")
    rows = [
        {"prompt": "Capital of France?", "reference": "Paris"},
        {"prompt": "Capital of Italy?", "reference": "Rome"},
    ]

    def script(prompt: str, seen: int) -> Reply:
        return Reply("Paris" if "France" in prompt else "Milan")

    gemini_model = GenerativeModel(
        "gemini-1.5-pro", generation_config=GenerationConfig(temperature=0.2), system_instruction="Answer in one word."
    )
    with serving_gemini(monkeypatch, script) as gemini:
        by_name = EvalTask(dataset=rows, metrics=["exact_match"]).evaluate(model="gemini-2.0-flash")
        by_object = EvalTask(dataset=rows, metrics=["exact_match"]).evaluate(model=gemini_model)
    for result in (by_name, by_object):
        assert list(result.metrics_table["response"]) == ["Paris", "Milan"]
        assert result.summary_metrics["exact_match/mean"] == 0.5
    assert gemini.models[:2] == ["gemini-2.0-flash"] * 2 and gemini.models[2:] == ["gemini-1.5-pro"] * 2
    last = gemini.bodies[-1]
    assert last["generationConfig"]["temperature"] == 0.2
    assert last["systemInstruction"]["parts"][0]["text"] == "Answer in one word."


def test_the_example_in_the_docs_runs(monkeypatch, tracing, capsys) -> None:
    """docs/vertex.md's EvalTask example, run as written against the demo agent and the fake Gemini server."""
    import re
    import sys
    import types
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "vertex.md").read_text(encoding="utf-8")
    example = re.search(r"```python\n(.*?)```", page, re.DOTALL)
    assert example is not None
    monkeypatch.setitem(sys.modules, "my_agent", types.SimpleNamespace(agent=smart_home_agent))
    with serving_gemini(monkeypatch, follows) as gemini:
        reset_home()
        namespace: dict = {}
        exec(compile(example.group(1), "docs/vertex.md", "exec"), namespace)
    summary = namespace["result"].summary_metrics
    assert summary["row_count"] == 2 and summary["trajectory_exact_match/mean"] == 1.0
    assert summary["changed_something/mean"] == 0.5 and summary["trajectory_single_tool_use/mean"] == 0.5
    assert gemini.requests == 2 and "row_count" in capsys.readouterr().out
    assert all("claims nothing they did not do" in prompt for prompt in gemini.prompts)  # the page's criteria


def test_importing_toolpath_vertex_is_light() -> None:
    """``import toolpath.vertex`` loads neither the store nor an SDK until a name is used."""
    import subprocess
    import sys

    code = (
        "import sys, toolpath.vertex\n"
        "print(sorted(m for m in ('sqlalchemy', 'google.genai', 'pandas', 'vertexai') if m in sys.modules))\n"
        "toolpath.vertex.EvalTask\n"
        "print('sqlalchemy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "True"]
