"""``toolpath metrics``: every metric toolpath knows, with what it reads, its range and which way is better."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click
from rich.table import Table

from toolpath.cli.output import emit


@click.command(name="metrics")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def metrics_command(as_json: bool) -> None:
    """List every metric: the columns it reads, its range, which way is better, its default pass mark, and for a
    judge metric whose judge scores it (adk: ADK's own prompts and reading, from the installed google-adk;
    toolpath: toolpath's prompts).

    \b
        toolpath metrics
        toolpath metrics --json
    """
    from toolpath.evaluation.metric_table import BUILTIN_INFO  # the table, not the metrics: no judge is imported
    from toolpath.judges.adk_names import adk_installed, judge_of

    installed = adk_installed()
    rows = []
    for name in sorted(BUILTIN_INFO):
        info = BUILTIN_INFO[name].to_dict()
        if info["judge"]:  # whose judge: ADK's own (from the installed google-adk) or toolpath's prompts
            info["judged_by"] = judge_of(name, installed)
        rows.append({"metric": name, **info})
    emit(rows, as_json, metrics_table)


def metrics_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    table = Table(title=f"{len(rows)} metrics", title_justify="left")
    table.add_column("metric", no_wrap=True)
    table.add_column("reads")
    table.add_column("range", no_wrap=True)
    table.add_column("better", no_wrap=True)
    table.add_column("pass mark", justify="right", no_wrap=True)
    table.add_column("judge", no_wrap=True)
    for row in rows:
        table.add_row(
            row["metric"],
            ", ".join(row["inputs"]),
            row["range"],
            row["direction"],
            row["pass_mark"],
            row.get("judged_by", "") if row["judge"] else "",
        )
    return table
