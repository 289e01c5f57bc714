"""Evaluation runs that grow: result rows appended to a stored run batch by batch, inside the caller's transaction
(online scoring against an eval set adds each batch's cases in the transaction that closes its jobs).

The run's row is created by the first append (``INSERT … ON CONFLICT DO NOTHING``), then updated by each one,
which also holds the run's row lock (PostgreSQL) until the transaction ends: appenders of one run, in any process,
take positions one after another, never the same. The summary is updated from the new rows alone — per metric the
count, mean and sum of squared deviations (Welford's update; ``<metric>/count`` and ``<metric>/m2`` beside
``<metric>/mean`` and ``<metric>/std``) — so an append costs the same however large the run has grown."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, func, select, update

from toolpath.store import schema as t
from toolpath.store.store import Store, _json_safe

__all__ = ["append_run_results"]


def append_run_results(
    store: Store, conn: Connection, run: Mapping[str, Any], results: Sequence[Mapping[str, Any]]
) -> None:
    """Append ``results`` (``eval_results`` columns but ``run_id`` and ``position``) to the run ``run`` (the
    ``eval_runs`` columns it starts with: ``run_id``, ``kind``, ``dataset``, ``agent``, ``metrics``,
    ``started_at``), creating it on first use; its ``row_count``, ``failed_count``, ``finished_at`` and summary
    grow with them."""
    if not results:
        return
    runs, rows = t.eval_runs, t.eval_results
    run_id = run["run_id"]
    now = time.time_ns()
    first = {**run, "finished_at": now, "row_count": 0, "failed_count": 0, "summary": {"row_count": 0}}
    conn.execute(store.dialect_insert(runs).values(_json_safe(first)).on_conflict_do_nothing(index_elements=["run_id"]))
    # the update takes the run's row lock first: the summary and positions read below are this transaction's alone
    conn.execute(update(runs).where(runs.c.run_id == run_id).values(finished_at=now))
    held = conn.execute(select(runs.c.row_count, runs.c.failed_count, runs.c.summary).where(runs.c.run_id == run_id))
    count, failed, summary = held.one()
    last = conn.execute(select(func.max(rows.c.position)).where(rows.c.run_id == run_id)).scalar()
    start = 0 if last is None else last + 1
    conn.execute(
        rows.insert(), [_json_safe({**r, "run_id": run_id, "position": start + i}) for i, r in enumerate(results)]
    )
    summary = grown_summary(dict(summary or {}), [r.get("scores") or {} for r in results])
    summary["row_count"] = count + len(results)
    conn.execute(
        update(runs)
        .where(runs.c.run_id == run_id)
        .values(
            row_count=count + len(results),
            failed_count=(failed or 0) + sum(r.get("status") == "FAILED" for r in results),
            summary=_json_safe(summary),
        )
    )


def grown_summary(summary: dict[str, Any], scores: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``summary`` with each metric's count, mean, m2 and sample standard deviation updated by ``scores`` (one
    mapping of metric to score per new row; a missing or null score is not counted)."""
    for row in scores:
        for name, score in row.items():
            if not isinstance(score, int | float) or isinstance(score, bool) or math.isnan(score):
                summary.setdefault(f"{name}/mean", None)
                summary.setdefault(f"{name}/std", None)
                continue
            n = int(summary.get(f"{name}/count") or 0) + 1
            mean = float(summary.get(f"{name}/mean") or 0.0) if n > 1 else 0.0
            m2 = float(summary.get(f"{name}/m2") or 0.0) if n > 1 else 0.0
            delta = score - mean
            mean += delta / n
            m2 += delta * (score - mean)
            summary |= {f"{name}/count": n, f"{name}/mean": mean, f"{name}/m2": m2}
            summary[f"{name}/std"] = math.sqrt(m2 / (n - 1)) if n > 1 else None
    return summary
