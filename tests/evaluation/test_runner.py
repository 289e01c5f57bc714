"""toolpath.evaluate: summaries, metric tables, custom metrics, and agents run through the real pipeline."""

from __future__ import annotations

import json
import re
import statistics

import pytest

import toolpath
from toolpath.errors import DatasetError, MetricError
from toolpath.store.store import Store

ROWS = [
    {
        "prompt": "p1",
        "predicted_trajectory": [{"tool_name": "a", "tool_input": {}}],
        "reference_trajectory": [{"tool_name": "a", "tool_input": {}}],
    },
    {
        "prompt": "p2",
        "predicted_trajectory": [{"tool_name": "b", "tool_input": {}}],
        "reference_trajectory": [{"tool_name": "a", "tool_input": {}}],
    },
    {
        "prompt": "p3",
        "predicted_trajectory": [],
        "reference_trajectory": [{"tool_name": "a", "tool_input": {}}, {"tool_name": "c", "tool_input": {}}],
    },
    {"prompt": "p4", "predicted_trajectory": [{"tool_name": "a", "tool_input": {}}]},
]


def test_summary_and_table_follow_spec():
    result = toolpath.evaluate(ROWS, ["trajectory_exact_match", "trajectory_recall"])
    assert result.summary_metrics["row_count"] == 4
    # the row without a reference is not scored, and is not counted as 0
    assert result.summary_metrics["trajectory_exact_match/mean"] == pytest.approx(1 / 3)
    assert result.summary_metrics["trajectory_exact_match/std"] == pytest.approx(statistics.stdev([1, 0, 0]))
    last = result.metrics_table[3]
    assert last["trajectory_recall/score"] is None
    assert last["trajectory_recall/explanation"] == "row has no 'reference_trajectory'"
    assert result.metrics_table[0]["prompt"] == "p1"
    assert set(result.to_dict()) == {"summary_metrics", "metrics_table"}


def test_single_row_std_is_null():
    result = toolpath.evaluate(ROWS[:1], ["trajectory_exact_match"])
    assert result.summary_metrics["trajectory_exact_match/mean"] == 1.0
    assert result.summary_metrics["trajectory_exact_match/std"] is None


def test_custom_metrics_number_dict_and_failure():
    def n_calls(row):
        return len(row["predicted_trajectory"])

    def judged(row):
        return {"score": 0.5, "explanation": "half", "confidence": 0.9}

    def broken(row):
        raise RuntimeError("oops")

    result = toolpath.evaluate(ROWS, [n_calls, judged, broken])
    row = result.metrics_table[0]
    assert row["n_calls/score"] == 1.0
    assert row["judged/score"] == 0.5 and row["judged/explanation"] == "half" and row["judged/confidence"] == 0.9
    assert row["broken/score"] is None and "RuntimeError: oops" in row["broken/explanation"]
    assert result.summary_metrics["broken/mean"] is None


def needed_tools_called(instance, needed=("get_weather", "book_table")):
    """A custom metric in Vertex AI's form: one row in as plain dicts, ``{metric name: score}`` out."""
    called = {call["tool_name"] for call in instance["predicted_trajectory"]}
    return {"needed_tools_called": sum(name in called for name in needed) / len(needed)}


def test_vertex_custom_metric_as_vertex_users_write_it(tmp_path):
    custom = toolpath.CustomMetric(name="needed_tools_called", metric_function=needed_tools_called)
    (tmp_path / "cases.csv").write_text(
        "prompt,predicted_trajectory\n"
        'a,"[{""tool_name"": ""get_weather"", ""tool_input"": {}}, {""name"": ""book_table"", ""args"": {}}]"\n'
        "b,[]\n"
    )
    # a CSV's JSON text cells, an ADK-form call among them: the function sees Vertex-form dicts
    result = toolpath.evaluate(tmp_path / "cases.csv", [custom, "trajectory_single_tool_use(tool_name=get_weather)"])
    assert [row["needed_tools_called/score"] for row in result.metrics_table] == [1.0, 0.0]
    assert result.metrics_table[0]["trajectory_single_tool_use/score"] == 1.0
    rows = [{"prompt": "c", "predicted_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": "Oslo"}}]}]
    assert toolpath.evaluate(rows, [custom]).metrics_table[0]["needed_tools_called/score"] == 0.5
    assert toolpath.CustomMetric("named", needed_tools_called).name == "named"  # Vertex's positional order
    with pytest.raises(MetricError, match="needs a function"):
        toolpath.CustomMetric(name="nothing")


