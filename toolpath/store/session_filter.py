"""Which sessions the UI's sessions pages show: a :class:`SessionFilter` (agent, time, failures, online scores, text
search, tools, latency, evaluation traffic, reviews, user) and its SQL conditions on ``sessions``
(:class:`toolpath.store.session_list.Condition`, for SQLite or PostgreSQL), which the newest-first list
(:func:`toolpath.store.session_list.newest_page`) and the pages in another order
(:mod:`toolpath.store.session_order`) both apply."""

from __future__ import annotations

from dataclasses import dataclass

from toolpath.store import turn_text
from toolpath.store.engine import SQLITE_LOWER
from toolpath.store.job_status import ResultLabel
from toolpath.store.session_list import EVALUATION_PREFIXES, Condition, marked_true


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions a page shows; every field is optional."""

    agent: str | None = None
    since_ns: int | None = None
    """Sessions active at or after this time."""
    until_ns: int | None = None
    """Sessions that started at or before this time."""
    failures: bool = False
    """Only sessions with a failed invocation."""
    metric: str | None = None
    below: float | None = None
    """With ``metric``: only sessions with an invocation scored online below this (literally below)."""
    worse_than: float | None = None
    """With ``metric``: only sessions with a score worse than this by the metric's direction (below it, or above
    it where lower is better: ``lower_is_better``)."""
    lower_is_better: bool = False
    label: ResultLabel | None = None
    """With ``metric``: only sessions with an online result of this label (``pass``, ``fail``, ``error``)."""
    text: str | None = None
    """Only sessions with this text (case-insensitive) in a prompt, a response, an error, the session id, a tool's
    name, arguments, result or error, an invocation's attributes or its user."""
    in_spans: bool = False
    """With ``text``: also look in the names, attributes and events of the turns' spans (a scan of every span)."""
    tool: str | None = None
    """Only sessions that called this tool."""
    tool_error: bool = False
    """Only sessions with a tool call that failed."""
    latency_above: float | None = None
    """Only sessions with a turn slower than this many seconds."""
    hide_evaluation: bool = False
    """Leave out the sessions evaluations ran: those with a turn marked by ``evaluation_attribute``, and (stores
    written before the mark) those with an id of :data:`EVALUATION_PREFIXES`."""
    evaluation_attribute: str | None = None
    """The invocation attribute that is ``true`` on a turn an evaluation ran (``toolpath.evaluation``)."""
    review: str | None = None
    """Only sessions with a turn a reviewer annotated: labelled ``pass`` or ``fail``, or ``any`` annotation."""
    tokens_above: int | None = None
    """Only sessions whose turns' model calls took more than this many tokens (input plus output), in all."""
    user: str | None = None
    """Only sessions with a turn of this user (``user.id`` or ``enduser.id``, kept on the turn)."""


_TURN = "SELECT 1 FROM invocations WHERE invocations.session_id = sessions.session_id"
"""A turn of the session (in an ``EXISTS``)."""
_TEXT_COLUMNS = {
    "sessions": ("session_id",),
    "invocations": ("prompt", "response", "error", "attributes", "user_id"),
    "tool_calls": ("name", "args", "result", "error"),
    "spans": ("name", "attributes", "events", "status_message"),
}
_JSON_COLUMNS = frozenset({"invocations.attributes", "tool_calls.args", "tool_calls.result", "spans.attributes",
                           "spans.events"})  # fmt: skip
"""Searched as their JSON text."""


def _like(text: str) -> str:
    return "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _search(where: SessionFilter, text: str, dialect: str) -> Condition:
    """Sessions with ``text`` in a column of :data:`_TEXT_COLUMNS` (spans' only with ``in_spans``): one pass over
    each table (an IN of their union), not a probe of every session's turns in page order."""
    # SQLite's LIKE ignores ASCII case as it is (lower() on every row tripled the scan), and only ASCII's: text with
    # other letters is compared in lower case (a Python function on every row: the rarer, slower search);
    # PostgreSQL: ILIKE
    like = "LIKE" if dialect == "sqlite" else "ILIKE"
    fold = dialect == "sqlite" and any(not c.isascii() and c.lower() != c.upper() for c in text)

    def has(table: str) -> str:
        named = [f"{table}.{column}" for column in _TEXT_COLUMNS[table]]
        read = [f"CAST({name} AS TEXT)" if name in _JSON_COLUMNS else name for name in named]
        read = [f"{SQLITE_LOWER}({column})" for column in read] if fold else read
        return " OR ".join(f"{column} {like} ? ESCAPE '\\'" for column in read)

    indexed = turn_text.matching(dialect, text)
    if indexed is not None:  # the turns and their calls through the text index (toolpath.store.turn_text)
        selects = [f"SELECT sessions.session_id FROM sessions WHERE {has('sessions')}", indexed[0]]
        tables = ["sessions"]
    else:
        selects = [
            f"SELECT sessions.session_id FROM sessions WHERE {has('sessions')}",
            f"SELECT invocations.session_id FROM invocations WHERE {has('invocations')}",
            "SELECT invocations.session_id FROM tool_calls JOIN invocations "
            f"ON invocations.invocation_id = tool_calls.invocation_id WHERE {has('tool_calls')}",
        ]
        tables = ["sessions", "invocations", "tool_calls"]
    if where.in_spans:
        selects.append(
            "SELECT invocations.session_id FROM spans JOIN invocations ON invocations.trace_id = spans.trace_id "
            f"WHERE {has('spans')}"
        )
        tables.append("spans")
    pattern = _like(text)
    params = tuple(pattern for table in tables for _ in _TEXT_COLUMNS[table])
    if indexed is not None:  # its parameters follow the session ids' (the spans' come last)
        params = params[:1] + indexed[1] + params[1:]
    return Condition(f"sessions.session_id IN ({' UNION '.join(selects)})", params)


