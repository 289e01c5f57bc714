"""Online settings as evaluators: a flat ``online.toml`` declares one :class:`EvaluatorSpec` (its metrics on each
turn, behind its filters and sample), and a spec's filters and sample decide what the store enqueues."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.helpers.builders import invocation
from toolpath.errors import ConfigError
from toolpath.evaluation.online import OnlineConfig
from toolpath.evaluation.online.sampling import JudgeBudget, Limits, sampled
from toolpath.evaluation.online.selection import Filters, TargetKind
from toolpath.evaluation.online.settings import EvaluatorSpec
from toolpath.model import ToolCall


def test_a_flat_online_toml_declares_one_evaluator_of_turns(tmp_path):
    (tmp_path / "online.toml").write_text(
        'metrics = ["tool_call_count", "fluency"]\nsample_rate = 0.25\nagent_names = ["bot"]\n'
        'failures_only = true\nattributes = { "service.name" = "support" }\n'
    )
    (spec,) = OnlineConfig.load(tmp_path / "online.toml").specs
    assert spec == EvaluatorSpec(
        "default",
        "1",
        ("tool_call_count", "fluency"),
        TargetKind.TURN,
        Filters(("bot",), True, {"service.name": "support"}),
        Limits(0.25),
    )
    assert spec.target == "turn"  # str-valued, as a TOML file would spell it
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.metrics = ("fluency",)  # type: ignore[misc]


def test_the_spec_accepts_what_passes_its_filters_and_falls_in_its_sample():
    support = invocation(1).model_copy(update={"failure": 1, "attributes": {"service.name": "support"}})
    filters = Filters(("bot",), True, {"service.name": "support"})
    spec = EvaluatorSpec("support", "2", ("tool_call_count",), filters=filters)
    assert spec.accepts(support)
    assert not spec.accepts(support.model_copy(update={"agent_name": "other"}))
    assert not spec.accepts(support.model_copy(update={"failure": 0}))
    assert not spec.accepts(support.model_copy(update={"attributes": {"service.name": "billing"}}))
    ids = [invocation(i).invocation_id for i in range(200)]
    half = EvaluatorSpec("half", "1", ("tool_call_count",), limits=Limits(0.5))
    taken = [i for i in ids if half.accepts(invocation(int(i, 16)))]
    assert taken == [i for i in ids if sampled(i, "half", 0.5)] and 50 < len(taken) < 150


def test_bad_limits_and_names_are_refused_by_name():
    with pytest.raises(ConfigError, match=r"^online: sample_rate must be between 0 and 1, got 1\.5$"):
        Limits(1.5)
    with pytest.raises(ConfigError, match=r"^online: an evaluator's name is empty$"):
        EvaluatorSpec("", "1", ("tool_call_count",))


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('failures_only = "no"', "failures_only = 'no' (a string): expected true or false"),
        ('agent_names = "bot"', "agent_names = 'bot' (a string): expected a list of names"),
        ('attributes = ["deployment", "prod"]', "attributes = ['deployment', 'prod'] (a list): expected a table"),
        ('metrics = "trajectory_exact_match"', "metrics = 'trajectory_exact_match' (a string): expected a list"),
        ("thresholds = 5", "thresholds = 5 (a whole number): expected a table of metric = finite number"),
        ("thresholds = {tool_error_rate = nan}", "thresholds = {'tool_error_rate': nan} (a table)"),
        ("poll_seconds = 0", "poll_seconds = 0 (a whole number): expected a number of seconds, at least 0.01"),
        ("lease_seconds = -5", "lease_seconds = -5 (a whole number): expected a number of seconds, at least 1"),
        ("workers = true", "workers = True (true/false): expected a whole number, at least 1"),
        ('sample_rate = "0.5"', "sample_rate = '0.5' (a string): expected a number from 0 to 1"),
        ("max_backlog = 0", "max_backlog = 0 (a whole number): expected a whole number, at least 1"),
    ],
)
def test_a_value_of_the_wrong_type_is_one_error_naming_the_key(tmp_path, line, said):
    path = tmp_path / "online.toml"
    keys = {"metrics": 'metrics = ["tool_error_rate"]'}
    key = line.split(" =")[0]
    path.write_text("\n".join([*(v for k, v in keys.items() if k != key), line]) + "\n")
    with pytest.raises(ConfigError) as refused:
        OnlineConfig.load(path)
    assert str(refused.value).startswith(f"{path}: ") and said in str(refused.value)


TWO_EVALUATORS = """
workers = 2
thresholds = { fluency = 4 }

