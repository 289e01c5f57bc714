"""``toolpath report``: one self-contained HTML file for an evaluation run or a replay (no network fetches).

Sections: the run; each metric's mean, spread and score distribution; every case with its status and scores;
side-by-side trajectories (reference left, predicted right; added, removed, moved and changed calls marked,
changed arguments highlighted); the latency distribution; and for replays, recorded vs replayed per session.
Charts are inline SVG; a few lines of inline script filter the case list. A score passes or fails by its
metric's threshold and direction (:func:`toolpath.evaluation.catalog.passes`, as saved with the run): lower is
better for latency, failures, counts and error rates; a metric without a pass mark only measures.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from toolpath.cli.display import content_note, no_response
from toolpath.evaluation.catalog import describe_rule
from toolpath.evaluation.verdicts import (
    ReplayStatus,
    RunKind,
    Verdict,
    row_status,
    run_metric_names,
    run_rules,
    verdicts,
)
from toolpath.metrics.diff import ChangeKind, argument_diff, trajectory_diff
from toolpath.model import ToolCall
from toolpath.trajectory import parse_trajectory

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
header{background:#0d1117;color:#f0f6fc;padding:18px 28px}header h1{margin:0 0 4px;font-size:20px}
header p{margin:0;color:#9da7b3}main{padding:20px 28px;max-width:1400px}
section{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:16px 18px;margin:0 0 18px}
h2{font-size:16px;margin:0 0 12px}table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #eaeef2;vertical-align:top}
th{font-weight:600;background:#f6f8fa}.num{text-align:right;font-variant-numeric:tabular-nums}
.pass,.same{color:#1a7f37}.fail,.changed{color:#cf222e}.na{color:#9a6700}.neutral{color:#1f2328}
td.num.pass{background:#f0fff4}td.num.fail{background:#fff5f5;font-weight:600}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;white-space:nowrap}
.badge.pass,.badge.same{background:#dafbe1}.badge.fail,.badge.changed{background:#ffebe9}.badge.na{background:#fff8c5}
.badge.neutral{background:#eaeef2}
.scroll{overflow-x:auto}#cases table{table-layout:auto}
#cases th.metric-name{font-size:11px;font-weight:600;max-width:7em;overflow-wrap:normal}
#cases tr.case td{border-bottom:none}#cases td.trajectories{padding:0 8px 10px 24px;border-bottom:1px solid #d0d7de}
#cases td.trajectories details{position:sticky;left:24px;max-width:min(1180px,calc(100vw - 120px))}
.traj{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:10px}
.traj h4{margin:0 0 4px;font-size:12px;color:#57606a}
.call{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;padding:3px 6px;border-radius:4px;margin:2px 0;
background:#f6f8fa;overflow-wrap:anywhere}.call.added{background:#dafbe1}.call.removed{background:#ffebe9}
.call.moved{background:#ddf4ff}.call.args{background:#fff8c5}.key-changed{background:#ffd8b5;font-weight:700}
details{margin:4px 0}summary{cursor:pointer}.toolbar{margin:0 0 10px}.hidden{display:none}
svg text{font:10px system-ui,sans-serif;fill:#57606a}.muted{color:#57606a}
"""

SCRIPT = """
document.getElementById('only-failing').addEventListener('change', function (event) {
  document.querySelectorAll('tr.case, tr.case-detail').forEach(function (row) {
    row.classList.toggle('hidden', event.target.checked && row.dataset.status === 'ok');
  });
});
"""


def render_report(run: Mapping[str, Any]) -> str:
    """The HTML page of a stored run (``Store.get_eval_run``)."""
    rows = [r["row"] for r in run.get("results", [])]
    results = run.get("results", [])
    metric_names = run_metric_names(run)
    rules = run_rules(run, metric_names)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>toolpath {html.escape(run['kind'])} {html.escape(run['run_id'])}</title><style>{CSS}</style>",
        "</head><body>",
        _header(run),
        "<main>",
        _summary(run, metric_names, results, rules),
        _cases(run, metric_names, results, rules),
    ]
    if run["kind"] == RunKind.REPLAY:
        parts.append(_replay(rows))
    parts.append(_latency(rows))
    parts.append(f"</main><script>{SCRIPT}</script></body></html>")
    return "\n".join(parts)


