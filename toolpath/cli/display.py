"""Rich tables the CLI prints: metric summaries, worst cases, sessions.

They are printed through the commands' console (:func:`toolpath.cli.output.make_console`), which reads no markup
or emoji codes in them: every stored or given value (ids, prompts, tool calls, errors, metric names) is put in as
it is, and our own styling comes as :func:`~toolpath.cli.output.styled` text."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from toolpath.cli.output import styled
from toolpath.tracer import semconv as sc

if TYPE_CHECKING:  # the model and the metrics load with the tables that show them: `sessions list` needs none
    from toolpath.metrics.diff import Change
    from toolpath.model import Session, ToolCall


def summary_table(
    summary: Mapping[str, Any],
    names: Sequence[str],
    title: str = "Metrics",
    rows: Sequence[Mapping[str, Any]] | None = None,
) -> Table:
    """Mean and std per metric; with ``rows``, also how many rows each metric scored (``scored 2/3``)."""
    table = Table(title=title, title_justify="left")
    table.add_column("metric", no_wrap=True, min_width=max((len(n) for n in names), default=6))
    table.add_column("mean", justify="right")
    table.add_column("std", justify="right")
    if rows is not None:
        table.add_column("scored", justify="right", no_wrap=True)
    for name in names:
        cells: list[str | Text] = [name, _num(summary.get(f"{name}/mean")), _num(summary.get(f"{name}/std"))]
        if rows is not None:
            scored = sum(row.get(f"{name}/score") is not None for row in rows)
            shown = f"{scored}/{len(rows)}"
            cells.append(shown if scored == len(rows) else styled((shown, "yellow")))
        table.add_row(*cells)
    return table


def summary_line(
    summary: Mapping[str, Any], names: Sequence[str], rows: Sequence[Mapping[str, Any]], title: str
) -> str:
    """The summary table in one line (``--quiet``): each metric's mean and how many rows it scored."""
    parts = []
    for name in names:
        scored = sum(row.get(f"{name}/score") is not None for row in rows)
        parts.append(f"{name} {_num(summary.get(f'{name}/mean'))} ({scored}/{len(rows)})")
    return f"{title}: {', '.join(parts)}"


def not_scored(rows: Sequence[Mapping[str, Any]], names: Sequence[str], reasons: int = 3) -> list[str]:
    """One line per metric that left rows unscored: how many, and the commonest reasons with their counts."""
    lines = []
    for name in names:
        why = Counter(
            str(row.get(f"{name}/explanation") or "no reason given") for row in rows if row.get(f"{name}/score") is None
        )
        if not why:
            continue
        shown = "; ".join(f"{reason} ({count})" for reason, count in why.most_common(reasons))
        more = len(why) - reasons
        lines.append(
            f"{name}: {sum(why.values())} of {len(rows)} row(s) not scored: {shown}"
            + (f"; and {more} other reason(s)" if more > 0 else "")
        )
    return lines


def print_summary(
    console: Console, summary: Mapping[str, Any], names: Sequence[str], rows: Sequence[Mapping[str, Any]], title: str
) -> None:
    """The summary table, then why rows went unscored."""
    console.print(summary_table(summary, names, title, rows))
    for line in not_scored(rows, names):
        console.print(styled((line, "yellow")), highlight=False)


def worst_cases_table(rows: Sequence[Mapping[str, Any]], metric_names: Sequence[str], limit: int) -> Table:
    """The rows with the lowest mean score over ``metric_names``, with expected vs predicted tool names."""

    def mean_score(row: Mapping[str, Any]) -> float:
        scores = [row.get(f"{n}/score") for n in metric_names]
        known = [s for s in scores if s is not None]
        return sum(known) / len(known) if known else -1.0

    ranked = sorted(rows, key=mean_score)[:limit]
    table = Table(title=f"Worst {len(ranked)} cases", title_justify="left", show_lines=True)
    id_column(table, "case", [str(row.get("case_id", "")) for row in ranked])
    table.add_column("prompt", max_width=34)
    table.add_column("expected tools", max_width=30)
    table.add_column("predicted tools", max_width=30)
    table.add_column("score", justify="right")
    table.add_column("why", max_width=48)
    for row in ranked:
        table.add_row(
            str(row.get("case_id", "")),
            str(row.get("prompt", "")),
            _names(row.get("reference_trajectory")),
            _names(row.get("predicted_trajectory")),
            _num(mean_score(row)),
            why(row, metric_names),
        )
    return table


def id_column(table: Table, header: str, values: Sequence[str]) -> None:
    """A column of ids users copy: never cut or wrapped while the other columns can give way (folded onto
    more lines only when the terminal is narrower than the id itself)."""
    widest = max((len(v) for v in values), default=0)
    table.add_column(header, no_wrap=True, min_width=max(widest, len(header)), overflow="fold")


