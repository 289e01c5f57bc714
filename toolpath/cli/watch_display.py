"""``toolpath watch``'s screen: the turns scored online (:func:`~toolpath.cli.display.watch_table`), the sessions
scored whole, and each evaluator's judge spend. Stored values are put in as they are (no markup read in them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from toolpath.cli.display import watch_table
from toolpath.cli.output import styled

if TYPE_CHECKING:  # the store's reads load SQLAlchemy; the command imports them when it runs
    from toolpath.store.judge_spend import EvaluatorSpend

__all__ = ["sessions_scored_table", "spend_lines", "watch_screen"]

_COLOURS = {"pass": "green", "fail": "red", "scored": "default"}


def watch_screen(
    turns: Sequence[Mapping[str, Any]], sessions: Sequence[Mapping[str, Any]], spend: Mapping[str, EvaluatorSpend]
) -> Group:
    """What ``toolpath watch`` shows: the turns table (unless only sessions are scored); the sessions table and the
    judge spend when there are any."""
    parts: list[RenderableType] = [watch_table(turns)] if turns or not sessions else []
    if sessions:
        parts.append(sessions_scored_table(sessions))
    if spend:
        parts.append(Text("Judge spend (every hour kept), by evaluator", style="bold"))
        parts.extend(spend_lines(spend))
    return Group(*parts)


def sessions_scored_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """One line per session and evaluator, newest last: its current revision's scores, a column per metric."""
    metrics = sorted({m for row in rows for m in row["scores"]})
    table = Table(title=f"Sessions scored online ({len(rows)} shown)")
    for column in ("session", "evaluator", "revision", "turns", *metrics):
        table.add_column(column, overflow="ellipsis", no_wrap=column == "session", max_width=40)
    for row in rows:
        cells: list[str | Text] = []
        for metric in metrics:
            result = row["scores"].get(metric)
            if result is None:
                cells.append("")
                continue
            shown = "null" if result["score"] is None else f"{result['score']:.2f}"
            cells.append(styled((shown, _COLOURS.get(result["label"] or "", "yellow"))))
        evaluator = f"{row['evaluator']} v{row['evaluator_version']}"
        table.add_row(row["session_id"], evaluator, str(row["revision"]), str(row["turns"]), *cells)
    return table


def spend_lines(spend: Mapping[str, EvaluatorSpend]) -> list[Text]:
    """A line per evaluator: requests sent (those that failed among them), those answered from the cache or
    refused (not sent), tokens in and out, the cost or the models without a price, the mean time of a request
    sent."""
    lines = []
    for name, found in sorted(spend.items()):
        by_outcome: dict[str, int] = {}
        for row in found.rows:
            by_outcome[row.outcome] = by_outcome.get(row.outcome, 0) + row.calls
        calls = f"{found.calls} calls sent" + (f" ({by_outcome['error']} failed)" if by_outcome.get("error") else "")
        calls += "".join(f", {by_outcome[o]} {o}" for o in ("cached", "refused") if by_outcome.get(o))
        tokens_in, tokens_out = found.tokens
        cost = f"cost {found.cost:.4f}" if found.cost is not None else f"unpriced: {', '.join(sorted(found.unpriced))}"
        mean = "-" if found.mean_seconds is None else f"{found.mean_seconds:.2f} s"
        line = f"{calls}, tokens {tokens_in:,} in / {tokens_out:,} out, {cost}, mean latency {mean}"
        lines.append(styled((name, "bold"), ": ", line))
    return lines