def _time(value: Any) -> datetime | None:
    """A run's time as the store gives it (ISO text) or as nanoseconds."""
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value / 1e9, UTC)
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    return None


def _header(run: Mapping[str, Any]) -> str:
    kind = {"dataset": "Evaluation", "evalset": "Eval set run", "replay": "Replay"}.get(run["kind"], run["kind"])
    started, finished = _time(run.get("started_at")), _time(run.get("finished_at"))
    seconds = (finished - started).total_seconds() if started and finished else 0.0
    when = started.strftime("%Y-%m-%d %H:%M:%S UTC") if started else "-"
    return (
        f"<header><h1>{html.escape(kind)} {html.escape(run['run_id'])}</h1>"
        f"<p>{html.escape(str(run.get('dataset') or ''))} · agent {html.escape(str(run.get('agent') or '-'))} · "
        f"{run.get('row_count', 0)} row(s) · {when} · {seconds:.1f} s</p></header>"
    )


def _summary(
    run: Mapping[str, Any], names: Sequence[str], results: Sequence[Mapping[str, Any]], rules: Mapping[str, Any]
) -> str:
    summary = run.get("summary") or {}
    lines = ["<section id='summary'><h2>Metrics</h2><table><tr><th>metric</th><th class='num'>mean</th>",
             "<th class='num'>std</th><th class='num'>scored</th><th>pass mark</th>",
             "<th>distribution</th></tr>"]  # fmt: skip
    for name in names:
        scores = [r["scores"].get(name) for r in results if isinstance(r.get("scores"), Mapping)]
        known = [float(s) for s in scores if isinstance(s, int | float)]
        lines.append(
            f"<tr class='metric' data-metric='{html.escape(name)}'><td>{html.escape(name)}</td>"
            f"<td class='num'>{_num(summary.get(f'{name}/mean'))}</td>"
            f"<td class='num'>{_num(summary.get(f'{name}/std'))}</td>"
            f"<td class='num'>{len(known)} / {len(scores)}</td><td>{html.escape(describe_rule(rules[name]))}</td>"
            f"<td>{histogram(known, 0.0, 1.0)}</td></tr>"
        )
    extra = {k: v for k, v in summary.items() if "/" not in k or k.endswith("_win_rate")}
    lines.append("</table>")
    if extra:
        cells = " · ".join(f"{html.escape(k)}: <b>{_num(v)}</b>" for k, v in extra.items())
        lines.append(f"<p class='muted'>{cells}</p>")
    lines.append("</section>")
    return "".join(lines)


def _cases(
    run: Mapping[str, Any], names: Sequence[str], results: Sequence[Mapping[str, Any]], rules: Mapping[str, Any]
) -> str:
    """A row of scores per case, and under it a full-width row with its trajectories side by side (however many
    metric columns there are, the trajectories keep the page's width)."""
    lines = [
        "<section id='cases'><h2>Cases</h2><div class='toolbar'><label><input type='checkbox' id='only-failing'> ",
        "show only failing, unscored or changed</label></div><div class='scroll'><table><tr><th>case</th>",
        "<th>status</th>",
        *(f"<th class='num metric-name' title='{html.escape(n)}'>{_breakable(n)}</th>" for n in names),
        "</tr>",
    ]
    for result in results:
        cells = verdicts(result, names, rules)
        css, label = row_status(run["kind"], result, cells)
        ok = "ok" if css in (Verdict.PASS, ReplayStatus.SAME, Verdict.NEUTRAL) else "bad"
        case_id = html.escape(str(result.get("case_id") or result.get("position")))
        scores = result.get("scores") or {}
        lines.append(
            f"<tr class='case' data-case='{case_id}' data-status='{ok}'><td>{case_id}</td>"
            f"<td><span class='badge {css}'>{html.escape(label)}</span></td>"
            + "".join(
                f"<td class='num {cells[n]}' data-metric='{html.escape(n)}'>{_num(scores.get(n))}</td>" for n in names
            )
            + f"</tr><tr class='case-detail' data-case='{case_id}' data-status='{ok}'>"
            f"<td class='trajectories' colspan='{len(names) + 2}'>{_case_error(result['row'])}"
            f"{_trajectories(result['row'])}</td></tr>"
        )
    lines.append("</table></div></section>")
    return "".join(lines)


