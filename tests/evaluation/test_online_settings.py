"""Online settings as evaluators: a flat ``online.toml`` declares one :class:`EvaluatorSpec` (its metrics on each
turn, behind its filters and sample), and a spec's filters and sample decide what the store enqueues."""

from __future__ import annotations

import dataclasses

import pytest

from tests.helpers.builders import invocation
from toolpath.errors import ConfigError
from toolpath.evaluation.online import OnlineConfig
from toolpath.evaluation.online.sampling import Limits, sampled
from toolpath.evaluation.online.selection import Filters, TargetKind
from toolpath.evaluation.online.settings import EvaluatorSpec


def test_a_flat_online_toml_declares_one_evaluator_of_turns(tmp_path):
    (tmp_path / "online.toml").write_text(
        'metrics = ["tool_call_count", "fluency"]\nsample_rate = 0.25\nagent_names = ["bot"]\n'
        'failures_only = true\nattributes = { "service.name" = "support" }\n'
    )
    spec = OnlineConfig.load(tmp_path / "online.toml").evaluator
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
    assert taken == [i for i in ids if sampled(i, 0.5)] and 50 < len(taken) < 150


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
