"""Rich tables the CLI prints: metric summaries, worst cases, sessions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolpath.model import Session, parse_trajectory
from toolpath.tracer import semconv as sc


def summary_table(summary: Mapping[str, Any], names: Sequence[str], title: str = "Metrics") -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("mean", justify="right")
    table.add_column("std", justify="right")
    for name in names:
        table.add_row(name, _num(summary.get(f"{name}/mean")), _num(summary.get(f"{name}/std")))
    return table


def worst_cases_table(rows: Sequence[Mapping[str, Any]], metric_names: Sequence[str], limit: int) -> Table:
    """The rows with the lowest mean score over ``metric_names``, with expected vs predicted tool names."""

    def mean_score(row: Mapping[str, Any]) -> float:
        scores = [row.get(f"{n}/score") for n in metric_names]
        known = [s for s in scores if s is not None]
        return sum(known) / len(known) if known else -1.0

    ranked = sorted(rows, key=mean_score)[:limit]
    table = Table(title=f"Worst {len(ranked)} cases", title_justify="left", show_lines=True)
    table.add_column("case")
    table.add_column("prompt", max_width=34)
    table.add_column("expected tools", max_width=30)
    table.add_column("predicted tools", max_width=30)
    table.add_column("score", justify="right")
    table.add_column("why", max_width=44)
    for row in ranked:
        why = row.get("error") or next(
            (row.get(f"{n}/explanation") for n in metric_names if row.get(f"{n}/score") == 0.0), ""
        )
        table.add_row(
            str(row.get("case_id", "")),
            str(row.get("prompt", "")),
            _names(row.get("reference_trajectory")),
            _names(row.get("predicted_trajectory")),
            _num(mean_score(row)),
            str(why or ""),
        )
    return table


def partial_credit_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """Cases exact match scores 0 although the agent came close: what F1 and argument similarity add."""
    table = Table(title="Partial credit: exact match says 0, but…", title_justify="left", show_lines=True)
    for column in ("case", "prompt", "exact", "F1", "arg similarity", "what differs"):
        table.add_column(column, max_width=40 if column in ("prompt", "what differs") else None)
    for row in rows:
        if row.get("trajectory_exact_match/score") != 0.0:
            continue
        f1, similarity = row.get("trajectory_f1/score"), row.get("tool_argument_similarity/score")
        if not (f1 or similarity):
            continue
        table.add_row(
            str(row.get("case_id", "")),
            str(row.get("prompt", "")),
            "0",
            _num(f1),
            _num(similarity),
            str(row.get("tool_argument_similarity/explanation") or row.get("trajectory_f1/explanation") or ""),
        )
    return table


def sessions_table(sessions: Sequence[Mapping[str, Any]]) -> Table:
    columns = ("session_id", "agent_name", "invocations", "failures", "last_started_at")
    table = Table(title="Sessions", title_justify="left")
    for column in columns:
        table.add_column(column, justify="right" if column in ("invocations", "failures") else "left")
    for s in sessions:
        table.add_row(*(str(s[c]) if s.get(c) is not None else "" for c in columns))
    return table


def session_table(session: Session) -> Table:
    table = Table(title=f"Session {session.session_id}", title_justify="left", show_lines=True)
    for column in ("#", "prompt", "tool calls", "response", "latency s", "failure"):
        table.add_column(column)
    notes = []
    for i, inv in enumerate(session.invocations, start=1):
        calls = "\n".join(f"{c.name}({_args(c.args)}){' ✗ ' + c.error if c.error else ''}" for c in inv.tool_calls)
        note = content_note(
            bool(inv.attributes.get(sc.TOOLPATH_CONTENT_MISSING)), inv.attributes.get(sc.TOOLPATH_ARGUMENTS_UNKNOWN)
        )
        if note:
            calls += " ⚠" if calls else "⚠"
            notes.append(f"[yellow]⚠ #{i}: {escape(note)}[/]")
        simulated = "simulated user: " if inv.attributes.get(sc.TOOLPATH_SIMULATED_USER) else ""
        table.add_row(
            str(i),
            simulated + (inv.prompt or ""),
            calls,
            inv.response or inv.error or "",
            _num(inv.latency_seconds),
            str(inv.failure),
        )
    if notes:
        table.caption, table.caption_justify = "\n".join(notes), "left"
    return table


def content_note(missing: bool, unknown: Any) -> str | None:
    """What to tell about a run whose tool spans recorded no arguments (``toolpath.content_missing``)."""
    if not missing:
        return None
    if unknown:
        return (
            f"{unknown} tool call(s) recorded without their arguments (stored as {{}}): the instrumentation captured "
            f"no content (for ADK 2.x set {sc.ADK_CONTENT_ENV}=SPAN_ONLY, or run the agent with toolpath)"
        )
    return "the tool spans recorded no arguments; the arguments shown come from the agent's own record of the run"


def _names(value: Any) -> str:
    try:
        calls = parse_trajectory(value)
    except ValueError:
        return "?"
    return ", ".join(c.name for c in calls) or "—"


def _args(args: Mapping[str, Any] | None) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in (args or {}).items())


def _num(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}" if value == 0 or abs(value) >= 0.01 else f"{value:.2e}"
    return str(value)


def eval_set_report(console: Console, result: Any, *, quiet: bool = False) -> None:
    """ADK-like summary: cases passed and failed, then each failing criterion with expected vs actual."""
    counts = {status: sum(c.status == status for c in result.cases) for status in ("PASSED", "FAILED", "NOT_EVALUATED")}
    if not quiet:
        table = Table(title="Eval cases", title_justify="left", caption=_EFFICIENCY_CAPTION, caption_justify="left")
        for column in ("eval set", "case", "status", *result.metric_names):
            table.add_column(column)
        for column in _EFFICIENCY_COLUMNS:
            table.add_column(column, justify="right")
        for case in result.cases:
            cells = [
                f"{case.metrics[n].score:.3f} / {case.metrics[n].threshold:g}{_spread(case.metrics[n].run_scores)}"
                if n in case.metrics and case.metrics[n].score is not None
                else "—"
                for n in result.metric_names
            ]
            style = {"PASSED": "green", "FAILED": "red"}.get(case.status, "yellow")
            table.add_row(case.eval_set_id, case.eval_id, f"[{style}]{case.status}[/]", *cells, *_efficiency(case))
        console.print(table)
        for case in result.cases:
            if getattr(case, "simulated", False):
                _print_conversation(console, case)
            if case.status == "FAILED":
                _print_failure(console, case)
    line = f"{len(result.cases)} case(s): {counts['PASSED']} passed, {counts['FAILED']} failed"
    if counts["NOT_EVALUATED"]:
        line += f", {counts['NOT_EVALUATED']} not evaluated"
    console.print(f"[bold]{line}[/] (run {result.run_id})")


_EFFICIENCY_COLUMNS = ("tool calls", "model calls", "tokens", "seconds")
_EFFICIENCY_CAPTION = (
    "tool calls, model calls, tokens, seconds: ADK's efficiency figures, per turn (mean over the case's turns); "
    "n/a: not recorded"
)


def _efficiency(case: Any) -> list[str]:
    """ADK's efficiency figures of a case: tool calls, model calls, tokens and seconds per turn (with the
    model / tool / framework split of the seconds when known)."""
    figures = getattr(case, "efficiency", None) or {}

    def num(value: Any, digits: int = 1) -> str:
        return "n/a" if value is None else f"{value:.{digits}f}".rstrip("0").rstrip(".")

    seconds = num(figures.get("invocation_duration_v1"), 3)
    split = figures.get("duration_details") or {}
    if split.get("model_seconds") is not None and split.get("tool_seconds") is not None:
        seconds += (
            f" (model {num(split['model_seconds'], 3)}, tool {num(split['tool_seconds'], 3)},"
            f" framework {num(split.get('framework_seconds'), 3)})"
        )
    return [
        num(figures.get("tool_call_count_v1")),
        num(figures.get("inference_call_count_v1")),
        num(figures.get("token_usage_v1")),
        seconds,
    ]


def _spread(run_scores: Sequence[float | None]) -> str:
    """The per-run spread of a criterion's score over several runs: `` (runs 0.500–1.000)``."""
    known = [s for s in run_scores if s is not None]
    return f" (runs {min(known):.3f}–{max(known):.3f})" if len(run_scores) > 1 and known else ""


