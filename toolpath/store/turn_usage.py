"""Each turn's model usage and user, kept on the turn as it is written (and by migration 0011 for turns stored
before): per model, and per whether the calls reported their cost, the calls, tokens and reported cost of the
model spans below the turn's agent span (``turn_usage``); the turn's input and output tokens and its user
(``invocations.input_tokens``, ``output_tokens``, ``user_id``). Sorting and filtering sessions by tokens or cost
then read these rows, not every span.

The attributes read are the OpenTelemetry GenAI names (OpenInference's token counts where those are absent), the
ones :mod:`toolpath.tracer.semconv` names; a test keeps the two in step (the store imports nothing of the tracer).
A cost stays a price applied at read time to the tokens of calls that reported none: prices change, tokens do not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the sessions filter imports this module: no SQLAlchemy loaded for it
    from sqlalchemy import Connection


@dataclass(frozen=True)
class UsageKeys:
    """The span attributes that hold a model call's usage (the first of each group that is present counts)."""

    input_tokens: tuple[str, ...]
    output_tokens: tuple[str, ...]
    cost_total: str
    cost_parts: tuple[str, ...]
    model: tuple[str, ...]


USAGE_KEYS = UsageKeys(
    input_tokens=("gen_ai.usage.input_tokens", "llm.token_count.prompt"),
    output_tokens=("gen_ai.usage.output_tokens", "llm.token_count.completion"),
    cost_total="gen_ai.usage.cost.total",
    cost_parts=("gen_ai.usage.cost.input", "gen_ai.usage.cost.output"),
    model=("gen_ai.response.model", "gen_ai.request.model"),
)
USER_KEYS = ("user.id", "enduser.id")
"""Where a turn's user is named: on the earliest of its spans that names one, the first of these among the
span's attributes, then its resource's."""
_CHUNK = 500


def _key(key: str) -> str:
    if "'" in key or '"' in key or "\\" in key:
        raise ValueError(f"usage keys: {key!r} is no attribute name a query can hold")
    return key


def number(dialect: str, key: str, column: str = "spans.attributes") -> str:
    """The JSON number under ``key`` of ``column`` (``NULL`` for any other value: a cast would fail PostgreSQL's
    whole query)."""
    key = _key(key)
    if dialect == "sqlite":
        path = f"'$.\"{key}\"'"
        return f"(CASE WHEN json_type({column}, {path}) IN ('integer', 'real') " \
               f"THEN json_extract({column}, {path}) END)"  # fmt: skip
    return f"(CASE WHEN jsonb_typeof({column} -> '{key}') = 'number' " \
           f"THEN CAST({column} ->> '{key}' AS DOUBLE PRECISION) END)"  # fmt: skip


def text_of(dialect: str, key: str, column: str = "spans.attributes") -> str:
    """The value under ``key`` of ``column`` as text (a string as it is; ``NULL`` where absent)."""
    key = _key(key)
    if dialect == "sqlite":
        return f"CAST(json_extract({column}, '$.\"{key}\"') AS TEXT)"
    return f"({column} ->> '{key}')"


def first(values: list[str]) -> str:
    return values[0] if len(values) == 1 else f"COALESCE({', '.join(values)})"


def _marks(dialect: str, count: int) -> str:
    return ", ".join(["?" if dialect == "sqlite" else "%s"] * count)


def _refresh_sql(dialect: str, count: int, keys: UsageKeys) -> tuple[str, str, str, str]:
    """The delete, insert and update that recompute ``count`` turns' usage rows and columns, and the query of
    the users named on their spans (earliest first)."""
    tokens_in = first([number(dialect, k) for k in keys.input_tokens])
    tokens_out = first([number(dialect, k) for k in keys.output_tokens])
    parts = [number(dialect, k) for k in keys.cost_parts]
    summed = " + ".join(f"COALESCE({p}, 0)" for p in parts) or "NULL"
    any_part = " OR ".join(f"{p} IS NOT NULL" for p in parts) or "1 = 0"
    cost = f"COALESCE({number(dialect, keys.cost_total)}, CASE WHEN {any_part} THEN {summed} END)"
    model = first([text_of(dialect, k) for k in keys.model])
    ids = _marks(dialect, count)
    # the turn's spans: its agent span (the id's tail, invocation_key's form) and every span below it; a turn whose
    # id has another form counts its whole trace. UNION, not UNION ALL: a circle of parents ends.
    tail = "substr(i.invocation_id, length(i.trace_id) + 2)"
    keyed = "substr(i.invocation_id, 1, length(i.trace_id) + 1) = i.trace_id || '-'"
    tree = f"""
WITH RECURSIVE tree(invocation_id, trace_id, span_id) AS (
  SELECT i.invocation_id, i.trace_id, s.span_id FROM invocations i JOIN spans s ON s.trace_id = i.trace_id
  AND (s.span_id = {tail} OR NOT ({keyed})) WHERE i.invocation_id IN ({ids})
  UNION
  SELECT tree.invocation_id, s.trace_id, s.span_id FROM tree JOIN spans s
  ON s.trace_id = tree.trace_id AND s.parent_span_id = tree.span_id
)"""
    insert = f"""{tree}, used AS (
  SELECT tree.invocation_id, {model} AS model, {tokens_in} AS tokens_in, {tokens_out} AS tokens_out, {cost} AS cost
  FROM tree JOIN spans ON spans.trace_id = tree.trace_id AND spans.span_id = tree.span_id
)
INSERT INTO turn_usage (invocation_id, model, reported, calls, input_tokens, output_tokens, cost)
SELECT invocation_id, COALESCE(model, ''), CASE WHEN cost IS NULL THEN 0 ELSE 1 END, COUNT(*),
  CAST(COALESCE(SUM(tokens_in), 0) AS BIGINT), CAST(COALESCE(SUM(tokens_out), 0) AS BIGINT), SUM(cost)
FROM used WHERE tokens_in IS NOT NULL OR tokens_out IS NOT NULL OR cost IS NOT NULL
GROUP BY invocation_id, COALESCE(model, ''), CASE WHEN cost IS NULL THEN 0 ELSE 1 END"""
    delete = f"DELETE FROM turn_usage WHERE invocation_id IN ({ids})"
    mine = "FROM turn_usage u WHERE u.invocation_id = invocations.invocation_id"
    user = first([text_of(dialect, k) for k in USER_KEYS] + [text_of(dialect, k, "spans.resource") for k in USER_KEYS])
    update = (
        f"UPDATE invocations SET input_tokens = COALESCE((SELECT SUM(u.input_tokens) {mine}), 0), "
        f"output_tokens = COALESCE((SELECT SUM(u.output_tokens) {mine}), 0), user_id = NULL "
        f"WHERE invocation_id IN ({ids})"
    )
    users = (
        f"{tree} SELECT tree.invocation_id, substr({user}, 1, 256) FROM tree JOIN spans "
        f"ON spans.trace_id = tree.trace_id AND spans.span_id = tree.span_id WHERE {user} IS NOT NULL "
        "ORDER BY tree.invocation_id, spans.start_time, spans.span_id"
    )
    return delete, insert, update, users


