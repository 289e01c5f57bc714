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
    """List every metric: the columns it reads, its range, which way is better, and its default pass mark.

    \b
        toolpath metrics
        toolpath metrics --json
    """
    from toolpath.evaluation.catalog import metric_info, metric_names

    emit([{"metric": name, **metric_info(name).to_dict()} for name in metric_names()], as_json, metrics_table)


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
            "yes" if row["judge"] else "",
        )
    return table