def why(row: Mapping[str, Any], metric_names: Sequence[str]) -> str:
    """Why a row scored low, short: the agent's error, else where the trajectories differ (the differing part
    of each value), else the first zero score's explanation."""
    if row.get("error"):
        return str(row["error"])
    reference, predicted = _parsed(row.get("reference_trajectory")), _parsed(row.get("predicted_trajectory"))
    if reference is not None and predicted is not None:
        from toolpath.metrics.diff import trajectory_diff

        notes = [_change(change, reference, predicted) for change in trajectory_diff(reference, predicted)]
        if notes:
            return "; ".join(notes)
    return str(next((row.get(f"{n}/explanation") for n in metric_names if row.get(f"{n}/score") == 0.0), "") or "")


def _change(change: Change, reference: Sequence[ToolCall], predicted: Sequence[ToolCall]) -> str:
    if change.kind != "args_changed" or change.reference_index is None or change.predicted_index is None:
        return change.describe()
    expected = reference[change.reference_index].args or {}
    got = predicted[change.predicted_index].args or {}
    parts = [f"{key} {contrast(expected[key], got[key])}" for key in change.args.get("changed", [])]
    parts += [f"+{key}" for key in change.args.get("added", [])] + [f"-{key}" for key in change.args.get("removed", [])]
    return f"{change.tool}: {', '.join(parts)}"


def contrast(expected: Any, got: Any, context: int = 8) -> str:
    """``expected → got``, long strings cut to where they differ (``"…hallway-2" → "…hallway-1"``), so that two
    values sharing a long prefix never show as two identical truncated texts."""
    if not (isinstance(expected, str) and isinstance(got, str)):
        return f"{_json(expected)} → {_json(got)}"
    same = 0
    while same < min(len(expected), len(got)) and expected[same] == got[same]:
        same += 1
    cut = max(0, same - context)
    if cut < 4:  # nothing worth hiding
        return f"{_json(expected)} → {_json(got)}"
    return f'"…{expected[cut:]}" → "…{got[cut:]}"'


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def partial_credit_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """Cases exact match scores 0 although the agent came close: what F1 and argument similarity add."""
    table = Table(title="Partial credit: exact match says 0, but…", title_justify="left", show_lines=True)
    id_column(table, "case", [str(row.get("case_id", "")) for row in rows])
    for column in ("prompt", "exact", "F1", "arg similarity", "what differs"):
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
            why(row, ["tool_argument_similarity", "trajectory_f1"]),
        )
    return table


def sessions_table(sessions: Sequence[Mapping[str, Any]]) -> Table:
    """The sessions list; each cell as stored (an id such as ``chat-[b]x[/b]-:fire:`` is shown as it is, never
    read as rich's markup or emoji codes: it is what a user copies into ``sessions show``)."""
    columns = ("session_id", "agent_name", "invocations", "failures", "last_started_at")
    table = Table(title="Sessions", title_justify="left")
    id_column(table, "session_id", [str(s["session_id"]) for s in sessions])
    for column in columns[1:]:
        table.add_column(column, justify="right" if column in ("invocations", "failures") else "left")
    for s in sessions:
        table.add_row(*(Text(str(s[c]) if s.get(c) is not None else "") for c in columns))
    return table


