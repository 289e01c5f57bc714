"""Online evaluation's judge spend as Prometheus families, read from the store's ``judge_spend`` at each scrape.

The store keeps every process's spend per evaluator, hour, model and outcome and never takes any away, so its
totals only grow: they are counters (``_total``), the same on every collector of one store (dashboards take the
``max`` over instances, not the sum):

- ``toolpath_judge_spend_calls_total{evaluator,model,outcome}``: judge requests by how they ended (``ok``,
  ``error``, ``cached``, ``refused``);
- ``toolpath_judge_spend_tokens_total{evaluator,model,direction}``: the tokens the model reported (``input``,
  ``output``);
- ``toolpath_judge_spend_seconds_total{evaluator,model}``: the time of the requests sent (``ok`` and ``error``),
  so that seconds over those calls is their mean latency;
- ``toolpath_judge_spend_cost_total{evaluator}``: the tokens at the model price table's prices, only for an
  evaluator every model of which has a price. It is priced at scrape time: changing a model's price reprices
  its whole history (a lower price reads as a counter reset).

Evaluator names are label values bounded as the other families' are (past the limit, ``other``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, Metric

CACHED = "cached"
"""The outcome of replies answered from the store's cache (:data:`toolpath.store.online_usage.CACHED`)."""

if TYPE_CHECKING:  # its module loads SQLAlchemy
    from toolpath.store.judge_spend import EvaluatorSpend

__all__ = ["SENT", "spend_families"]

SENT = ("ok", "error")
"""The outcomes of requests sent to the model (the others made no call: answered from the cache, or refused)."""


def spend_families(spend: Mapping[str, EvaluatorSpend], label: Callable[[str], str]) -> Iterator[Metric]:
    """The judge spend families of ``spend`` (:func:`toolpath.store.judge_spend.by_evaluator`), each evaluator
    named by ``label`` (evaluators it folds into one value are added up)."""
    calls = CounterMetricFamily(
        "toolpath_judge_spend_calls",
        "Online evaluation's judge requests by evaluator, model and outcome (ok, error, cached, refused), "
        "every process's (read from the store)",
        labels=["evaluator", "model", "outcome"],
    )
    tokens = CounterMetricFamily(
        "toolpath_judge_spend_tokens",
        "Tokens online evaluation's judge spent, by evaluator, model and direction (input, output)",
        labels=["evaluator", "model", "direction"],
    )
    seconds = CounterMetricFamily(
        "toolpath_judge_spend_seconds",
        "Time the judge requests sent (outcome ok or error) took, by evaluator and model",
        labels=["evaluator", "model"],
    )
    cost = CounterMetricFamily(
        "toolpath_judge_spend_cost",
        "Cost of an online evaluator's judge tokens at the model price table's prices (only when each of its "
        "models has a price)",
        labels=["evaluator"],
    )
    counted: Counter[tuple[str, str, str]] = Counter()
    used: Counter[tuple[str, str, str]] = Counter()
    took: dict[tuple[str, str], float] = {}
    costs: dict[str, float | None] = {}
    for name, found in sorted(spend.items()):
        evaluator = label(name)
        for row in found.rows:
            counted[evaluator, row.model, row.outcome] += row.calls
            spent = row.outcome != CACHED  # a cached reply's tokens were not spent again
            used[evaluator, row.model, "input"] += row.input_tokens if spent else 0
            used[evaluator, row.model, "output"] += row.output_tokens if spent else 0
            took.setdefault((evaluator, row.model), 0.0)
            if row.outcome in SENT:
                took[evaluator, row.model] += row.seconds
        before = costs.get(evaluator, 0.0)
        costs[evaluator] = None if before is None or found.cost is None else before + found.cost
    for keys, n in sorted(counted.items()):
        calls.add_metric(list(keys), n)
    for keys, n in sorted(used.items()):
        tokens.add_metric(list(keys), n)
    for pair, value in sorted(took.items()):
        seconds.add_metric(list(pair), value)
    for evaluator, total in sorted(costs.items()):
        if total is not None:
            cost.add_metric([evaluator], total)
    yield from (calls, tokens, seconds, cost)