[[evaluator]]
name = "support-quality"
version = "3"
metrics = ["fluency"]
agent_names = ["support_bot"]
attributes = { deployment = "prod" }
tool_called = ["refund", "cancel_order"]
min_latency_seconds = 2.5
sample_rate = 0.1
max_per_hour = 500
concurrency = 4
budget = { tokens_per_hour = 200000, tokens_per_day = 2000000 }

[[evaluator]]
name = "failures"
metrics = ["tool_error_rate", "trajectory_exact_match"]
failures_only = true
max_latency_seconds = 30
"""


def test_evaluator_tables_declare_one_spec_each_with_its_own_filters_and_limits(tmp_path):
    (tmp_path / "online.toml").write_text(TWO_EVALUATORS)
    quality, failures = OnlineConfig.load(tmp_path / "online.toml").specs
    assert quality == EvaluatorSpec(
        "support-quality",
        "3",
        ("fluency",),
        TargetKind.TURN,
        Filters(("support_bot",), False, {"deployment": "prod"}, ("refund", "cancel_order"), 2.5, None),
        Limits(0.1, 500, 4, JudgeBudget(200_000, 2_000_000)),
    )
    assert (failures.name, failures.version, failures.metrics) == (
        "failures",
        "1",
        ("tool_error_rate", "trajectory_exact_match"),
    )
    assert failures.filters == Filters(failures_only=True, max_latency_seconds=30)
    assert failures.limits == Limits() and not failures.limits.quota and quality.limits.quota


def test_an_evaluators_filters_take_a_tool_it_called_and_a_latency_bound():
    spec = EvaluatorSpec(
        "slow-refunds", "1", ("fluency",), filters=Filters(tool_called=("refund",), min_latency_seconds=2.0)
    )
    slow_refund = invocation(1).model_copy(
        update={"tool_calls": [ToolCall(name="lookup", args={}), ToolCall(name="refund", args={})]}
    )
    slow_refund = slow_refund.model_copy(update={"latency_seconds": 3.0})
    assert spec.accepts(slow_refund)
    assert not spec.accepts(slow_refund.model_copy(update={"latency_seconds": 1.0}))  # too fast
    assert not spec.accepts(slow_refund.model_copy(update={"latency_seconds": None}))  # raised: no latency
    assert not spec.accepts(slow_refund.model_copy(update={"tool_calls": [ToolCall(name="lookup", args={})]}))
    fast = EvaluatorSpec("fast", "1", ("fluency",), filters=Filters(max_latency_seconds=2.0))
    assert fast.accepts(slow_refund.model_copy(update={"latency_seconds": 2.0}))
    assert not fast.accepts(slow_refund)


def test_samples_are_decided_by_the_target_and_the_evaluators_name():
    """Two evaluators at one rate take samples of their own; one evaluator takes the same targets every time,
    whichever process asks (the hash depends on nothing else)."""
    ids = [invocation(i).invocation_id for i in range(400)]
    a = {i for i in ids if sampled(i, "a", 0.3)}
    b = {i for i in ids if sampled(i, "b", 0.3)}
    assert 80 < len(a) < 160 and 80 < len(b) < 160
    assert a != b and len(a & b) < len(a) * 0.6  # independent samples overlap by about 30 %
    assert a == {i for i in ids if EvaluatorSpec("a", "2", ("fluency",), limits=Limits(0.3)).samples(i)}
    assert not any(sampled(i, "a", 0.0) for i in ids) and all(sampled(i, "a", 1.0) for i in ids)


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('name = "a"\nmetrics = ["fluency"]\nidle_seconds = 60', "evaluator 'a': idle_seconds: only for an evaluator"),
        ('name = "a"\nmetrics = ["fluency"]\ntarget = "trace"', "evaluator 'a': target = 'trace' (a string): expected"),
        ('metrics = ["fluency"]', "evaluator #1: 'name' is required"),
        ('name = "a b"\nmetrics = ["fluency"]', "evaluator 'a b': name = 'a b' (a string): expected a name of"),
        ('name = "a"\nversion = 2\nmetrics = ["fluency"]', "evaluator 'a': version = 2 (a whole number): expected"),
        ('name = "a"\nmetrics = []', "evaluator 'a': 'metrics' names no metric"),
        ('name = "a"', "evaluator 'a': 'metrics' is required"),
        ('name = "a"\nmetrics = ["fluency"]\nsample_rate = "all"', "evaluator 'a': sample_rate = 'all' (a string)"),
        ('name = "a"\nmetrics = ["fluency"]\nsample_rate = 1.5', "evaluator 'a': sample_rate must be between 0 and 1"),
        ('name = "a"\nmetrics = ["fluency"]\nmax_per_hour = 0', "evaluator 'a': max_per_hour = 0 (a whole number)"),
        ('name = "a"\nmetrics = ["fluency"]\nconcurrency = 2.5', "evaluator 'a': concurrency = 2.5 (a number)"),
        ('name = "a"\nmetrics = ["fluency"]\nbudget = 1000', "evaluator 'a': budget = 1000 (a whole number)"),
        ('name = "a"\nmetrics = ["fluency"]\nbudget = {cost_per_day = 0}', "evaluator 'a': budget = {'cost_per_day'"),
        ('name = "a"\nmetrics = ["fluency"]\ntool_called = "refund"', "evaluator 'a': tool_called = 'refund'"),
        ('name = "a"\nmetrics = ["fluency"]\nfailures_only = 1', "evaluator 'a': failures_only = 1 (a whole number)"),
        ('name = "a"\nmetrics = ["fluency"]\nmin_latency_seconds = -1', "min_latency_seconds = -1 (a whole number)"),
        (
            'name = "a"\nmetrics = ["fluency"]\nmin_latency_seconds = 5\nmax_latency_seconds = 1',
            "evaluator 'a': min_latency_seconds = 5 is more than max_latency_seconds = 1",
        ),
        ('name = "a"\nmetrics = ["fluency"]\nworkers = 3', "evaluator 'a': unknown key(s) workers; known: name,"),
    ],
)
def test_a_bad_evaluator_table_is_one_error_naming_the_evaluator_and_the_key(tmp_path, table, said):
    path = tmp_path / "online.toml"
    path.write_text(f"[[evaluator]]\n{table}\n")
    with pytest.raises(ConfigError) as refused:
        OnlineConfig.load(path)
    assert str(refused.value).startswith(f"{path}: ") and said in str(refused.value), str(refused.value)


def test_evaluator_tables_refuse_evaluator_keys_beside_them_and_a_name_twice(tmp_path):
    path = tmp_path / "online.toml"
    path.write_text('sample_rate = 0.5\n[[evaluator]]\nname = "a"\nmetrics = ["fluency"]\n')
    with pytest.raises(ConfigError, match=r"sample_rate at the top level beside \[\[evaluator\]\] tables"):
        OnlineConfig.load(path)
    path.write_text('[[evaluator]]\nname = "a"\nmetrics = ["fluency"]\n[[evaluator]]\nname = "a"\nmetrics = ["x"]\n')
    with pytest.raises(ConfigError, match=r"two evaluators are named 'a'"):
        OnlineConfig.load(path)
    path.write_text("evaluator = 5\n")
    with pytest.raises(ConfigError, match=r"evaluator = 5 \(a whole number\): expected \[\[evaluator\]\] tables"):
        OnlineConfig.load(path)
    assert EvaluatorSpec("whole", "1", ("fluency",), TargetKind.SESSION).idle_seconds == 120.0


def test_the_flat_form_takes_the_evaluator_keys_at_its_top_level(tmp_path):
    path = tmp_path / "online.toml"
    path.write_text('name = "support"\nversion = "7"\nmetrics = ["fluency"]\nmax_per_hour = 100\nconcurrency = 2\n')
    (spec,) = OnlineConfig.load(path).specs
    assert (spec.name, spec.version, spec.limits.max_per_hour, spec.limits.concurrency) == ("support", "7", 100, 2)


def test_the_documented_online_toml_with_two_evaluators_loads_as_it_says(tmp_path):
    docs = Path(__file__).resolve().parents[2] / "docs" / "collector.md"
    block = docs.read_text().split("# online.toml: two evaluators\n", 1)[1].split("```", 1)[0]
    (tmp_path / "online.toml").write_text(block)
    config = OnlineConfig.load(tmp_path / "online.toml")
    quality, failures = config.specs
    assert (quality.name, quality.version, quality.target) == ("support-quality", "3", TargetKind.TURN)
    assert quality.filters.tool_called == ("refund", "cancel_order") and quality.filters.min_latency_seconds == 2.5
    assert quality.limits == Limits(0.1, 500, 4, JudgeBudget(200_000, 2_000_000))
    assert (failures.name, failures.version, failures.filters.failures_only) == ("failures", "1", True)
    assert config.workers == 4 and config.thresholds == {"fluency": 4, "trajectory_exact_match": 1}
