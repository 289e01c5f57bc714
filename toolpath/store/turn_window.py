"""Which turns a page of statistics counts (the Errors and Tools pages): those started in a time window, and
evaluations' own or not. Its conditions are SQL on ``invocations`` with ``?`` marks, for SQLite or PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass

from toolpath.store.session_list import EVALUATION_PREFIXES, marked_true


@dataclass(frozen=True)
class Window:
    """Which turns count: started at or after ``since_ns`` and at or before ``until_ns`` (nanoseconds since the
    epoch, UTC; ``None``: unbounded), and (``hide_evaluation``) not run by an evaluation: marked by
    ``evaluation_attribute`` or, in stores written before the mark, in a session with an evaluation's id prefix."""

    since_ns: int | None = None
    until_ns: int | None = None
    hide_evaluation: bool = False
    evaluation_attribute: str | None = None

    def conditions(self, dialect: str) -> tuple[list[str], list[object]]:
        """The conditions on ``invocations`` that keep the turns of the window, and their parameters."""
        where: list[str] = []
        params: list[object] = []
        if self.since_ns is not None:
            where.append("invocations.started_at >= ?")
            params.append(self.since_ns)
        if self.until_ns is not None:
            where.append("invocations.started_at <= ?")
            params.append(self.until_ns)
        if self.hide_evaluation:
            evaluation, more = self.evaluation(dialect)
            where.append(f"NOT {evaluation}")
            params += more
        return where, params

    def where(self, dialect: str) -> tuple[str, list[object]]:
        """:meth:`conditions` as one ``WHERE`` clause (``WHERE 1 = 1`` when none)."""
        where, params = self.conditions(dialect)
        return "WHERE " + " AND ".join(["1 = 1", *where]), params

    def evaluation(self, dialect: str) -> tuple[str, list[object]]:
        """The condition that a turn (a row of ``invocations``) was run by an evaluation, true or false (never
        null), and its parameters."""
        either = ["substr(invocations.session_id, 1, ?) = ?" for _ in EVALUATION_PREFIXES]
        params: list[object] = [value for p in EVALUATION_PREFIXES for value in (len(p), p)]
        if self.evaluation_attribute is not None:
            marked, key = marked_true(dialect, self.evaluation_attribute, "invocations.attributes")
            either.append(f"COALESCE({marked}, 1 = 0)")
            params.append(key)
        return f"({' OR '.join(either)})", params
