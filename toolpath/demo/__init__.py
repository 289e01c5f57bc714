"""``toolpath demo``: the smart-home agent over 24 bundled cases, through the whole pipeline:
tracing -> in-process collector -> store -> trajectory metrics -> tables.

The same planner then runs as a LangGraph ReAct agent and as an Agent Engine-style app (when langgraph is
installed), traced through LangChain's callbacks and the app adapter instead of ``@toolpath.tool``; the demo
shows that the three wrappings give the same trajectories and the same scores."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.table import Table

from toolpath import tracing
from toolpath.cli.display import partial_credit_table, summary_table, worst_cases_table
from toolpath.cli.output import styled
from toolpath.evaluation.runner import EvalResult, evaluate
from toolpath.store.store import Store

DEMO_METRICS = [
    "trajectory_exact_match",
    "trajectory_in_order_match",
    "trajectory_any_order_match",
    "trajectory_precision",
    "trajectory_recall",
    "trajectory_f1",
    "tool_argument_similarity",
    "tool_trajectory_avg_score",
]
BEHAVIOUR_METRICS = ["redundant_tool_calls", "tool_loop_detected", "tool_error_rate"]


def dataset_path() -> Path:
    return Path(str(resources.files("toolpath.demo") / "smart_home.jsonl"))


def run_demo(store_url: str | None, console: Console, worst: int = 6) -> EvalResult:
    """The demo, printed to ``console`` (the commands' console, which shows every string as it is)."""
    from toolpath.demo.smart_home import smart_home_agent  # tools register on import; keep it out of CLI start-up

    store = Store(store_url, writing="toolpath demo stores its runs in it")
    tracing.init(store=store, service_name="toolpath-demo")
    console.print(
        styled(
            "Running ",
            ("smart_home_assistant", "bold"),
            f" on {dataset_path().name} (traced into ",
            (store.url, "bold"),
            ")…",
        )
    )
    # concurrency=1: the demo's home is one shared object, like a real house
    result = evaluate(
        dataset_path(), DEMO_METRICS + BEHAVIOUR_METRICS, runnable=smart_home_agent, store=store, concurrency=1
    )
    tracing.flush()
    console.print(summary_table(result.summary_metrics, result.metric_names, title="Per-metric means"))
    console.print(worst_cases_table(result.metrics_table, DEMO_METRICS, worst))
    console.print(partial_credit_table(result.metrics_table))
    for row in result.metrics_table:
        if row.get("failure"):
            console.print(
                styled(("Run failed", "red"), f" on {row.get('case_id')} ({row.get('prompt')!r}): {row.get('error')}")
            )
    _other_wrappings(store, console, result)
    tracing.flush()
    counts = store.counts()
    console.print(
        f"The store now holds {counts['invocations']} invocations with {counts['tool_calls']} tool calls "
        f"in {counts['sessions']} sessions ({counts['spans']} raw spans)."
    )
    stats = tracing.stats()
    if stats.get("spans_dropped") or stats.get("invocations_lost"):
        console.print(styled((f"Tracing lost data: {stats}", "yellow")))
    console.print(styled("See them with: ", ("toolpath sessions list", "bold")))
    return result


WRAPPING_METRICS = ["trajectory_exact_match", "trajectory_precision", "trajectory_recall", "tool_argument_similarity"]
_SHORT = {"trajectory_exact_match": "exact", "trajectory_precision": "precision", "trajectory_recall": "recall"}


def _other_wrappings(store: Store, console: Console, plain: EvalResult) -> None:
    try:
        from toolpath.demo.langgraph_home import build_app, build_graph
    except ImportError as exc:
        skipped = f"Skipping the LangGraph and Agent Engine-style versions: {exc.name or exc} is not installed"
        console.print(styled((f"{skipped} (pip install 'toolpath[langgraph]').", "yellow")))
        return
    console.print("Running the same planner as a LangGraph ReAct agent and as an Agent Engine-style app…")
    results = {"@toolpath.agent": plain}
    for label, runnable in (("LangGraph ReAct", build_graph()), ("Agent Engine app", build_app())):
        results[label] = evaluate(dataset_path(), WRAPPING_METRICS, runnable=runnable, store=store, concurrency=1)
    console.print(wrappings_table(results))


def wrappings_table(results: dict[str, EvalResult]) -> Table:
    table = Table(title="One planner, three wrappings: same trajectories, same scores")
    table.add_column("agent")
    for name in WRAPPING_METRICS:
        table.add_column(_SHORT.get(name, "arg similarity"), justify="right")
    table.add_column("failed", justify="right")
    for label, result in results.items():
        means = result.summary_metrics
        failed = sum(1 for row in result.metrics_table if row.get("failure"))
        table.add_row(
            label, *(f"{means.get(f'{name}/mean', float('nan')):.3f}" for name in WRAPPING_METRICS), str(failed)
        )
    return table
