"""Every environment variable toolpath reads and every default the library and its commands share, named once.

A service command's options are also read as ``TOOLPATH_<OPTION>`` variables and from a TOML file
(:mod:`toolpath.cli.service_config` derives those names from :data:`ENV_PREFIX`); the variables below are the
ones read by name.
"""

from __future__ import annotations

ENV_PREFIX = "TOOLPATH_"
"""Every service option ``--some-name`` is also ``TOOLPATH_SOME_NAME``."""

STORE_ENV = "TOOLPATH_STORE"
"""The store's URL when none is given."""
DEFAULT_STORE_URL = "sqlite:///toolpath.db"
"""The store when neither an URL nor ``$TOOLPATH_STORE`` is given."""

TOKEN_ENV = "TOOLPATH_TOKEN"
"""The bearer token ``toolpath collect`` and ``toolpath ui`` require."""

PSEUDONYM_KEY_ENV = "TOOLPATH_PSEUDONYM_KEY"
"""The key of redaction's pseudonyms in a process with no store."""

JUDGE_MODEL_ENV = "TOOLPATH_JUDGE_MODEL"
JUDGE_CONCURRENCY_ENV = "TOOLPATH_JUDGE_CONCURRENCY"
JUDGE_MAX_REQUESTS_ENV = "TOOLPATH_JUDGE_MAX_REQUESTS"

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
"""The collector's largest request body (decompressed)."""
DEFAULT_MAX_IN_FLIGHT = 4
"""Exports a collector process admits at once; more are answered 503 / UNAVAILABLE."""
DEFAULT_MAX_ATTRIBUTE_LENGTH = 64 * 1024
"""Longer attribute values are cut by the collector, marked."""
DEFAULT_MAX_SPANS_PER_TRACE = 10_000
"""More spans of one trace are dropped by the collector, counted."""
DEFAULT_MAX_TOOL_CALLS = 1_000
"""More tool calls in one invocation are dropped, marked."""
INTERRUPT_GRACE_SECONDS = 10.0
"""After Ctrl-C, how long a batch of agent runs waits for the runs already going (no new one starts)."""
DEFAULT_EXPORT_QUEUE = 32_768
"""Spans ``toolpath.init``'s OTLP exporter queues before it drops (and counts) new ones; ``OTEL_BSP_MAX_QUEUE_SIZE``
overrides it. Large enough for a burst of thousands of agent runs while the collector catches up."""
MAX_WORKERS_PER_CORE = 4
"""``collect --workers`` takes at most this many processes per core (each holds its own interpreter and store
connections: more only compete for the same cores)."""

SPOOL_DRAIN_SECONDS = 30.0
"""How long a stopping collector goes on writing what waits in its spool (what is left stays for the next start)."""

MAX_HEAD_BYTES = 16 * 1024
"""The largest request head (request line and headers) the collector and the UI take; a larger one is a 431."""