def _case_error(row: Mapping[str, Any]) -> str:
    """Why a run of the case could not be completed (its agent raised): the case failed unscored."""
    error = row.get("error") if isinstance(row, Mapping) else None
    return f"<p class='fail case-error'>error: {html.escape(str(error))}</p>" if error else ""


def _breakable(name: str) -> str:
    """A metric name that may wrap after its underscores (long names would otherwise widen every column)."""
    return "_<wbr>".join(html.escape(part) for part in name.split("_"))


def _turns(row: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The turns of a row: eval-set rows hold several (per run), the others are one turn."""
    if isinstance(row.get("turns"), list):
        return [turn for run in row["turns"] for turn in (run if isinstance(run, list) else [run])]
    return [row]


def _trajectories(row: Mapping[str, Any]) -> str:
    blocks = []
    for turn in _turns(row):
        reference = _calls(turn.get("reference_trajectory"))
        predicted = _calls(turn.get("predicted_trajectory"))
        if reference is None and predicted is None:
            continue
        blocks.append(_side_by_side(turn.get("prompt"), reference or [], predicted or [], turn))
    return "".join(blocks) or "<span class='muted'>no trajectories</span>"


def _calls(value: Any) -> list[ToolCall] | None:
    if value is None:
        return None
    try:
        return list(parse_trajectory(value))
    except Exception:  # a bad cell is shown as missing, the metrics already said why
        return None


def _side_by_side(prompt: Any, reference: list[ToolCall], predicted: list[ToolCall], turn: Mapping[str, Any]) -> str:
    changes = trajectory_diff(reference, predicted)
    ref_marks: dict[int, str] = {}
    pred_marks: dict[int, str] = {}
    for change in changes:
        kind = change.kind.mark
        if change.reference_index is not None:
            ref_marks[change.reference_index] = kind
        if change.predicted_index is not None:
            pred_marks[change.predicted_index] = kind
    moved = (ChangeKind.ARGS_CHANGED, ChangeKind.REORDERED)
    pairs = {c.predicted_index: reference[c.reference_index] for c in changes if c.kind in moved
             and c.reference_index is not None and c.predicted_index is not None}  # fmt: skip
    left = "".join(_call(c, ref_marks.get(i, "")) for i, c in enumerate(reference)) or "<i class='muted'>none</i>"
    right = "".join(_call(c, pred_marks.get(i, ""), pairs.get(i)) for i, c in enumerate(predicted))
    right = right or "<i class='muted'>none</i>"
    title = html.escape(str(prompt or "turn"))
    response = ""
    not_text = no_response(turn.get("response_note")) if turn.get("response") is None else None
    said = html.escape(str(turn.get("response") or "")) or (
        f"<span class='na response-note'>{html.escape(not_text)}</span>" if not_text else ""
    )
    if turn.get("simulated_user"):  # who said what: a simulated user wrote the prompt
        title = f"<span class='badge'>simulated user</span> {title}"
        response = f"<div class='traj'><div class='muted'>agent: {said}</div></div>"
    elif turn.get("response") is not None or turn.get("reference") is not None or not_text:
        response = (
            f"<div class='traj'><div class='muted'>reference: {html.escape(str(turn.get('reference') or ''))}</div>"
            f"<div class='muted'>response: {said}</div></div>"
        )
    note = content_note(bool(turn.get("content_missing")), turn.get("arguments_unknown"))
    if note:
        response += f"<p class='na content-missing'>⚠ {html.escape(note)}</p>"
    state = ReplayStatus.CHANGED if changes else ReplayStatus.SAME
    return (
        f"<details class='turn' data-diff='{state}' {'open' if changes else ''}><summary>{title} "
        f"<span class='badge {state}'>{len(changes)} change(s)</span></summary><div class='traj'>"
        f"<div><h4>reference</h4>{left}</div><div><h4>predicted</h4>{right}</div></div>{response}</details>"
    )


def _call(call: ToolCall, mark: str, reference: ToolCall | None = None) -> str:
    changed = set()
    if reference is not None:
        diff = argument_diff(reference.args, call.args)
        changed = set(diff.get("changed", [])) | set(diff.get("added", []))
    args = call.args or {}
    shown = ", ".join(
        f"<span class='{'key-changed' if key in changed else ''}'>{html.escape(str(key))}="
        f"{html.escape(json.dumps(value, ensure_ascii=False, default=str))}</span>"
        for key, value in args.items()
    )
    error = f" <span class='fail'>error: {html.escape(call.error)}</span>" if call.error else ""
    return (
        f"<div class='call {mark}' data-tool='{html.escape(call.name)}'>{html.escape(call.name)}({shown}){error}</div>"
    )


def _replay(rows: Sequence[Mapping[str, Any]]) -> str:
    sessions: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        sessions.setdefault(str(row.get("original_session_id")), []).append(row)
    lines = [
        "<section id='replay'><h2>Recorded vs replayed</h2><table><tr><th>session</th><th>turns</th>",
        "<th>trajectory</th><th>response</th><th class='num'>latency recorded → replayed (s)</th></tr>",
    ]
    for session, turns in sessions.items():
        trajectory = any(t.get("changes") for t in turns)
        response = any(t.get("response_changed") for t in turns)
        before = sum(t.get("recorded_latency_in_seconds") or 0 for t in turns)
        after = sum(t.get("latency_in_seconds") or 0 for t in turns)
        lines.append(
            f"<tr class='replayed' data-session='{html.escape(session)}' "
            f"data-changed='{str(trajectory or response).lower()}'><td>{html.escape(session)}</td><td>{len(turns)}</td>"
            f"<td class='{'changed' if trajectory else 'same'}'>{'changed' if trajectory else 'same'}</td>"
            f"<td class='{'changed' if response else 'same'}'>{'changed' if response else 'same'}</td>"
            f"<td class='num'>{before:.3f} → {after:.3f}</td></tr>"
        )
    lines.append("</table></section>")
    return "".join(lines)


def _latency(rows: Sequence[Mapping[str, Any]]) -> str:
    values = [float(t["latency_in_seconds"]) for r in rows for t in _turns(r)
              if isinstance(t.get("latency_in_seconds"), int | float)]  # fmt: skip
    if not values:
        return ""
    values.sort()
    p50, p90 = values[len(values) // 2], values[min(len(values) - 1, math.ceil(0.9 * len(values)) - 1)]
    return (
        f"<section id='latency'><h2>Latency</h2><p class='muted'>{len(values)} call(s) · median {p50:.3f} s · "
        f"p90 {p90:.3f} s · max {values[-1]:.3f} s</p>{histogram(values, 0.0, values[-1] or 1.0, width=520)}</section>"
    )


def histogram(values: Sequence[float], low: float, high: float, *, bins: int = 10, width: int = 220) -> str:
    """An inline SVG bar chart of ``values`` in ``bins`` equal bins over [low, high]."""
    if not values:
        return "<span class='muted'>no scores</span>"
    low, high = min(low, min(values)), max(high, max(values))
    span = (high - low) or 1.0
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - low) / span * bins))] += 1
    height, top = 48, max(counts)
    bar = width / bins
    rects = "".join(
        f"<rect x='{i * bar + 1:.1f}' y='{height - 12 - c / top * (height - 16):.1f}' width='{bar - 2:.1f}' "
        f"height='{c / top * (height - 16):.1f}' fill='#0969da'><title>{c}</title></rect>"
        for i, c in enumerate(counts)
    )
    return (
        f"<svg class='hist' width='{width}' height='{height}' role='img' aria-label='distribution'>{rects}"
        f"<text x='0' y='{height - 1}'>{low:g}</text><text x='{width - 24}' y='{height - 1}'>{high:.3g}</text></svg>"
    )


def _num(value: Any) -> str:
    if value is None:
        return "<span class='na'>–</span>"
    if isinstance(value, float):  # small values (a latency of 0.4 ms) keep their digits
        return f"{value:.3f}" if value == 0 or abs(value) >= 0.01 else f"{value:.2e}"
    return html.escape(str(value))