def refresh(conn: Connection, invocation_ids: Sequence[str], keys: UsageKeys = USAGE_KEYS) -> None:
    """Recompute the usage rows, token columns and user of ``invocation_ids`` from their spans as stored now (in
    ``conn``'s transaction), 500 turns a statement."""
    dialect = conn.dialect.name
    for start in range(0, len(invocation_ids), _CHUNK):
        chunk = tuple(invocation_ids[start : start + _CHUNK])
        *writes, users = _refresh_sql(dialect, len(chunk), keys)
        for sql in writes:
            conn.exec_driver_sql(sql, chunk)
        named: dict[str, str] = {}
        for invocation_id, user in conn.exec_driver_sql(users, chunk):
            named.setdefault(invocation_id, user)
        if named:
            mark = "?" if dialect == "sqlite" else "%s"
            conn.exec_driver_sql(f"UPDATE invocations SET user_id = {mark} WHERE invocation_id = {mark}",
                                 [(user, invocation_id) for invocation_id, user in named.items()])  # fmt: skip


def backfill(conn: Connection, batch: int = 2_000) -> int:
    """:func:`refresh` of every stored turn, ``batch`` turns at a time in the order of their ids (what migration
    0011 runs); the number of turns.

    On PostgreSQL the tables read are analysed first and the statements run as index lookups in nested loops, not
    JIT-compiled (the settings restored after). A store filled and upgraded at once (an upgrade right after a bulk
    load, a restored dump) has tables the server never analysed: planned from no statistics, each statement of 500
    turns scanned and sorted every span, and was JIT-compiled (0.7 s of a 0.8 s statement). Analysed, the planner
    still joined each level of the recursion to all the spans (it takes the recursion's rows for ten times the
    first level's): either way a statement's cost grew with the spans stored, and the backfill's with their square.
    5 spans a turn, CPU of the server: 30,000 turns 94-108 s unanalysed, 20-25 s analysed, 4 s so; 100,000 turns
    395 s analysed, 13 s so (docs/performance.md)."""
    if conn.dialect.name != "postgresql":
        return each_batch(conn, refresh, batch)
    conn.exec_driver_sql("ANALYZE spans, invocations")
    names = ("jit", "enable_seqscan", "enable_hashjoin", "enable_mergejoin")
    kept = conn.exec_driver_sql("SELECT " + ", ".join(f"current_setting('{n}')" for n in names)).one()
    _settings(conn, dict.fromkeys(names, "off"))
    done = each_batch(conn, refresh, batch)
    _settings(conn, dict(zip(names, kept, strict=True)))
    return done


def _settings(conn: Connection, values: dict[str, str]) -> None:
    """Set ``values`` for the rest of ``conn``'s transaction (PostgreSQL)."""
    conn.exec_driver_sql("SELECT " + ", ".join("set_config(%s, %s, true)" for _ in values),
                         tuple(x for pair in values.items() for x in pair))  # fmt: skip


def each_batch(conn: Connection, work: Callable[[Connection, Sequence[str]], None], batch: int) -> int:
    """``work(conn, ids)`` over every stored turn's id, ``batch`` at a time in the order of the ids; the number of
    turns."""
    done, after = 0, ""
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    while True:
        found = conn.exec_driver_sql(
            f"SELECT invocation_id FROM invocations WHERE invocation_id > {mark} ORDER BY invocation_id LIMIT {batch}",
            (after,),
        ).all()
        if not found:
            return done
        ids = [row[0] for row in found]
        work(conn, ids)
        done, after = done + len(ids), ids[-1]