def conditions(where: SessionFilter, dialect: str) -> list[Condition]:
    """The SQL conditions on ``sessions`` of ``where``, for ``dialect`` (``sqlite`` or ``postgresql``)."""
    out: list[Condition] = []
    if where.agent is not None:
        out.append(Condition("sessions.agent_name = ?", (where.agent,)))
    if where.since_ns is not None:
        out.append(Condition("sessions.last_started_at >= ?", (where.since_ns,)))
    if where.until_ns is not None:
        out.append(Condition("sessions.first_started_at <= ?", (where.until_ns,)))
    if where.hide_evaluation:
        # the prefix compared as it is (SQLite's LIKE would ignore its case, PostgreSQL's would not, nor the rows)
        out += [Condition("substr(sessions.session_id, 1, ?) <> ?", (len(p), p)) for p in EVALUATION_PREFIXES]
        if where.evaluation_attribute is not None:
            marked, key = marked_true(dialect, where.evaluation_attribute, "invocations.attributes")
            out.append(Condition(f"NOT EXISTS ({_TURN} AND {marked})", (key,)))
    if where.tokens_above is not None:  # the totals kept on the turns, read by (session_id, started_at)
        total = "SELECT SUM(invocations.input_tokens + invocations.output_tokens) FROM invocations"
        mine = "invocations.session_id = sessions.session_id"
        out.append(Condition(f"({total} WHERE {mine}) > ?", (where.tokens_above,)))
    if where.user is not None:  # an index seek on (user_id, started_at)
        out.append(Condition("sessions.session_id IN (SELECT invocations.session_id FROM invocations "
                             "WHERE invocations.user_id = ?)", (where.user,)))  # fmt: skip
    if where.failures:
        out.append(Condition(f"EXISTS ({_TURN} AND invocations.failure > 0)"))
    if where.latency_above is not None:
        out.append(Condition(f"EXISTS ({_TURN} AND invocations.latency_seconds > ?)", (where.latency_above,)))
    if where.tool is not None or where.tool_error:
        called = ["tool_calls.invocation_id = invocations.invocation_id"]
        if where.tool is not None:
            called.append("tool_calls.name = ?")
        if where.tool_error:
            called.append("tool_calls.error IS NOT NULL")
        calls = f"SELECT 1 FROM tool_calls WHERE {' AND '.join(called)}"
        out.append(Condition(f"EXISTS ({_TURN} AND EXISTS ({calls}))", () if where.tool is None else (where.tool,)))
    if where.text:
        out.append(_search(where, where.text, dialect))
    if where.review is not None:
        noted = "SELECT 1 FROM annotations WHERE annotations.invocation_id = invocations.invocation_id"
        label: tuple[str, ...] = ()
        if where.review != "any":
            noted, label = f"{noted} AND annotations.label = ?", (where.review,)
        out.append(Condition(f"EXISTS ({_TURN} AND EXISTS ({noted}))", label))
    if where.metric is not None:
        scored = ["online_results.invocation_id = invocations.invocation_id", "online_results.metric = ?"]
        params: list[object] = [where.metric]
        if where.below is not None:
            scored.append("online_results.score < ?")
            params.append(where.below)
        if where.worse_than is not None:
            scored.append("online_results.score > ?" if where.lower_is_better else "online_results.score < ?")
            params.append(where.worse_than)
        if where.label is not None:
            scored.append("online_results.label = ?")
            params.append(str(where.label))
        results = f"SELECT 1 FROM online_results WHERE {' AND '.join(scored)}"
        out.append(Condition(f"EXISTS ({_TURN} AND EXISTS ({results}))", tuple(params)))
    return out
