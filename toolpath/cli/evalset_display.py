"""The ADK-like report of an eval-set run the CLI prints: cases passed and failed, each failing criterion."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from toolpath.cli.display import args_text, id_column, no_response
from toolpath.cli.output import styled
from toolpath.model import EvalStatus


def eval_set_report(console: Console, result: Any, *, quiet: bool = False) -> None:
    """ADK-like summary: cases passed and failed, then each failing criterion with expected vs actual."""
    counts = {status: sum(c.status == status for c in result.cases) for status in EvalStatus}
    if not quiet:
        table = Table(title="Eval cases", title_justify="left", caption=_EFFICIENCY_CAPTION, caption_justify="left")
        id_column(table, "eval set", [case.eval_set_id for case in result.cases])
        id_column(table, "case", [case.eval_id for case in result.cases])
        for column in ("status", *result.metric_names):
            table.add_column(column)
        for column in _EFFICIENCY_COLUMNS:
            table.add_column(column, justify="right")
        crashed = any(getattr(case, "error", None) for case in result.cases)
        if crashed:  # a run whose agent raised: the case failed unscored, as ADK's failed inference
            table.add_column("error", overflow="fold", max_width=60)
        for case in result.cases:
            cells = [
                f"{case.metrics[n].score:.3f} / {case.metrics[n].threshold:g}{_spread(case.metrics[n].run_scores)}"
                if n in case.metrics and case.metrics[n].score is not None
                else "—"
                for n in result.metric_names
            ]
            style = {EvalStatus.PASSED: "green", EvalStatus.FAILED: "red"}.get(case.status, "yellow")
            error = [styled((case.error, "red")) if getattr(case, "error", None) else ""] if crashed else []
            table.add_row(
                case.eval_set_id, case.eval_id, styled((str(case.status), style)), *cells, *_efficiency(case), *error
            )
        console.print(table)
        for case in result.cases:
            if getattr(case, "simulated", False):
                _print_conversation(console, case)
            if case.status == EvalStatus.FAILED:
                _print_failure(console, case)
    passed, failed, unscored = (counts[s] for s in (EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED))
    line = f"{len(result.cases)} case(s): {passed} passed, {failed} failed"
    if unscored:
        line += f", {unscored} not evaluated"
    console.print(styled((line, "bold"), f" (run {result.run_id})"))


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
        console.print(f"{case.eval_set_id} / {case.eval_id}{which}: simulated conversation")
        for n, turn in enumerate(turns, start=1):
            console.print(f"  {n}. simulated user: {turn.get('prompt')}", highlight=False)
            answer = turn.get("response") if not turn.get("error") else f"(failed: {turn['error']})"
            if answer is None:  # an answer without text: why
                answer = no_response(turn.get("response_note")) or answer
            answer = str(answer).replace("\n", "\n            ")
            console.print(f"     agent: {answer}", highlight=False)


def _print_failure(console: Console, case: Any) -> None:
    console.print(styled(("FAILED", "red"), f" {case.eval_set_id} / {case.eval_id}"))
    if getattr(case, "error", None):
        console.print(f"  error: {case.error}")
        for run, turns in enumerate(case.turns if not getattr(case, "simulated", False) else []):
            if getattr(case, "run_error", lambda _: None)(run) and turns:  # the turn that raised, as it was made
                which = f"run {run + 1}, " if len(case.turns) > 1 else ""
                console.print(f"    {which}turn {len(turns)}: {turns[-1]['prompt']!r}")
                console.print(f"      actual tools: {_calls(turns[-1]['predicted_trajectory'])}")
    for name, metric in case.metrics.items():
        if metric.status != EvalStatus.FAILED:
            continue
        console.print(f"  {name}: {metric.score:.3f} < threshold {metric.threshold:g}")
        if getattr(case, "simulated", False) and metric.explanation:
            console.print(f"    why: {metric.explanation}")
        for index, score in enumerate(metric.per_invocation):
            if score is None or score >= metric.threshold or not case.turns:
                continue
            turn = case.turns[0][index]
            console.print(f"    turn {index + 1}: {turn['prompt']!r}")
            if turn.get("simulated_user"):  # nothing was expected: the conversation is printed above
                continue
            if "trajectory" in name or "tool" in name:
                console.print(f"      expected tools: {_calls(turn['reference_trajectory'])}")
                console.print(f"      actual tools:   {_calls(turn['predicted_trajectory'])}")
            else:
                console.print(f"      expected: {turn['reference']!r}")
                console.print(f"      actual:   {turn['response']!r}")
            if turn.get("error"):
                console.print(f"      agent error: {turn['error']}")


def _calls(items: Sequence[Mapping[str, Any]] | None) -> str:
    """``name(k=v, …)`` per call; a call without args at all (ADK tells it from one with ``{}``) as
    ``name (without args)``."""
    return (
        ", ".join(
            (
                f"{c['tool_name']} (without args)"
                if c.get("tool_input") is None
                else f"{c['tool_name']}({args_text(c['tool_input'])})"
            )
            + (f" ✗ {c['error']}" if c.get("error") else "")
            for c in items or ()
        )
        or "—"
    )