def _print_conversation(console: Console, case: Any) -> None:
    """Who said what in a simulated conversation: the simulated user's turns and the agent's answers, per run."""
    for run, turns in enumerate(case.turns, start=1):
        which = f" (run {run})" if len(case.turns) > 1 else ""
        console.print(f"{case.eval_set_id} / {case.eval_id}{which}: simulated conversation", markup=False)
        for n, turn in enumerate(turns, start=1):
            console.print(f"  {n}. simulated user: {turn.get('prompt')}", markup=False, highlight=False)
            answer = turn.get("response") if not turn.get("error") else f"(failed: {turn['error']})"
            answer = str(answer).replace("\n", "\n            ")
            console.print(f"     agent: {answer}", markup=False, highlight=False)


def _print_failure(console: Console, case: Any) -> None:
    console.print(f"[red]FAILED[/] {case.eval_set_id} / {case.eval_id}")
    if getattr(case, "error", None):
        console.print(f"  error: {case.error}", markup=False)
    for name, metric in case.metrics.items():
        if metric.status != "FAILED":
            continue
        console.print(f"  {name}: {metric.score:.3f} < threshold {metric.threshold:g}", markup=False)
        if getattr(case, "simulated", False) and metric.explanation:
            console.print(f"    why: {metric.explanation}", markup=False)
        for index, score in enumerate(metric.per_invocation):
            if score is None or score >= metric.threshold or not case.turns:
                continue
            turn = case.turns[0][index]
            console.print(f"    turn {index + 1}: {turn['prompt']!r}", markup=False)
            if turn.get("simulated_user"):  # nothing was expected: the conversation is printed above
                continue
            if "trajectory" in name or "tool" in name:
                console.print(f"      expected tools: {_calls(turn['reference_trajectory'])}", markup=False)
                console.print(f"      actual tools:   {_calls(turn['predicted_trajectory'])}", markup=False)
            else:
                console.print(f"      expected: {turn['reference']!r}", markup=False)
                console.print(f"      actual:   {turn['response']!r}", markup=False)
            if turn.get("error"):
                console.print(f"      agent error: {turn['error']}", markup=False)


