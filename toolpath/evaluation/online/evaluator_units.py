"""An online evaluator made ready to score: its declared :class:`EvaluatorSpec` with its metrics resolved, their
pass rules, and its own judge (its calls in flight bounded across all workers; with a budget, room for each call
held in the store before it is sent: :mod:`toolpath.judges.call_gate`)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolpath.errors import ConfigError
from toolpath.evaluation.catalog import pass_rules, passes, resolve_metric
from toolpath.evaluation.online.budget_gate import DEFAULT_MAX_OUTPUT_TOKENS, StoreHolds
from toolpath.evaluation.online.evaluator_specs import EvaluatorSpec
from toolpath.evaluation.online.selection import TargetKind
from toolpath.evaluation.scoring import prepare_judge, score_views
from toolpath.judges.call_gate import GatedBackend
from toolpath.judges.call_slots import CallSlots
from toolpath.judges.client import Judge, JudgeCall, JudgeOutcome, JudgeSettings, JudgeUsage
from toolpath.judges.process_budget import WhenSpent
from toolpath.metrics.base import Metric
from toolpath.store.job_queue import QueueEvaluator
from toolpath.store.job_status import ResultLabel
from toolpath.store.judge_holds import Released
from toolpath.store.judge_spend import SpendRow
from toolpath.store.online_usage import UsageLimits
from toolpath.store.usage import known_prices

__all__ = ["BatchSpend", "EvaluatorUnit", "spending"]

Row = tuple[dict[str, Any], Mapping[str, Any]]
"""A row to score: the table row, and the row as metrics read it."""
_LABELS = {True: ResultLabel.PASS, False: ResultLabel.FAIL, None: ResultLabel.SCORED}
"""An online result's label by its score's verdict (``None``: the metric has no pass mark)."""


@dataclass
class BatchSpend:
    """What one batch's scoring spent of its evaluator's judge: the requests as they ended, and the tokens
    (input + output, cache hits free) counted against its budget."""

    calls: list[JudgeCall] = field(default_factory=list)
    tokens: int = 0
    """Counted against the budget with the results (the calls' whose cost was not held for them as they were
    sent: :mod:`toolpath.store.judge_holds`)."""
    over_budget: set[int] = field(default_factory=set)
    """The rows of the batch (their indexes) a call of which the budget had no room for: not scored, skipped."""

    def counted(self, unit: EvaluatorUnit, judge: Judge | None) -> BatchSpend:
        """This spend, its tokens those ``judge`` reported (added to ``unit``'s usage)."""
        if judge is not None:
            held = sum(c.hold.input_tokens + c.hold.output_tokens for c in self.calls if c.hold is not None)
            self.tokens = judge.usage.input_tokens + judge.usage.output_tokens - held
            unit.add_usage(judge.usage)
        return self

    def released(self, evaluator: str) -> list[tuple[str, Released]]:
        """The calls whose cost was held as they were sent, to move to their outcomes' rows with the results."""
        return [
            (evaluator, Released(c.hold.key, c.model, c.hold.input_tokens, c.hold.output_tokens, c.outcome, c.seconds))
            for c in self.calls
            if c.hold is not None
        ]

    def usage_of(self, calls: Iterable[JudgeCall]) -> dict[str, Any] | None:
        """What ``calls`` (some of this batch's) spent, as a result's attributes carry it; ``None``: no call."""
        calls = list(calls)
        made = [c for c in calls if c.outcome is not JudgeOutcome.CACHED]
        cached = len(calls) - len(made)
        if not made and not cached:
            return None
        return {
            "model": ",".join(sorted({c.model for c in made})) or None,
            "calls": len(made),
            "cached": cached,
            "input_tokens": sum(c.input_tokens for c in made),
            "output_tokens": sum(c.output_tokens for c in made),
            "seconds": sum(c.seconds for c in made),
        }

    def by_result(self) -> dict[tuple[int, str], dict[str, Any]]:
        """The judge usage of each (row index, metric) of the batch its calls name (:data:`REQUEST_TAG`)."""
        tagged: dict[tuple[int, str], list[JudgeCall]] = {}
        for call in self.calls:
            if call.tag is not None:
                tagged.setdefault(call.tag, []).append(call)
        return {tag: usage for tag, calls in tagged.items() if (usage := self.usage_of(calls)) is not None}

    def rows(self) -> list[SpendRow]:
        """The requests added up by model and outcome, as the store keeps them."""
        added: dict[tuple[str, str], list[float]] = {}
        for call in self.calls:
            if call.hold is not None:  # moved from the held row, to the hour it was held in (:meth:`released`)
                continue
            row = added.setdefault((call.model, call.outcome), [0, 0, 0, 0.0])
            row[0] += 1
            row[1] += call.input_tokens
            row[2] += call.output_tokens
            row[3] += call.seconds
        return [SpendRow(m, o, int(n), int(i), int(out), s) for (m, o), (n, i, out, s) in sorted(added.items())]


@dataclass
class EvaluatorUnit:
    """One evaluator, ready: what it scores with and how its results pass."""

    spec: EvaluatorSpec
    metrics: list[Metric]
    rules: dict[str, Any]
    judge: Judge | None
    """Its judge (``None``: none of its metrics asks one); each batch asks through a copy that counts the batch's
    tokens, all copies sharing its backend, cache and call slots."""
    usage: JudgeUsage = field(default_factory=JudgeUsage)
    """What its judge has done in this process, all batches together."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    @classmethod
    def build(
        cls,
        spec: EvaluatorSpec,
        settings: JudgeSettings,
        thresholds: Mapping[str, float],
        cache: Any,
        extra: Sequence[Metric] = (),
    ) -> EvaluatorUnit:
        """``spec``'s metrics (and ``extra``: an eval set's criteria), a judge with ``settings`` if one of them asks
        one (connected now: missing credentials are a :class:`ConfigError` before any scoring), the pass rules with
        ``thresholds`` (those of its metrics)."""
        metrics = [resolve_metric(m) for m in spec.metrics] + list(extra)
        names = [m.name for m in metrics]
        if twice := sorted({n for n in names if names.count(n) > 1}):  # one result row per invocation and name
            raise ConfigError(
                f"online: evaluator {spec.name!r}: metric(s) listed twice: {', '.join(twice)} (give each variant a "
                "name of its own: trajectory_exact_match(agent=billing_agent, name=billing_exact))"
            )
        judge = prepare_judge(metrics, dataclasses.replace(settings), cache=cache)
        if judge is None and spec.target is TargetKind.SESSION and spec.reference_dataset is not None:
            judge = Judge(dataclasses.replace(settings), cache=cache)  # its eval set's criteria may ask one (lazily)
        if judge is not None:  # past the process's judge budget a call is refused (its result says so): a
            judge.when_spent = WhenSpent.REFUSE  # job waiting a minute for room would outlive its lease
            judge.slots = CallSlots(spec.limits.concurrency or judge.settings.concurrency)
        rules = pass_rules(metrics, {k: v for k, v in thresholds.items() if k in names})
        if spec.limits.budget.costed:
            _check_priced(spec, judge, cache)
        unit = cls(spec, metrics, rules, judge)
        limits = unit.usage_limits()
        if judge is not None and limits is not None and limits.budgeted:
            if judge.settings.max_output_tokens is None:  # each call held at its most: it needs a most
                judge.settings.max_output_tokens = DEFAULT_MAX_OUTPUT_TOKENS
            judge.backend = GatedBackend(judge.backend, StoreHolds(cache, spec.name, limits))
            _check_room(spec, limits, judge.settings, cache)
        return unit

    @property
    def name(self) -> str:
        return self.spec.name

    def usage_limits(self) -> UsageLimits | None:
        """The limits the store keeps for it (``None``: none: nothing counted)."""
        limits = self.spec.limits
        if not limits.quota:
            return None
        budget = limits.budget
        return UsageLimits(
            limits.max_per_hour, budget.tokens_per_hour, budget.tokens_per_day, budget.cost_per_hour,
            budget.cost_per_day,
        )  # fmt: skip

    def queued(self) -> QueueEvaluator:
        """The evaluator as the job queue sees it: its filters, its sample, the limits the store keeps."""
        spec = self.spec
        kept = self.usage_limits()
        return QueueEvaluator(spec.name, spec.version, spec.filters.admits, spec.samples, kept, spec.idle_seconds)

    def score(
        self, items: Iterable[tuple[dict[str, Any], Mapping[str, Any]]]
    ) -> tuple[list[list[dict[str, Any]]], BatchSpend]:
        """Each row's results (one per metric), and what their scoring spent of the judge."""
        judge, spent = self.batch_judge()
        table, _, _ = score_views(items, self.metrics, judge=judge, summarized=False)
        used = spent.by_result()
        spent.over_budget = {c.tag[0] for c in spent.calls if c.outcome is JudgeOutcome.OVER_BUDGET and c.tag}
        plan = [self._keys(m.name) for m in self.metrics]  # each result's keys and pass rule, once a batch
        results = []
        for index, scored in enumerate(table):
            row = []
            for metric, score_key, explanation_key, rule, unmarked in plan:
                score = scored.get(score_key)
                # no threshold: no verdict (passes' None), the label without calling it
                label = (ResultLabel.ERROR if score is None else ResultLabel.SCORED if unmarked
                         else _LABELS[passes(score, **rule)])  # fmt: skip
                explanation = scored.get(explanation_key)
                usage = used.get((index, metric)) if used else None
                row.append(
                    {"metric": metric, "score": score, "label": label, "explanation": explanation, "judge_usage": usage}
                )
            results.append(row)
        return results, spent.counted(self, judge)

    def batch_judge(self) -> tuple[Judge | None, BatchSpend]:
        """A judge for one batch (``None``: the evaluator has none), counting what the batch spends."""
        spent = BatchSpend()
        if self.judge is None:
            return None, spent
        return dataclasses.replace(self.judge, usage=JudgeUsage(), on_call=spent.calls.append), spent

    def _keys(self, metric: str) -> tuple[str, str, str, Mapping[str, Any], bool]:
        """A metric's name, the keys of its score and explanation in a scored row, its pass rule, and whether the
        rule has no threshold."""
        rule = self.rules[metric]
        return metric, f"{metric}/score", f"{metric}/explanation", rule, rule.get("threshold") is None

    def add_usage(self, spent: JudgeUsage) -> None:
        """Count what a batch's judge did in :attr:`usage`."""
        with self._lock:
            for key, value in spent.to_dict().items():
                setattr(self.usage, key, getattr(self.usage, key) + value)

    def judge_usage(self) -> JudgeUsage:
        """A copy of :attr:`usage`, read under its lock."""
        with self._lock:
            return dataclasses.replace(self.usage)


