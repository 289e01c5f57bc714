"""Readiness, as orchestrators probe it (``GET /readyz``): the store answers, its schema is at the migrations'
head, and the online workers (when there are any) are running. ``GET /healthz`` only says the process serves."""

from __future__ import annotations

from typing import Any

from toolpath.store import migrate
from toolpath.store.store import Store


def readiness(store: Store, online: Any = None) -> tuple[bool, dict[str, Any]]:
    """``(ready, body)``: the body says what was checked, and the reason when not ready."""
    try:
        with store.engine.connect() as conn:
            revision = migrate.current_revision(conn)
    except Exception as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        return False, {"status": "unavailable", "reason": f"store unreachable: {reason[0] if reason else exc!r}"}
    if revision != migrate.HEAD:
        return False, {
            "status": "unavailable",
            "reason": f"store schema at revision {revision or 'none'}, head is {migrate.HEAD} "
            "(run 'toolpath db upgrade')",
        }
    body: dict[str, Any] = {"status": "ready", "schema": revision}
    if online is not None:
        alive, total = online.workers_alive()
        body["online_workers"] = alive
        if alive < total or total == 0:
            return False, {"status": "unavailable", "reason": f"{alive} of {total} online worker(s) running"}
    return True, body