def session_table(session: Session, scores: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> Table:
    """Each turn of ``session``; with ``scores`` (invocation id -> its online scores), a column of them."""
    table = Table(title=f"Session {session.session_id}", title_justify="left", show_lines=True)
    scored = bool(scores) and any(scores.values())  # type: ignore[union-attr]
    for column in ("#", "prompt", "tool calls", "response", "latency s", "failure", *(["online"] if scored else [])):
        table.add_column(column, overflow="fold")  # a word wider than its column goes on the next line, never cut
    notes: list[Text] = []
    for i, inv in enumerate(session.invocations, start=1):
        calls = "\n".join(
            f"{_by(c.agent_name, inv.agent_name)}{c.name}({args_text(c.args)}){' ✗ ' + c.error if c.error else ''}"
            for c in inv.tool_calls
        )
        note = content_note(
            bool(inv.attributes.get(sc.TOOLPATH_CONTENT_MISSING)), inv.attributes.get(sc.TOOLPATH_ARGUMENTS_UNKNOWN)
        )
        dropped = inv.attributes.get(sc.TOOLPATH_TOOL_CALLS_DROPPED)
        if isinstance(dropped, int) and dropped > 0:  # a cap cut it: said where the calls are shown
            calls += f"\n… and {dropped} more left out by the collector's --max-tool-calls"
            note = (note + "; " if note else "") + (
                f"the collector kept {len(inv.tool_calls)} of this turn's {len(inv.tool_calls) + dropped} tool calls"
            )
        if note:
            calls += " ⚠" if calls else "⚠"
            notes.append(styled((f"⚠ #{i}: {note}", "yellow")))
        simulated = "simulated user: " if inv.attributes.get(sc.TOOLPATH_SIMULATED_USER) else ""
        not_text = no_response(inv.attributes.get(sc.TOOLPATH_RESPONSE_NOT_TEXT)) if inv.response is None else None
        answer = inv.response or inv.error or not_text or ""
        table.add_row(
            str(i),
            simulated + (inv.prompt or ""),
            calls,
            _by(inv.answered_by, inv.agent_name) + answer,
            _num(inv.latency_seconds),
            str(inv.failure),
            *([_online(scores[inv.invocation_id] if scores else [])] if scored else []),
        )
    if notes:
        table.caption, table.caption_justify = Text("\n").join(notes), "left"
    return table


def _online(scores: Sequence[Mapping[str, Any]]) -> str:
    """A turn's online scores, one per line: metric, score, label, and the explanation of a failed one."""
    lines = []
    for score in scores:
        label = f" {score['label']}" if score.get("label") else ""
        failed = score.get("label") in ("fail", "error")
        why = f": {score['explanation']}" if failed and score.get("explanation") else ""
        lines.append(f"{score['metric']} {_num(score.get('score'))}{label}{why}")
    return "\n".join(lines)


def _by(agent: str | None, root: str | None) -> str:
    """``"agent: "`` when another agent than the turn's own (a sub-agent) made the call or gave the answer."""
    return f"[{agent}] " if agent and agent != root else ""


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


def no_response(note: Any) -> str | None:
    """What is shown for a response that is null because the agent's answer had no text (``response_note``, or
    the invocation's ``toolpath.agent.response_not_text``); ``None`` when there is no such reason."""
    return f"(no response: {note})" if isinstance(note, str) and note else None


def response_notes(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """``runs show``: a line per result row (or eval-set turn) whose response is null, with the reason."""
    lines = []
    for position, result in enumerate(results, start=1):
        row = result.get("row")
        row = row if isinstance(row, Mapping) else {}
        runs = row["turns"] if isinstance(row.get("turns"), list) else [row]
        turns = [t for run in runs for t in (run if isinstance(run, list) else [run]) if isinstance(t, Mapping)]
        which = f"case {result['case_id']}" if result.get("case_id") else f"row {position}"
        for number, turn in enumerate(turns, start=1):
            shown = no_response(turn.get("response_note")) if turn.get("response") is None else None
            if shown:
                lines.append(f"{which}" + (f", turn {number}" if len(turns) > 1 else "") + f": {shown}")
    return lines


def _names(value: Any) -> str:
    calls = _parsed(value)
    return "?" if calls is None else ", ".join(c.name for c in calls) or "—"


def _parsed(value: Any) -> Sequence[ToolCall] | None:
    from toolpath.trajectory import parse_trajectory

    try:
        return parse_trajectory(value)
    except ValueError:
        return None


def args_text(args: Mapping[str, Any] | None) -> str:
    """A call's arguments as ``k='v', …``."""
    return ", ".join(f"{k}={v!r}" for k, v in (args or {}).items())


def _num(value: Any) -> str:
    from toolpath.evaluation.verdicts import format_score  # with its verdicts' statuses (the model): not for a listing

    return format_score(value)


def runs_table(runs: Sequence[Mapping[str, Any]]) -> Table:
    table = Table(title="Evaluation runs", title_justify="left")
    id_column(table, "run_id", [str(run["run_id"]) for run in runs])
    for column in ("kind", "dataset", "agent", "rows", "failed", "started_at", "means"):
        table.add_column(column, max_width=40 if column in ("dataset", "means") else None, overflow="fold")
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
        cells: list[str | Text] = []
        for metric in metrics:
            result = row["scores"].get(metric)
            if result is None:
                cells.append("")
                continue
            colour = {"pass": "green", "fail": "red", "scored": "default"}.get(result["label"] or "", "yellow")
            shown = "null" if result["score"] is None else f"{result['score']:.2f}"
            cells.append(styled((shown, colour)))
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
            id_column(table, "session", [session.original_session_id for session in changed])
            for column in ("turn", "prompt", "what changed"):
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
        turns = [turn for session in result.sessions for turn in session.turns]
        print_summary(console, result.summary_metrics, result.metric_names, turns, "Replayed against recorded")
    for name, mean in result.failed_thresholds.items():
        shown = "null" if mean is None else f"{mean:.3f}"
        rule = result.rules.get(name) or {}
        side = "within" if rule.get("best") is not None else "at most" if rule.get("lower_is_better") else "at least"
        console.print(styled(("FAILED", "red"), f" {name}: mean {shown}, needed {side} {result.thresholds[name]}"))
    console.print(
        f"replay {result.run_id}: {len(result.sessions)} session(s), {len(changed)} changed "
        f"({sum(s.trajectory_changed for s in result.sessions)} in their trajectory)"
    )


def _describe(change: Mapping[str, Any]) -> str:
    from toolpath.metrics.diff import Change

    return Change(**change).describe()