def test_two_variants_of_one_metric_by_name():
    rows = [{"predicted_trajectory": [{"tool_name": "a", "tool_input": {"x": 1}}], "reference_trajectory": [
        {"tool_name": "a", "tool_input": {"x": 2}}]}]  # fmt: skip
    result = toolpath.evaluate(rows, ["trajectory_f1(match=name, name=f1_names)", "trajectory_f1"])
    assert result.metric_names == ["f1_names", "trajectory_f1"]
    row = result.metrics_table[0]
    assert (row["f1_names/score"], row["trajectory_f1/score"]) == (1.0, 0.0)
    assert result.rules["f1_names"] == {"threshold": 1.0, "lower_is_better": False, "best": None}
    with pytest.raises(MetricError, match=r"listed twice: trajectory_f1 \(give each variant a name of its own"):
        toolpath.evaluate(rows, ["trajectory_f1(match=name)", "trajectory_f1"])
    with pytest.raises(MetricError, match="name=3 is not a name"):
        toolpath.evaluate(rows, ["trajectory_f1(name=3)"])


def test_metric_column_mapping():
    rows = [{"prompt": "x", "predicted_trajectory": [], "expected": []}]
    result = toolpath.evaluate(
        rows, ["trajectory_exact_match"], metric_column_mapping={"reference_trajectory": "expected"}
    )
    assert result.metrics_table[0]["trajectory_exact_match/score"] == 1.0


def test_unknown_metric_and_duplicates_are_errors():
    with pytest.raises(MetricError, match="unknown metric 'trajectory_exact'"):
        toolpath.evaluate(ROWS, ["trajectory_exact"])
    with pytest.raises(MetricError, match="listed twice"):
        toolpath.evaluate(ROWS, ["trajectory_recall", "trajectory_recall"])
    with pytest.raises(MetricError, match="tool_name"):
        toolpath.evaluate(ROWS, ["trajectory_single_tool_use"])


def test_jsonl_errors_name_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "ok"}\n\n{"prompt": broken}\n')
    with pytest.raises(DatasetError, match=r"bad.jsonl:3: not valid JSON"):
        toolpath.evaluate(path, ["trajectory_exact_match"])
    with pytest.raises(DatasetError, match="no such file"):
        toolpath.evaluate(tmp_path / "missing.jsonl", ["trajectory_exact_match"])


def test_a_file_is_streamed_and_scored_as_the_same_rows_in_memory(tmp_path):
    """evaluate(path) reads and scores a row at a time; the table is the one the rows in memory give, and the
    caller's rows are left as they were."""
    rows = [
        *ROWS,
        {
            "prompt": "p5",
            "predicted_trajectory": [{"name": "a", "args": {"n": [1, {"on": True}]}}, {"name": "b", "args": None}],
            "reference_trajectory": json.dumps([{"tool_name": "a", "tool_input": {"n": [1.0, {"on": 1}]}}]),
        },
    ]
    before = json.loads(json.dumps(rows))
    metrics = ["trajectory_exact_match", "trajectory_in_order_match", "trajectory_precision", "trajectory_recall"]
    in_memory = toolpath.evaluate(rows, metrics)
    assert rows == before
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    streamed = toolpath.evaluate(path, metrics)
    assert streamed.metrics_table == in_memory.metrics_table
    assert streamed.summary_metrics == in_memory.summary_metrics
    assert in_memory.metrics_table[4]["trajectory_in_order_match/score"] == 1.0
    assert in_memory.metrics_table[4]["trajectory_precision/score"] == 0.5


@toolpath.tool
def lookup(city: str) -> dict:
    return {"city": city, "temp": 20}


@toolpath.agent(name="weather")
def weather_agent(prompt: str) -> str:
    if "crash" in prompt:
        raise RuntimeError("model unavailable")
    city = prompt.split()[-1]
    return f"{lookup(city)['temp']} degrees in {city}"


def test_runnable_fills_columns_from_what_was_traced(tracing, store_url):
    rows = [
        {
            "prompt": "weather in Paris",
            "reference_trajectory": [{"tool_name": "lookup", "tool_input": {"city": "Paris"}}],
        },
        {
            "prompt": "weather in Oslo",
            "reference_trajectory": [{"tool_name": "lookup", "tool_input": {"city": "Paris"}}],
        },
        {"prompt": "crash now", "reference_trajectory": []},
    ]
    result = toolpath.evaluate(rows, ["trajectory_exact_match"], runnable=weather_agent)
    table = result.metrics_table
    assert table[0]["response"] == "20 degrees in Paris"
    [call] = table[0]["predicted_trajectory"]
    assert {k: call[k] for k in ("tool_name", "tool_input")} == {"tool_name": "lookup", "tool_input": {"city": "Paris"}}
    assert "tool_output" in call  # what the tool returned reaches the row (judges check answers against it)
    assert [r["trajectory_exact_match/score"] for r in table] == [1.0, 0.0, 1.0]
    assert table[0]["latency_in_seconds"] > 0 and table[0]["failure"] == 0
    assert table[2]["failure"] == 1 and table[2]["latency_in_seconds"] is None
    assert table[2]["error"] == "RuntimeError: model unavailable"
    assert result.summary_metrics["failure/mean"] == pytest.approx(1 / 3)
    assert "latency_in_seconds/mean" in result.summary_metrics
    # and the same invocations are in the store
    toolpath.flush()
    stored = Store(store_url).get_invocation(table[0]["invocation_id"])
    assert stored.prompt == "weather in Paris" and stored.tool_calls[0].args == {"city": "Paris"}


