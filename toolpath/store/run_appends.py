"""Evaluation runs that grow: result rows appended to a stored run batch by batch, inside the caller's transaction
(online scoring against an eval set adds each batch's cases in the transaction that closes its jobs).

The run's row is created by the first append (``INSERT … ON CONFLICT DO NOTHING``), then updated by each one,
which also holds the run's row lock (PostgreSQL) until the transaction ends: appenders of one run, in any process,
take positions one after another, never the same. The summary is updated from the changed rows alone — per metric
the count, mean and sum of squared deviations (Welford's update; ``<metric>/count`` and ``<metric>/m2`` beside
``<metric>/mean`` and ``<metric>/std``) — so an append costs the same however large the run has grown. A new row
may instead replace a row of its session (``merge``: a case of several turns is one row per session, grown as its
turns are scored), found through the session's invocations: as many as the session has turns."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, func, select, update

from toolpath.model import EvalStatus
from toolpath.store import schema as t
from toolpath.store.store import Store, _json_safe

__all__ = ["append_run_results"]


def append_run_results(
    store: Store,
    conn: Connection,
    run: Mapping[str, Any],
    results: Sequence[Mapping[str, Any]],
    merge: Callable[[Mapping[str, Any], Sequence[Mapping[str, Any]]], Mapping[str, Any] | None] | None = None,
) -> None:
    """Append ``results`` (``eval_results`` columns but ``run_id`` and ``position``) to the run ``run`` (the
    ``eval_runs`` columns it starts with: ``run_id``, ``kind``, ``dataset``, ``agent``, ``metrics``,
    ``started_at``), creating it on first use; its ``row_count``, ``failed_count``, ``finished_at`` and summary
    follow. ``merge(new, rows)``: given a new result and the run's rows of the same session (by their
    invocations), the row it replaces them with (its ``position`` one of theirs), or ``None`` to append it."""
    if not results:
        return
    runs, rows = t.eval_runs, t.eval_results
    run_id = run["run_id"]
    now = time.time_ns()
    first = {**run, "finished_at": now, "row_count": 0, "failed_count": 0, "summary": {"row_count": 0}}
    conn.execute(store.dialect_insert(runs).values(_json_safe(first)).on_conflict_do_nothing(index_elements=["run_id"]))
    # the update takes the run's row lock first: the rows, summary and positions read below are this transaction's
    conn.execute(update(runs).where(runs.c.run_id == run_id).values(finished_at=now))
    held = conn.execute(select(runs.c.row_count, runs.c.failed_count, runs.c.summary).where(runs.c.run_id == run_id))
    count, failed, summary = held.one()
    summary, failed = dict(summary or {}), failed or 0
    last = conn.execute(select(func.max(rows.c.position)).where(rows.c.run_id == run_id)).scalar()
    position = 0 if last is None else last + 1
    for result in results:
        merged = merge(result, _session_rows(conn, run_id, result["invocation_id"])) if merge else None
        if merged is None:
            conn.execute(rows.insert(), [_json_safe({**result, "run_id": run_id, "position": position})])
            position, count = position + 1, count + 1
        else:
            old = conn.execute(
                select(rows.c.status, rows.c.scores).where(
                    rows.c.run_id == run_id, rows.c.position == merged["position"]
                )
            ).one()
            summary = grown_summary(summary, [old.scores or {}], remove=True)
            failed -= old.status == EvalStatus.FAILED
            values = {k: v for k, v in merged.items() if k not in ("run_id", "position")}
            conn.execute(
                update(rows)
                .where(rows.c.run_id == run_id, rows.c.position == merged["position"])
                .values(_json_safe(values))
            )
            result = merged
        summary = grown_summary(summary, [result.get("scores") or {}])
        failed += result.get("status") == EvalStatus.FAILED
    summary["row_count"] = count
    conn.execute(
        update(runs)
        .where(runs.c.run_id == run_id)
        .values(row_count=count, failed_count=failed, summary=_json_safe(summary))
    )


def _session_rows(conn: Connection, run_id: str, invocation_id: str) -> list[dict[str, Any]]:
    """The run's rows linked to an invocation of the session of ``invocation_id`` (by the invocations' session
    index and the results' invocation index: as many as the session has turns)."""
    inv, rows = t.invocations, t.eval_results
    session = select(inv.c.session_id).where(inv.c.invocation_id == invocation_id).scalar_subquery()
    turns = select(inv.c.invocation_id).where(inv.c.session_id == session)
    found = conn.execute(select(rows).where(rows.c.run_id == run_id, rows.c.invocation_id.in_(turns)))
    return [dict(r._mapping) for r in found]


def grown_summary(
    summary: dict[str, Any], scores: Sequence[Mapping[str, Any]], *, remove: bool = False
) -> dict[str, Any]:
    """``summary`` with each metric's count, mean, m2 and sample standard deviation updated by ``scores`` (one
    mapping of metric to score per row; a missing or null score is not counted): added, or taken back out
    (``remove``: a row replaced)."""
    for row in scores:
        for name, score in row.items():
            if not isinstance(score, int | float) or isinstance(score, bool) or math.isnan(score):
                summary.setdefault(f"{name}/mean", None)
                summary.setdefault(f"{name}/std", None)
                continue
            before = int(summary.get(f"{name}/count") or 0)
            mean = float(summary.get(f"{name}/mean") or 0.0) if before else 0.0
            m2 = float(summary.get(f"{name}/m2") or 0.0) if before else 0.0
            n = before - 1 if remove else before + 1
            if n <= 0:
                mean, m2, n = 0.0, 0.0, 0
            elif remove:  # Welford's update, undone
                old_mean = (before * mean - score) / n
                m2 = max(m2 - (score - mean) * (score - old_mean), 0.0)
                mean = old_mean
            else:
                delta = score - mean
                mean += delta / n
                m2 += delta * (score - mean)
            summary |= {f"{name}/count": n, f"{name}/mean": mean if n else None, f"{name}/m2": m2}
            summary[f"{name}/std"] = math.sqrt(m2 / (n - 1)) if n > 1 else None
    return summary
