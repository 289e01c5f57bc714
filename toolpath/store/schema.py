"""The store's tables (SQLAlchemy Core). Times are nanoseconds since the epoch, UTC; ids are strings."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

metadata = MetaData()
Json = JSON().with_variant(JSONB(), "postgresql")

sessions = Table(
    "sessions",
    metadata,
    Column("session_id", String(256), primary_key=True),
    Column("agent_name", String(256)),
    Column("first_started_at", BigInteger, nullable=False),
    Column("last_started_at", BigInteger, nullable=False),
    Index("ix_sessions_last_started_at", "last_started_at"),
    Index("ix_sessions_agent_name", "agent_name"),
)

invocations = Table(
    "invocations",
    metadata,
    Column("invocation_id", String(64), primary_key=True),
    Column("session_id", String(256), ForeignKey("sessions.session_id"), nullable=False),
    Column("trace_id", String(32), nullable=False),
    Column("agent_name", String(256)),
    Column("prompt", Text),
    Column("response", Text),
    Column("intermediate_responses", Json, nullable=False),
    Column("latency_seconds", Float),
    Column("failure", Integer, nullable=False),
    Column("error", Text),
    Column("started_at", BigInteger, nullable=False),
    Column("attributes", Json, nullable=False),
    Column("answered_by", String(256)),  # the agent that gave the final response (a sub-agent, say)
    # kept by toolpath.store.turn_usage as the turn is written: its model calls' tokens and its user
    Column("input_tokens", BigInteger, nullable=False, server_default="0"),
    Column("output_tokens", BigInteger, nullable=False, server_default="0"),
    Column("user_id", String(256)),
    Index("ix_invocations_session", "session_id", "started_at"),
    Index("ix_invocations_trace", "trace_id"),
    Index("ix_invocations_agent_started", "agent_name", "started_at"),
    Index("ix_invocations_started", "started_at"),
    Index("ix_invocations_user", "user_id", "started_at"),
)

tool_calls = Table(
    "tool_calls",
    metadata,
    Column("invocation_id", String(64), ForeignKey("invocations.invocation_id"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("name", String(256), nullable=False),
    Column("args", Json),
    Column("result", Json),
    Column("call_id", String(256)),
    Column("error", Text),
    Column("start_time", BigInteger),
    Column("end_time", BigInteger),
    Column("agent_name", String(256)),  # the agent that made the call (a sub-agent's own calls name it)
    Index("ix_tool_calls_name", "name"),
    # the Tools page's (toolpath.store.stat_indexes, migration 0014; as SQLite's ix_spans_usage of spans, an index of
    # expressions no metadata states for both databases)
    Index("ix_tool_calls_times", "name", "agent_name", "start_time", "end_time"),
    Index(
        "ix_tool_calls_failed",
        "name",
        "agent_name",
        "start_time",
        "invocation_id",
        "position",
        sqlite_where=text("error IS NOT NULL AND name IS NOT NULL"),
        postgresql_where=text("error IS NOT NULL AND name IS NOT NULL"),
    ),
)

spans = Table(
    "spans",
    metadata,
    Column("trace_id", String(32), primary_key=True),
    Column("span_id", String(16), primary_key=True),
    Column("parent_span_id", String(16)),
    Column("name", String(1024), nullable=False),
    Column("kind", Integer, nullable=False),
    Column("start_time", BigInteger, nullable=False),
    Column("end_time", BigInteger),
    Column("status_code", Integer, nullable=False),
    Column("status_message", Text),
    Column("attributes", Json, nullable=False),
    Column("events", Json, nullable=False),
    Column("resource", Json, nullable=False),
    Column("scope", String(256)),
    Index("ix_spans_start", "start_time"),
    Index("ix_spans_parent", "trace_id", "parent_span_id"),  # a run's spans, read from its root down
)

eval_runs = Table(
    "eval_runs",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("kind", String(32), nullable=False),  # "dataset" (rows and metrics) or "evalset" (cases and criteria)
    Column("dataset", Text, nullable=False),
    Column("agent", String(512)),
    Column("metrics", Json, nullable=False),
    Column("started_at", BigInteger, nullable=False),
    Column("finished_at", BigInteger, nullable=False),
    Column("row_count", Integer, nullable=False),
    Column("failed_count", Integer),
    Column("summary", Json, nullable=False),
    Index("ix_eval_runs_started", "started_at"),
)

eval_results = Table(
    "eval_results",
    metadata,
    Column("run_id", String(64), ForeignKey("eval_runs.run_id"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("case_id", String(512)),
    Column("invocation_id", String(64)),
    Column("status", String(16)),
    Column("scores", Json, nullable=False),
    Column("row", Json, nullable=False),
    Index("ix_eval_results_invocation", "invocation_id"),
)

judge_cache = Table(
    "judge_cache",
    metadata,
    Column("key", String(64), primary_key=True),  # sha256 of model, temperature, sample, output format, prompt
    Column("model", String(256), nullable=False),
    Column("reply", Text, nullable=False),
    Column("input_tokens", Integer, nullable=False),
    Column("output_tokens", Integer, nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

eval_jobs = Table(
    "eval_jobs",
    metadata,
    Column("invocation_id", String(64), primary_key=True),
    Column("evaluator", String(64), primary_key=True),  # the online evaluator whose job it is (its name)
    Column("status", String(16), nullable=False),  # a JobStatus value (toolpath.store.job_status)
    Column("reason", String(16)),  # a skipped job's SkipReason value
    Column("enqueued_at", BigInteger, nullable=False),
    Column("claimed_by", String(128)),
    Column("claimed_at", BigInteger),
    Column("attempts", Integer, nullable=False),
    Column("finished_at", BigInteger),
    Index("ix_eval_jobs_status", "status", "enqueued_at"),
)

online_results = Table(
    "online_results",
    metadata,
    Column("invocation_id", String(64), primary_key=True),
    Column("evaluator", String(64), primary_key=True),
    Column("evaluator_version", String(64), nullable=False),
    Column("metric", String(256), primary_key=True),
    Column("score", Float),
    Column("label", String(32)),
    Column("explanation", Text),
    Column("worker", String(128), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Index("ix_online_results_created", "created_at"),
)

online_usage = Table(
    "online_usage",
    metadata,
    Column("evaluator", String(64), primary_key=True),
    Column("hour_start", BigInteger, primary_key=True),  # the clock hour counted, UTC
    Column("targets", Integer, nullable=False),  # targets the evaluator took to score in that hour
    Column("tokens", BigInteger, nullable=False),  # judge tokens (input + output) its scoring spent in that hour
)

session_jobs = Table(
    "session_jobs",
    metadata,
    Column("session_id", String(256), primary_key=True),
    Column("evaluator", String(64), primary_key=True),  # a session-target online evaluator (its name)
    Column("status", String(16), nullable=False),  # a JobStatus value; pending until due_at, then claimable
    Column("reason", String(16)),  # a skipped job's SkipReason value
    Column("revision", Integer, nullable=False),  # 1, and one more each time a late turn reopens it once scored
    Column("due_at", BigInteger, nullable=False),  # when the session will have been quiet for idle_seconds
    Column("enqueued_at", BigInteger, nullable=False),
    Column("claimed_by", String(128)),
    Column("claimed_at", BigInteger),
    Column("attempts", Integer, nullable=False),
    Column("finished_at", BigInteger),
    Index("ix_session_jobs_status", "status", "due_at"),
)

session_results = Table(
    "session_results",
    metadata,
    Column("session_id", String(256), primary_key=True),
    Column("evaluator", String(64), primary_key=True),
    Column("revision", Integer, primary_key=True),  # the session_jobs revision scored
    Column("metric", String(256), primary_key=True),
    Column("evaluator_version", String(64), nullable=False),
    Column("score", Float),
    Column("label", String(32)),
    Column("explanation", Text),
    Column("turns", Integer, nullable=False),  # the session's turns when it was scored
    Column("last_invocation_id", String(64)),  # its last turn then: what the result's span is parented to
    Column("worker", String(128), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("superseded_at", BigInteger),  # when a newer revision's results were stored (null: current)
    Index("ix_session_results_created", "created_at"),
)

judge_spend = Table(
    "judge_spend",
    metadata,
    Column("evaluator", String(64), primary_key=True),
    Column("hour_start", BigInteger, primary_key=True),  # the clock hour, UTC
    Column("model", String(256), primary_key=True),
    Column("outcome", String(16), primary_key=True),  # a JudgeOutcome value
    Column("calls", Integer, nullable=False),
    Column("input_tokens", BigInteger, nullable=False),
    Column("output_tokens", BigInteger, nullable=False),
    Column("seconds", Float, nullable=False),  # the calls' time, added up
)

turn_annotations = Table(
    "annotations",
    metadata,
    Column("annotation_id", Integer, primary_key=True, autoincrement=True),
    Column("invocation_id", String(64), nullable=False),  # not a foreign key: pruning a turn never waits on reviews
    Column("author", String(256), nullable=False),
    Column("label", String(16)),  # "pass" or "fail", or null (a score or a comment only)
    Column("score", Float),
    Column("comment", Text),
    Column("created_at", BigInteger, nullable=False),
    Index("ix_annotations_invocation", "invocation_id", "created_at"),
    Index("ix_annotations_label", "label", "invocation_id"),
)

turn_usage = Table(  # a turn's model calls per model and per whether they reported their cost (turn_usage.py)
    "turn_usage",
    metadata,
    Column("invocation_id", String(64), ForeignKey("invocations.invocation_id"), primary_key=True),
    Column("model", String(256), primary_key=True),  # "" for calls that named none
    Column("reported", Integer, primary_key=True),  # 1: cost is what the calls reported; 0: their tokens are priced
    Column("calls", Integer, nullable=False),
    Column("input_tokens", BigInteger, nullable=False),
    Column("output_tokens", BigInteger, nullable=False),
    Column("cost", Float),
)

model_prices = Table(
    "model_prices",
    metadata,
    Column("model", String(256), primary_key=True),
    Column("input_per_million", Float, nullable=False),  # in the user's currency, per million input tokens
    Column("output_per_million", Float, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
)

store_secrets = Table(
    "store_secrets",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("value", String(128), nullable=False),
)
"""Secrets of this store, generated in it at random and shared by every process that opens it; never shown or
exported. ``pseudonym``: the HMAC key of the pseudonyms of redacted identifiers (:mod:`toolpath.redact`)."""