def test_plain_callable_and_custom_function_shape_without_init():
    toolpath.shutdown()

    def custom_agent(prompt: str) -> dict:
        return {
            "response": prompt.upper(),
            "predicted_trajectory": [{"tool_name": "shout", "tool_input": {"text": prompt}}],
        }

    rows = [{"prompt": "hi", "reference_trajectory": [{"tool_name": "shout", "tool_input": {"text": "hi"}}]}]
    result = toolpath.evaluate(rows, ["trajectory_exact_match"], runnable=custom_agent)
    assert result.metrics_table[0]["response"] == "HI"
    assert result.metrics_table[0]["trajectory_exact_match/score"] == 1.0


async def _async_agent(prompt: str) -> str:
    return f"{lookup('Rome')['city']}!"


def test_async_runnable(tracing):
    result = toolpath.evaluate(
        [{"prompt": "x", "reference_trajectory": [{"tool_name": "lookup"}]}],
        ["trajectory_exact_match"],
        runnable=_async_agent,
    )
    assert result.metrics_table[0]["response"] == "Rome!"
    assert result.metrics_table[0]["trajectory_exact_match/score"] == 1.0


def test_rows_run_concurrently_each_measured_and_traced(tracing, store_url):
    import threading
    import time

    active, peak = 0, 0
    lock = threading.Lock()

    @toolpath.agent(name="slow")
    def slow(prompt: str) -> str:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        lookup(prompt)
        with lock:
            active -= 1
        return prompt.upper()

    rows = [
        {"prompt": f"city{i}", "reference_trajectory": [{"tool_name": "lookup", "tool_input": {"city": f"city{i}"}}]}
        for i in range(16)
    ]
    result = toolpath.evaluate(rows, ["trajectory_exact_match"], runnable=slow, concurrency=4)
    assert peak == 4
    assert [r["response"] for r in result.metrics_table] == [f"CITY{i}" for i in range(16)]
    assert all(r["trajectory_exact_match/score"] == 1.0 for r in result.metrics_table)
    assert all(r["latency_in_seconds"] >= 0.05 for r in result.metrics_table)
    toolpath.flush()
    assert Store(store_url).counts()["invocations"] == 16


def test_bad_prompt_is_reported_before_any_run():
    calls = []
    with pytest.raises(DatasetError, match="row 1: 'prompt' must be a string"):
        toolpath.evaluate([{"prompt": "ok"}, {"prompt": 3}], ["failure"], runnable=lambda p: calls.append(p))
    assert calls == []


def test_each_agent_run_is_reported_as_it_ends_before_any_row_is_scored(tracing):
    events: list[tuple[str, int]] = []
    rows = [{"prompt": f"weather in {city}"} for city in ("Paris", "Oslo", "Rome", "Lima")]
    toolpath.evaluate(
        rows,
        ["tool_call_count"],
        runnable=weather_agent,
        concurrency=2,
        on_agent_run=lambda index: events.append(("ran", index)),
        on_row=lambda index, _: events.append(("scored", index)),
    )
    # a progress bar moves during the agent phase: one report per run, all of them before scoring starts
    assert sorted(events[:4]) == [("ran", i) for i in range(4)]
    assert events[4:] == [("scored", i) for i in range(4)]


@pytest.mark.parametrize(
    ("metrics", "said"),
    [
        ([], "metrics is empty"),
        (None, "got NoneType"),
        ("trajectory_exact_match", "did you mean ['trajectory_exact_match']?"),
        ({"trajectory_exact_match": 1}, "got dict"),
    ],
)
def test_evaluate_with_nothing_to_score_is_an_error_not_a_summary(metrics, said):
    from toolpath.errors import ConfigError
    from toolpath.evaluation.runner import evaluate

    with pytest.raises(ConfigError, match=re.escape(said)):
        evaluate([{"prompt": "x", "predicted_trajectory": [], "reference_trajectory": []}], metrics)


def test_a_store_given_as_a_url_says_what_store_takes():
    from toolpath.errors import ConfigError
    from toolpath.evaluation.runner import evaluate

    with pytest.raises(ConfigError, match=re.escape("store= takes a Store (toolpath.Store('sqlite:///x.db')")):
        evaluate([{"predicted_trajectory": [], "reference_trajectory": []}], ["trajectory_exact_match"],
                 store="sqlite:///x.db")  # fmt: skip