def spending(spent: Mapping[str, BatchSpend]) -> dict[str, Any]:
    """What the job queue counts and keeps of each evaluator's batch spend: ``tokens`` (against its budget),
    ``spend`` (its judge spend rows) and ``released`` (the calls whose cost was held as they were sent)."""
    return {
        "tokens": {name: s.tokens for name, s in spent.items()},
        "spend": {name: rows for name, s in spent.items() if (rows := s.rows())},
        "released": [call for name, s in spent.items() for call in s.released(name)],
    }


def _check_priced(spec: EvaluatorSpec, judge: Judge | None, store: Any) -> None:
    """A budget in cost needs a judge, and a price for its model in the store's price table."""
    where = f"online: evaluator {spec.name!r}: budget in cost"
    if judge is None:
        raise ConfigError(f"{where}: none of its metrics asks a judge, so there is no cost to count")
    priced = known_prices(store) if store is not None else {}
    if judge.settings.model not in priced:
        raise ConfigError(
            f"{where}: the judge model {judge.settings.model!r} has no price; set one (the UI's Prices page) or "
            "budget its tokens instead (tokens_per_hour, tokens_per_day)"
        )


def _check_room(spec: EvaluatorSpec, limits: UsageLimits, settings: JudgeSettings, store: Any) -> None:
    """A budget must have room for one call at its most: its reply's ``max_output_tokens`` (its prompt comes on
    top), or it would skip every target."""
    most = settings.max_output_tokens or 0
    price = known_prices(store).get(settings.model) if store is not None and limits.costed else None
    rooms: list[tuple[str, float]] = [
        (f"{name} of {limit}", limit)
        for name, limit in (("tokens_per_hour", limits.tokens_per_hour), ("tokens_per_day", limits.tokens_per_day))
        if limit
    ]
    if price is not None:
        rooms += [(f"{name} of {limit:g}", limit * 1e6 / price.output_per_million) for name, limit in
                  (("cost_per_hour", limits.cost_per_hour), ("cost_per_day", limits.cost_per_day))
                  if limit and price.output_per_million > 0]  # fmt: skip
    for what, room in rooms:
        if most >= room:
            raise ConfigError(
                f"online: evaluator {spec.name!r}: its budget ({what}) has no room for one judge call at its most "
                f"({most} output tokens, max_output_tokens, besides the prompt): each call is held against the "
                "budget at its most before it is sent; lower the [judge] table's max_output_tokens or raise the budget"
            )
