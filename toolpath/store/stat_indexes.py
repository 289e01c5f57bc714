"""The indexes the Tools page reads (migration 0014), and the SQL expressions they index, which the page's queries
must spell the same way for the database to use them:

- ``ix_tool_calls_times``: each call's tool, agent, start and end, so that every call's latency (:data:`LATENCY`)
  is read by tool and agent without the table's rows or the turns';
- ``ix_tool_calls_failed``: the failed calls' tool, agent, start and key (a partial index of the calls that are
  :data:`FAILED`), their count and the latest one of each tool and agent read from it;
- ``ix_spans_usage``, on SQLite: the model calls' model, whether they reported a cost, start, trace, tokens and
  cost, as :func:`usage_values` reads them from a span's attributes (expressions: a partial index of the spans
  whose attributes name a usage key), in the order the models' totals group them, so that those read no span's
  JSON. PostgreSQL reads no value of an index of expressions without the table's row (it scanned its partitions,
  in parallel, as fast as it read such an index): it has none.

The database fills them from the rows stored when it creates them (the migration's backfill) and keeps them as rows
are written: nothing more to write at ingest. Each is ordered by time after its first columns, so that a write adds
to the end of a few ranges of pages rather than to pages all over the index (ordered by latency, the index of
calls cost SQLite's writes of turns 40-50% more CPU time)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolpath.store.turn_usage import USAGE_KEYS, UsageKeys, first, number, text_of

if TYPE_CHECKING:
    from sqlalchemy import Connection

LATENCY = "(CASE WHEN end_time >= start_time THEN end_time - start_time END)"
"""A call's latency (ns) from its ``tool_calls`` row: its end less its start; ``NULL`` without both (or ending
before it starts)."""
FAILED = "error IS NOT NULL AND name IS NOT NULL"
"""The failed calls, as ``ix_tool_calls_failed`` states them: a query must state both (``name`` is never null) to
read it, so that the queries of other pages, which state the first alone (the Errors page's, over the turns of a
time window), keep their plans: offered this index, SQLite read every failed call of the store, not the window's
turns."""
TIMES_INDEX = "ix_tool_calls_times"
FAILED_INDEX = "ix_tool_calls_failed"
USAGE_INDEX = "ix_spans_usage"


@dataclass(frozen=True)
class UsageValues:
    """A span's usage as SQL over its attributes: each value ``NULL`` where the span holds none."""

    model: str
    tokens_in: str
    tokens_out: str
    cost: str
    named: str
    """True where the attributes may name a usage key (every span holding a value does): the partial index's
    condition, which a query must state as it is for the index to serve it."""


def namespaces(keys: Sequence[str]) -> list[str]:
    """The fewest texts each of ``keys`` holds: their namespaces (a key's text before its last dot), none inside
    another (``gen_ai.usage`` for ``gen_ai.usage.input_tokens`` and ``gen_ai.usage.cost.total``)."""
    spaces = sorted({key.rpartition(".")[0] or key for key in keys}, key=len)
    out: list[str] = []
    for space in spaces:
        if not any(kept in space for kept in out):
            out.append(space)
    return out


def usage_values(dialect: str, keys: UsageKeys = USAGE_KEYS, column: str = "spans.attributes") -> UsageValues:
    """The usage values of a span whose attributes are ``column``: the first of each group of ``keys`` holding a
    JSON number (anything else counts as absent, on either database: a cast would fail PostgreSQL's whole query);
    the cost is the total, else the sum of the parts present."""
    tokens_in = first([number(dialect, k, column) for k in keys.input_tokens])
    tokens_out = first([number(dialect, k, column) for k in keys.output_tokens])
    parts = [number(dialect, k, column) for k in keys.cost_parts]
    summed = " + ".join(f"COALESCE({p}, 0)" for p in parts) or "NULL"
    any_part = " OR ".join(f"{p} IS NOT NULL" for p in parts) or "1 = 0"
    cost = f"COALESCE({number(dialect, keys.cost_total, column)}, CASE WHEN {any_part} THEN {summed} END)"
    model = first([text_of(dialect, k, column) for k in keys.model])
    named_keys = [*keys.input_tokens, *keys.output_tokens, keys.cost_total, *keys.cost_parts]
    if dialect == "sqlite":  # the text is searched for the keys' namespaces first, then for the keys
        near = " OR ".join(f"instr({column}, '{p}') > 0" for p in namespaces(named_keys))
        exact = " OR ".join(f"instr({column}, '\"{k}\"') > 0" for k in named_keys)
        named = f"({near}) AND ({exact})"
    else:
        named = "(" + " OR ".join(f"({column} -> '{k}') IS NOT NULL" for k in named_keys) + ")"
    return UsageValues(model, tokens_in, tokens_out, cost, named)


def _statements(dialect: str) -> list[str]:
    usage = usage_values(dialect, USAGE_KEYS, "attributes")
    usage_index = (
        f"CREATE INDEX IF NOT EXISTS {USAGE_INDEX} ON spans (({usage.model}), (({usage.cost}) IS NOT NULL), "
        f"start_time, trace_id, ({usage.tokens_in}), ({usage.tokens_out}), ({usage.cost})) WHERE {usage.named}"
    )
    return [
        f"CREATE INDEX IF NOT EXISTS {TIMES_INDEX} ON tool_calls (name, agent_name, start_time, end_time)",
        f"CREATE INDEX IF NOT EXISTS {FAILED_INDEX} ON tool_calls (name, agent_name, start_time, invocation_id, "
        f"position) WHERE {FAILED}",
        *([usage_index] if dialect == "sqlite" else []),
    ]


def create(conn: Connection) -> None:
    """Create the indexes (those missing), reading every call and span stored."""
    for sql in _statements(conn.dialect.name):
        conn.exec_driver_sql(sql)


def drop(conn: Connection) -> None:
    for name in (USAGE_INDEX, FAILED_INDEX, TIMES_INDEX):
        conn.exec_driver_sql(f"DROP INDEX IF EXISTS {name}")
