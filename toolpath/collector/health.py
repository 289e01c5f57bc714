"""Readiness, as orchestrators probe it (``GET /readyz``): the store answers (or, with ``--spool``, the spool has
room), its schema is at the migrations' head, and the online workers (when there are any) are running.
``GET /healthz`` only says the process serves."""

from __future__ import annotations

from typing import Any

from toolpath.store import migrate
from toolpath.store.spool import Spool
from toolpath.store.store import Store


def readiness(store: Store, online: Any = None, spool: Spool | None = None) -> tuple[bool, dict[str, Any]]:
    """``(ready, body)``: the body says what was checked, and the reason when not ready. With a ``spool`` an
    unreachable store leaves the collector ready while the spool has room (the body says so): exports are answered
    from the spool meanwhile, which is what it is for."""
    body: dict[str, Any] = {"status": "ready"}
    try:
        with store.engine.connect() as conn:
            revision = migrate.current_revision(conn)
    except Exception as exc:
        said = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        reason = f"store unreachable: {said[0] if said else exc!r}"
        if spool is None:
            return False, {"status": "unavailable", "reason": reason}
        if spool.pending_bytes >= spool.max_bytes:
            return False, {"status": "unavailable", "reason": f"{reason}, and the spool is full"}
        body["store"] = reason
    else:
        if revision != migrate.HEAD:
            return False, {
                "status": "unavailable",
                "reason": f"store schema at revision {revision or 'none'}, head is {migrate.HEAD} "
                "(run 'toolpath db upgrade')",
            }
        body["schema"] = revision
    if spool is not None:
        body["spool_spans"] = spool.pending_spans
    if online is not None:
        alive, total = online.workers_alive()
        body["online_workers"] = alive
        if alive < total or total == 0:
            return False, {"status": "unavailable", "reason": f"{alive} of {total} online worker(s) running"}
        if not online.warm.is_set():
            return False, {"status": "unavailable", "reason": "online evaluation is loading its judges' modules"}
    return True, body