def _calls(items: Sequence[Mapping[str, Any]] | None) -> str:
    return ", ".join(f"{c['tool_name']}({_args(c.get('tool_input'))})" for c in items or ()) or "—"


def runs_table(runs: Sequence[Mapping[str, Any]]) -> Table:
    table = Table(title="Evaluation runs", title_justify="left")
    for column in ("run_id", "kind", "dataset", "agent", "rows", "failed", "started_at", "means"):
        table.add_column(column, max_width=40 if column in ("dataset", "means") else None)
    for run in runs:
        means = ", ".join(
            f"{k.removesuffix('/mean')}={_num(v)}" for k, v in run["summary"].items() if k.endswith("/mean")
        )
        table.add_row(
            run["run_id"],
            run["kind"],
            run["dataset"],
            run["agent"] or "",
            str(run["row_count"]),
            "" if run["failed_count"] is None else str(run["failed_count"]),
            run["started_at"] or "",
            means,
        )
    return table


def watch_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """``toolpath watch``: one line per scored invocation, newest last, a column per metric."""
    metrics = sorted({m for row in rows for m in row["scores"]})
    table = Table(title=f"Scored online ({len(rows)} shown)")
    for column in ("agent", "prompt", "latency s", "failed", *metrics):
        table.add_column(column, overflow="ellipsis", no_wrap=column == "prompt", max_width=40)
    for row in rows:
        cells = []
        for metric in metrics:
            result = row["scores"].get(metric)
            if result is None:
                cells.append("")
                continue
            colour = {"pass": "green", "fail": "red"}.get(result["label"] or "", "yellow")
            shown = "null" if result["score"] is None else f"{result['score']:.2f}"
            cells.append(f"[{colour}]{shown}[/]")
        latency = row["latency_seconds"]
        table.add_row(
            row["agent_name"] or "-",
            row["prompt"] or "",
            "-" if latency is None else f"{latency:.3f}",
            "yes" if row["failure"] else "",
            *cells,
        )
    return table


def replay_report(console: Console, result: Any, *, quiet: bool = False) -> None:
    """``toolpath replay``: the sessions that changed and how, the scores, and the thresholds."""
    changed = [s for s in result.sessions if s.changed]
    if not quiet:
        if changed:
            table = Table(title=f"{len(changed)} of {len(result.sessions)} session(s) changed")
            for column in ("session", "turn", "prompt", "what changed"):
                table.add_column(column, overflow="fold")
            for session in changed:
                for number, turn in enumerate(session.turns, start=1):
                    notes = [_describe(change) for change in turn["changes"]]
                    if turn["response_changed"]:
                        notes.append(f"response: {turn['reference']!r} → {turn['response']!r}")
                    if turn.get("error"):
                        notes.append(f"failed: {turn['error']}")
                    if notes:
                        table.add_row(session.original_session_id, str(number), turn["prompt"] or "", "\n".join(notes))
            console.print(table)
        console.print(summary_table(result.summary_metrics, result.metric_names, title="Replayed against recorded"))
    for name, mean in result.failed_thresholds.items():
        shown = "null" if mean is None else f"{mean:.3f}"
        console.print(f"[red]FAILED[/] {name}: mean {shown} < threshold {result.thresholds[name]}")
    console.print(
        f"replay {result.run_id}: {len(result.sessions)} session(s), {len(changed)} changed "
        f"({sum(s.trajectory_changed for s in result.sessions)} in their trajectory)"
    )


def _describe(change: Mapping[str, Any]) -> str:
    from toolpath.evaluators.metrics.diff import Change

    return Change(**change).describe()
