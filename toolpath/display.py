"""Rich tables the CLI prints: metric summaries, worst cases, sessions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from toolpath.model import Session, parse_trajectory


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
    for i, inv in enumerate(session.invocations, start=1):
        calls = "\n".join(f"{c.name}({_args(c.args)}){' ✗ ' + c.error if c.error else ''}" for c in inv.tool_calls)
        table.add_row(
            str(i),
            inv.prompt or "",
            calls,
            inv.response or inv.error or "",
            _num(inv.latency_seconds),
            str(inv.failure),
        )
    return table


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
